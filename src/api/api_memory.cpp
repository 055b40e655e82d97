// aclrtMalloc / aclrtMallocHost and their frees.
#include <cstdint>
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"
#include "vmm/vmm.h"

using namespace aclvmm;

namespace {

// `policy` arrives as an int: a C caller may pass any value, and loading an out-of-range value as the
// enum type (even to pass it on) is undefined behaviour (found by tests/fuzz).
aclError device_malloc(const char* api, void** devPtr, size_t size, int policy,
                       bool align32 = false) {
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  // aclrtMallocAlign32 checks that the 32-byte rounding cannot wrap before anything else.
  if (align32 && size > SIZE_MAX - 32) {
    return api::invalid(api, "size " + std::to_string(size) + " is too large to round up to 32");
  }
  auto p = Runtime::get().vmm().device_malloc(size, policy, align32);
  if (!p.ok()) return api::finish(api, p.status());
  *devPtr = reinterpret_cast<void*>(*p);
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  ACLVMM_API_ENTER("aclrtMalloc");
  return device_malloc(api, devPtr, size, api::raw(policy));
  ACLVMM_API_EXIT();
}

// Kept as its own exported symbol: memory savers interpose it (clients.md A22).
aclError aclrtMallocAlign32(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  ACLVMM_API_ENTER("aclrtMallocAlign32");
  return device_malloc(api, devPtr, size, api::raw(policy), /*align32=*/true);
  ACLVMM_API_EXIT();
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  ACLVMM_API_ENTER("aclrtMallocHost");
  ACLVMM_REQUIRE_NOT_NULL(api, hostPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  auto p = Runtime::get().vmm().host_malloc(size);
  if (!p.ok()) return api::finish(api, p.status());
  *hostPtr = reinterpret_cast<void*>(*p);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtFree(void* devPtr) {
  ACLVMM_API_ENTER("aclrtFree");
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  // Beside the vendor runtime, memory aclvmm did not allocate is the vendor's (its memory
  // pools, hal.md §6.2 rule 7).
  if (Runtime::get().beside_vendor() &&
      !Runtime::get().vmm().owns_block(api::addr(devPtr), false)) {
    ACLVMM_FORWARD(aclrtFree, devPtr);
  }
  return api::finish(api, Runtime::get().vmm().device_free(api::addr(devPtr)));
  ACLVMM_API_EXIT();
}

aclError aclrtFreeHost(void* hostPtr) {
  ACLVMM_API_ENTER("aclrtFreeHost");
  ACLVMM_REQUIRE_NOT_NULL(api, hostPtr);
  if (Runtime::get().beside_vendor() &&
      !Runtime::get().vmm().owns_block(api::addr(hostPtr), true)) {
    ACLVMM_FORWARD(aclrtFreeHost, hostPtr);
  }
  return api::finish(api, Runtime::get().vmm().host_free(api::addr(hostPtr)));
  ACLVMM_API_EXIT();
}

}  // extern "C"
