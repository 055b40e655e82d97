// Host memory registration (runtime-extra.md §5): the checks of aclrtHostRegister[V2],
// aclrtHostGetDevicePointer and aclrtHostUnregister from the context on; the records are
// HostRegistrations', the device's part DeviceMmu::register_host.
#include <spdlog/fmt/fmt.h>

#include "vmm/vmm.h"

namespace aclvmm::vmm {
namespace {

constexpr uint64_t kHostPage = 4096;  // what a registration is made of (the spec's 4 KiB)

}  // namespace

StatusOr<int> Vmm::host_register_device() {
  ACLVMM_ASSIGN_OR_RETURN(const int device, rt_.current_device());
  const ProductRules product = rt_.rules();
  if (!product.host_register) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "host memory registration is not supported on " + *product.soc);
  }
  if (registrations_ == nullptr) {
    return Error(kAclInternalError, "this runtime keeps no host registrations");
  }
  return device;
}

Status Vmm::host_register(const HostRegisterRequest& r) {
  ACLVMM_ASSIGN_OR_RETURN(const int device, host_register_device());
  if (r.reserved) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "IOMEMORY and READONLY host registrations are reserved (not supported)");
  }
  if (r.pinned && space_.is_host_block(r.ptr)) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("0x{:x} lies in aclrtMallocHost memory, which is pinned already", r.ptr));
  }
  const uint64_t size = (r.size + kHostPage - 1) / kHostPage * kHostPage;
  if (r.ptr % kHostPage != 0 || size < r.size || r.ptr + size < r.ptr) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 fmt::format("0x{:x} is not 4 KiB aligned, or the range wraps", r.ptr));
  }
  if (space_.overlaps_device_windows(r.ptr, size)) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 fmt::format("[0x{:x}, +{}) reaches into the device, managed or no-UC windows: "
                             "only host memory can be registered",
                             r.ptr, size));
  }
  HostRegistration reg;
  reg.base = r.ptr;
  reg.size = size;
  reg.device = device;
  reg.mapped = r.mapped;
  reg.pinned = r.pinned;
  return registrations_->add(reg);
}

Status Vmm::host_unregister(uint64_t ptr) {
  ACLVMM_ASSIGN_OR_RETURN(const int device, host_register_device());
  return registrations_->remove(ptr, device);
}

StatusOr<uint64_t> Vmm::host_device_pointer(uint64_t ptr) {
  ACLVMM_ASSIGN_OR_RETURN(const int device, host_register_device());
  return registrations_->device_pointer(ptr, device);
}

}  // namespace aclvmm::vmm
