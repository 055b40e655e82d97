// aclrtMemcpy / aclrtMemset and their stream-ordered variants.
#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/batch_copy.h"
#include "runtime/runtime.h"
#include "vmm/memory_ops.h"

using namespace aclvmm;

namespace {

// `kind` by reference: any int may arrive from C, and copying an out-of-range value as the enum is
// undefined behaviour; api::raw reads it as an int (found by tests/fuzz).
aclError check_copy(const char* api, void* dst, size_t destMax, const void* src, size_t count,
                    const aclrtMemcpyKind& kind) {
  ACLVMM_REQUIRE_NOT_NULL(api, dst);
  ACLVMM_REQUIRE_NOT_NULL(api, src);
  if (api::raw(kind) < ACL_MEMCPY_HOST_TO_HOST || api::raw(kind) > ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
    return api::invalid(api, "kind " + std::to_string(api::raw(kind)) +
                                 " is not supported (0..5); the real direction is taken from the addresses");
  }
  if (destMax < count) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "count " + std::to_string(count) + " exceeds destMax " + std::to_string(destMax));
  }
  return ACL_SUCCESS;
}

aclError check_set(const char* api, void* devPtr, size_t maxCount, size_t count) {
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (maxCount < count) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "count " + std::to_string(count) + " exceeds maxCount " + std::to_string(maxCount));
  }
  return ACL_SUCCESS;
}

// aclrtMemcpyBatch[Async]'s ACL-layer checks (runtime-extra.md §7, checks 1 to 4): 0 to go on,
// else the code; *all_zero when every entry is empty (answered at once, with SIZE_MAX).
aclError check_batch(const char* api, void** dsts, size_t* destMaxs, void** srcs, size_t* sizes,
                     size_t numBatches, aclrtMemcpyBatchAttr* attrs, size_t* attrsIndexes,
                     size_t numAttrs, size_t* failIndex, bool* all_zero) {
  *all_zero = false;
  ACLVMM_REQUIRE_NOT_NULL(api, failIndex);
  ACLVMM_REQUIRE_NOT_NULL(api, sizes);
  if (numBatches == 0) return api::invalid(api, "numBatches must not be 0");
  bool any = false;
  for (size_t i = 0; i < numBatches && !any; ++i) any = sizes[i] != 0;
  if (!any) {
    *failIndex = SIZE_MAX;
    *all_zero = true;
    return ACL_SUCCESS;
  }
  ACLVMM_REQUIRE_NOT_NULL(api, dsts);
  ACLVMM_REQUIRE_NOT_NULL(api, destMaxs);
  ACLVMM_REQUIRE_NOT_NULL(api, srcs);
  ACLVMM_REQUIRE_NOT_NULL(api, attrs);
  ACLVMM_REQUIRE_NOT_NULL(api, attrsIndexes);
  for (size_t i = 0; i < numBatches; ++i) {
    if (destMaxs[i] < sizes[i]) {
      return api::invalid(api, "entry " + std::to_string(i) + ": size " + std::to_string(sizes[i]) +
                                   " exceeds destMax " + std::to_string(destMaxs[i]));
    }
  }
  // Only the attributes that can exist are read (numAttrs beyond numBatches is refused next).
  for (size_t k = 0; k < numAttrs && k < numBatches; ++k) {
    for (uint8_t b : attrs[k].rsv) {
      if (b != 0) return api::invalid(api, "attrs[" + std::to_string(k) + "].rsv must be all zero");
    }
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  ACLVMM_API_GUARD("aclrtMemcpy");
  if (count == 0) return ACL_SUCCESS;
  ACLVMM_ENTRY(api);
  if (aclError e = check_copy(api, dst, destMax, src, count, kind)) return e;
  Runtime& rt = Runtime::get();
  return api::finish(api, rt.memory_ops().copy(dst, src, count, rt.accessor()));
  ACLVMM_API_EXIT();
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
  ACLVMM_API_GUARD("aclrtMemcpyAsync");
  if (count == 0) return ACL_SUCCESS;
  ACLVMM_ENTRY(api);
  ACLVMM_FORWARD(aclrtMemcpyAsync, dst, destMax, src, count, kind, stream);
  if (aclError e = check_copy(api, dst, destMax, src, count, kind)) return e;
  Runtime& rt = Runtime::get();
  auto s = rt.resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  Accessor who = rt.accessor_for((*s)->device());
  // A kCopy command, translated by the backend when the stream reaches it (D4); the memory ops
  // (the runtime object outlives every stream) word a failure.
  (*s)->enqueue_copy(rt.memory_ops(), dst, src, count, who, api);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  ACLVMM_API_GUARD("aclrtMemset");
  if (count == 0) return ACL_SUCCESS;
  ACLVMM_ENTRY(api);
  if (aclError e = check_set(api, devPtr, maxCount, count)) return e;
  Runtime& rt = Runtime::get();
  return api::finish(api, rt.memory_ops().fill(devPtr, static_cast<uint8_t>(value), count,
                                               rt.accessor()));
  ACLVMM_API_EXIT();
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
  ACLVMM_API_GUARD("aclrtMemsetAsync");
  if (count == 0) return ACL_SUCCESS;
  ACLVMM_ENTRY(api);
  ACLVMM_FORWARD(aclrtMemsetAsync, devPtr, maxCount, value, count, stream);
  if (aclError e = check_set(api, devPtr, maxCount, count)) return e;
  Runtime& rt = Runtime::get();
  auto s = rt.resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  Accessor who = rt.accessor_for((*s)->device());
  (*s)->enqueue_fill(rt.memory_ops(), devPtr, static_cast<uint8_t>(value), count, who, api);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemcpyBatch(void** dsts, size_t* destMaxs, void** srcs, size_t* sizes,
                          size_t numBatches, aclrtMemcpyBatchAttr* attrs, size_t* attrsIndexes,
                          size_t numAttrs, size_t* failIndex) {
  ACLVMM_API_GUARD("aclrtMemcpyBatch");
  bool all_zero = false;
  if (aclError e = check_batch(api, dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes,
                               numAttrs, failIndex, &all_zero)) {
    return e;
  }
  if (all_zero) return ACL_SUCCESS;  // nothing else is checked, not even the product
  ACLVMM_ENTRY(api);
  BatchCopy batch{dsts, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, false, 0};
  return api::finish(api, memcpy_batch(Runtime::get(), batch, failIndex));
  ACLVMM_API_EXIT();
}

aclError aclrtMemcpyBatchAsync(void** dsts, size_t* destMaxs, void** srcs, size_t* sizes,
                               size_t numBatches, aclrtMemcpyBatchAttr* attrs,
                               size_t* attrsIndexes, size_t numAttrs, size_t* failIndex,
                               aclrtStream stream) {
  ACLVMM_API_GUARD("aclrtMemcpyBatchAsync");
  bool all_zero = false;
  if (aclError e = check_batch(api, dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes,
                               numAttrs, failIndex, &all_zero)) {
    return e;
  }
  if (all_zero) return ACL_SUCCESS;
  ACLVMM_ENTRY(api);
  ACLVMM_FORWARD(aclrtMemcpyBatchAsync, dsts, destMaxs, srcs, sizes, numBatches, attrs,
                 attrsIndexes, numAttrs, failIndex, stream);
  BatchCopy batch{dsts, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, true,
                  api::token(stream)};
  return api::finish(api, memcpy_batch(Runtime::get(), batch, failIndex));
  ACLVMM_API_EXIT();
}

}  // extern "C"
