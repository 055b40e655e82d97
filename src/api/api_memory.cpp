// aclrtMalloc / aclrtMallocHost and their frees.
#include "api/api_common.h"
#include "core/vmm.h"

using namespace aclvmm;

namespace {

// `policy` arrives as an int: a C caller may pass any value, and loading an out-of-range value as the
// enum type (even to pass it on) is undefined behaviour (found by tests/fuzz).
aclError device_malloc(const char* api, void** devPtr, size_t size, int policy) {
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  auto p = vmm::device_malloc(size, policy);
  if (!p.ok()) return api::finish(api, p.status());
  *devPtr = reinterpret_cast<void*>(*p);
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return device_malloc("aclrtMalloc", devPtr, size, api::raw(policy));
}

// Kept as its own exported symbol: memory savers interpose it (clients.md A22).
aclError aclrtMallocAlign32(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return device_malloc("aclrtMallocAlign32", devPtr, size, api::raw(policy));
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  const char* api = "aclrtMallocHost";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, hostPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  auto p = vmm::host_malloc(size);
  if (!p.ok()) return api::finish(api, p.status());
  *hostPtr = reinterpret_cast<void*>(*p);
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  const char* api = "aclrtFree";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  return api::finish(api, vmm::device_free(api::addr(devPtr)));
}

aclError aclrtFreeHost(void* hostPtr) {
  const char* api = "aclrtFreeHost";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, hostPtr);
  return api::finish(api, vmm::host_free(api::addr(hostPtr)));
}

}  // extern "C"
