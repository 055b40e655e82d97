// Host memory registration (runtime-extra.md §5): aclrtHostRegister[V2],
// aclrtHostGetDevicePointer, aclrtHostUnregister. The ACL layer's checks are here; the rest is
// vmm/vmm_host_register.cpp, the records vmm/host_registrations.cpp.
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"

using namespace aclvmm;

extern "C" {

aclError aclrtHostRegister(void* ptr, uint64_t size, aclrtHostRegisterType type, void** devPtr) {
  ACLVMM_API_ENTER("aclrtHostRegister");
  ACLVMM_FORWARD(aclrtHostRegister, ptr, size, type, devPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (size == 0) return api::invalid(api, "size must not be 0");
  const uint32_t bits = static_cast<uint32_t>(api::raw(type));
  constexpr uint32_t kKnown = ACL_HOST_REGISTER_IOMEMORY | ACL_HOST_REGISTER_READONLY;
  if ((bits & ~kKnown) != 0) {
    // The vendor's runtime answers an unknown type "not supported", not "invalid".
    return api::finish(api, Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                  "type " + std::to_string(bits) +
                                      " is not a registration type (0, 4, 8 or 12)"));
  }
  vmm::Vmm::HostRegisterRequest r;
  r.ptr = api::addr(ptr);
  r.size = size;
  r.mapped = true;
  r.reserved = bits != 0;
  if (Status st = Runtime::get().vmm().host_register(r); !st.ok()) return api::finish(api, st);
  *devPtr = ptr;  // the device reaches the pages at their own address (deliberate)
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtHostRegisterV2(void* ptr, uint64_t size, uint32_t flag) {
  ACLVMM_API_ENTER("aclrtHostRegisterV2");
  ACLVMM_FORWARD(aclrtHostRegisterV2, ptr, size, flag);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must not be 0");
  constexpr uint32_t kKnown = ACL_HOST_REG_MAPPED | ACL_HOST_REG_IOMEMORY | ACL_HOST_REG_READONLY |
                              ACL_HOST_REG_PINNED;
  if (flag == 0 || (flag & ~kKnown) != 0) {
    return api::finish(api, Error(ACL_ERROR_RT_PARAM_INVALID,
                                  "flag " + std::to_string(flag) +
                                      " is not a combination of ACL_HOST_REG_MAPPED, "
                                      "_IOMEMORY, _READONLY and _PINNED"));
  }
  vmm::Vmm::HostRegisterRequest r;
  r.ptr = api::addr(ptr);
  r.size = size;
  r.mapped = (flag & ACL_HOST_REG_MAPPED) != 0;
  r.pinned = (flag & ACL_HOST_REG_PINNED) != 0;
  r.reserved = (flag & (ACL_HOST_REG_IOMEMORY | ACL_HOST_REG_READONLY)) != 0;
  return api::finish(api, Runtime::get().vmm().host_register(r));
  ACLVMM_API_EXIT();
}

aclError aclrtHostGetDevicePointer(void* pHost, void** pDevice, uint32_t flag) {
  ACLVMM_API_ENTER("aclrtHostGetDevicePointer");
  ACLVMM_FORWARD(aclrtHostGetDevicePointer, pHost, pDevice, flag);
  ACLVMM_REQUIRE_NOT_NULL(api, pHost);
  ACLVMM_REQUIRE_NOT_NULL(api, pDevice);
  if (flag != 0) return api::invalid(api, "flag must be 0");
  auto device = Runtime::get().vmm().host_device_pointer(api::addr(pHost));
  if (!device.ok()) return api::finish(api, device.status());
  *pDevice = reinterpret_cast<void*>(*device);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtHostUnregister(void* ptr) {
  ACLVMM_API_ENTER("aclrtHostUnregister");
  ACLVMM_FORWARD(aclrtHostUnregister, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  return api::finish(api, Runtime::get().vmm().host_unregister(api::addr(ptr)));
  ACLVMM_API_EXIT();
}

}  // extern "C"
