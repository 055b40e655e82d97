// Managed (unified) memory: allocation, advice, attributes, prefetch.
//
// The ACL-layer and runtime argument checks and the product gating are complete; the migration
// model itself is issue 4 and answers 207000 until then (the UVM sample's "skip" signal).
#include "api/api_common.h"
#include "core/runtime.h"

using namespace aclvmm;

namespace {

aclError gate(const char* api) {
  const Product& p = Runtime::get().config().product;
  if (!p.supports(Feature::kManaged)) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "managed memory is not supported on " + p.soc);
  }
  return ACL_SUCCESS;
}

aclError not_yet(const char* api) {
  return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "managed memory is not available in this build yet");
}

}  // namespace

extern "C" {

aclError aclrtMemAllocManaged(void** ptr, uint64_t size, uint32_t flag) {
  const char* api = "aclrtMemAllocManaged";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (flag != ACL_RT_MEM_ATTACH_GLOBAL) return api::invalid(api, "flag must be ACL_RT_MEM_ATTACH_GLOBAL");
  if (size == 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "size must be greater than 0");
  if (aclError e = gate(api)) return e;
  auto ctx = Runtime::get().current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  return not_yet(api);
}

aclError aclrtMemManagedAdvise(const void* const ptr, uint64_t size, aclrtMemManagedAdviseType advise,
                               aclrtMemManagedLocation location) {
  const char* api = "aclrtMemManagedAdvise";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (static_cast<int>(advise) < 0 || static_cast<int>(advise) > 5) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "advise must be 0..5");
  }
  (void)location;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void* ptr, size_t size,
                                void* data, size_t dataSize) {
  const char* api = "aclrtMemManagedGetAttr";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, data);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (attribute < 1 || attribute > 8) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "attribute must be 1..8");
  (void)dataSize;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute* attributes, size_t numAttributes,
                                 const void* ptr, size_t size, void** data, size_t* dataSizes) {
  const char* api = "aclrtMemManagedGetAttrs";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, attributes);
  ACLVMM_REQUIRE_NOT_NULL(api, data);
  ACLVMM_REQUIRE_NOT_NULL(api, dataSizes);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  for (size_t i = 0; i < numAttributes; ++i) {
    if (attributes[i] < 1 || attributes[i] > 8) {
      return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "attributes[" + std::to_string(i) + "] must be 1..8");
    }
  }
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedPrefetchAsync(const void* ptr, size_t size, aclrtMemManagedLocation location,
                                      uint32_t flags, aclrtStream stream) {
  const char* api = "aclrtMemManagedPrefetchAsync";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  (void)location;
  (void)stream;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedPrefetchBatchAsync(const void** ptrs, size_t* sizes, size_t count,
                                           aclrtMemManagedLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                           size_t numPrefetchLocs, uint64_t flags, aclrtStream stream) {
  const char* api = "aclrtMemManagedPrefetchBatchAsync";
  ACLVMM_ENTRY(api);
  if (!ptrs || !sizes || !prefetchLocs || !prefetchLocIdxs) {
    return api::invalid(api, "ptrs, sizes, prefetchLocs and prefetchLocIdxs must not be NULL");
  }
  if (count == 0 || numPrefetchLocs == 0) return api::invalid(api, "count and numPrefetchLocs must be > 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (count < numPrefetchLocs) return api::invalid(api, "count must be at least numPrefetchLocs");
  (void)stream;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

}  // extern "C"
