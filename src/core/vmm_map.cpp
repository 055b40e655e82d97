// Reservations, mappings and access rights.
#include <mutex>

#include "core/runtime.h"
#include "core/stats.h"
#include "core/vmm.h"

namespace aclvmm::vmm {
namespace {

Status no_device_opened() {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               "no device has been opened in this process; call aclrtSetDevice first");
}

}  // namespace

StatusOr<uint64_t> reserve(uint64_t size, uint64_t alignment, uint64_t expect, bool no_uc) {
  Runtime& rt = Runtime::get();
  const Product& product = rt.config().product;
  if (no_uc && !product.supports(Feature::kNoUcReserve)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "aclrtReserveMemAddressNoUCMemory is not supported on " + product.soc);
  }
  if (!rt.svm_ready()) return no_device_opened();
  if (alignment != 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "alignment is reserved and must be 0");
  }
  if (no_uc && expect == 0) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "no-UC reservations are only made at a fixed address: pass expectPtr");
  }
  if (!no_uc && expect != 0 && !product.supports(Feature::kExpectPtr)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "expectPtr must be NULL on " + product.soc);
  }
  return rt.space().reserve(size, expect, no_uc,
                            no_uc ? "aclrtReserveMemAddressNoUCMemory" : "aclrtReserveMemAddress");
}

Status release(uint64_t va) {
  Runtime& rt = Runtime::get();
  if (!rt.svm_ready()) return no_device_opened();
  return rt.space().release(va);
}

Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle, bool no_access) {
  Runtime& rt = Runtime::get();
  const Config& cfg = rt.config();
  // products.md: over PCIe, A2, A3 and 950 devices have no "no access" mappings; the driver
  // refuses before it looks at the arguments.
  if (no_access && cfg.interconnect == Interconnect::kPcie &&
      !cfg.product.supports(Feature::kNoAccessOverPcie)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "aclrtMemMapNoAccess is not supported on PCIe-interconnected " + cfg.product.soc +
                     " devices (ACLVMM_INTERCONNECT=pcie)");
  }
  if (offset != 0) return Error(ACL_ERROR_RT_PARAM_INVALID, "offset is reserved and must be 0");
  auto& table = rt.physical();
  std::shared_ptr<PhysicalAllocation> phys;
  uint32_t link = 0;
  {
    std::lock_guard<std::mutex> lock(table.mutex());
    phys = table.find_locked(handle);
    if (!phys) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "the handle is not a live physical memory handle (freed, forged or foreign)");
    }
    ++phys->ref;
    ++phys->map_ref;
    link = phys->link;  // the route in force when the mapping is requested
  }
  Status st = rt.space().map(va, size, handle, phys, no_access);
  if (!st.ok()) {
    std::shared_ptr<PhysicalAllocation> doomed;
    {
      std::lock_guard<std::mutex> lock(table.mutex());
      --phys->map_ref;
      // Another thread may have freed the handle while this map was in flight: the reference
      // taken above is then the last one, and dropping it must release the handle, not leak it.
      if (--phys->ref == 0) doomed = table.remove_locked(handle);
    }
    if (doomed) rt.sharing().forget_handle(handle);
    return st;
  }
  count_link_mapping(link);
  return st;
}

Status unmap(uint64_t va) {
  Runtime& rt = Runtime::get();
  auto m = rt.space().unmap(va);
  if (!m.ok()) return m.status();
  auto& table = rt.physical();
  std::shared_ptr<PhysicalAllocation> doomed;
  {
    std::lock_guard<std::mutex> lock(table.mutex());
    auto phys = table.find_locked(m->handle);
    if (phys) {
      --phys->map_ref;
      if (--phys->ref == 0) doomed = table.remove_locked(m->handle);
    }
  }
  if (doomed) rt.sharing().forget_handle(m->handle);
  return Status::Ok();
}

Status set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes) {
  Runtime& rt = Runtime::get();
  return rt.space().set_access(va, size, changes, rt.quirks());
}

StatusOr<int> get_access(uint64_t va, bool host, int device) {
  return Runtime::get().space().get_access(va, host, device);
}

StatusOr<AddressRange> address_range(uint64_t ptr) {
  Runtime& rt = Runtime::get();
  if (rt.managed().in_window(ptr)) {
    auto r = rt.managed().range_of(ptr);
    if (!r.ok()) return Error(ACL_ERROR_RT_PARAM_INVALID, r.status().message());
    return r;
  }
  return rt.space().address_range(ptr);
}

Status p2p_map(uint64_t ptr, uint64_t size, int device) {
  Runtime& rt = Runtime::get();
  auto owner = rt.space().grant_peer(ptr, size, device);
  if (!owner.ok()) return owner.status();
  if (*owner >= 0 && *owner != device) rt.enable_peer_pair(device, *owner);
  return Status::Ok();
}

StatusOr<PointerInfo> pointer_info(uint64_t ptr) {
  Runtime& rt = Runtime::get();
  if (!rt.svm_ready()) return no_device_opened();
  if (rt.managed().in_window(ptr)) {
    auto r = rt.managed().range_of(ptr);
    if (!r.ok()) return r.status();
    PointerInfo info;
    info.kind = PointerInfo::kManaged;
    info.device = 0;  // the driver leaves the id 0 for managed memory
    info.page_size = static_cast<uint32_t>(kChunk);
    return info;
  }
  return rt.space().pointer_info(ptr, rt.backend().host_page_size());
}

}  // namespace aclvmm::vmm
