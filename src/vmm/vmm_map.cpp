// Reservations, mappings and access rights.
#include <mutex>
#include <shared_mutex>

#include "observability/stats.h"
#include "vmm/vmm.h"

namespace aclvmm::vmm {
namespace {

Status no_device_opened() {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               "no device has been opened in this process; call aclrtSetDevice first");
}

}  // namespace

void Vmm::release_ref(uint64_t handle) {
  auto& table = physical_;
  {
    std::shared_lock lock(table.mutex());
    auto phys = table.find_locked(handle);
    if (!phys) return;
    --phys->map_ref;
    if (--phys->ref > 0) return;
  }
  // The count reached 0 and cannot rise again (map refuses 0): remove the handle exclusively.
  std::shared_ptr<PhysicalAllocation> doomed;  // destroyed after the lock is dropped
  {
    std::lock_guard lock(table.mutex());
    auto phys = table.find_locked(handle);
    if (phys && phys->ref.load() == 0) doomed = table.remove_locked(handle);
  }
  if (doomed) sharing_.forget_handle(handle);
}

StatusOr<uint64_t> Vmm::reserve(uint64_t size, uint64_t alignment, uint64_t expect, bool no_uc) {
  const ProductRules product = rt_.rules();
  if (no_uc && !product.no_uc_reserve) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "aclrtReserveMemAddressNoUCMemory is not supported on " + *product.soc);
  }
  if (!rt_.svm_ready()) return no_device_opened();
  if (alignment != 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "alignment is reserved and must be 0");
  }
  if (no_uc && expect == 0) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "no-UC reservations are only made at a fixed address: pass expectPtr");
  }
  if (!no_uc && expect != 0 && !product.expect_ptr) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "expectPtr must be NULL on " + *product.soc);
  }
  return space_.reserve(size, expect, no_uc,
                            no_uc ? "aclrtReserveMemAddressNoUCMemory" : "aclrtReserveMemAddress");
}

Status Vmm::release(uint64_t va) {
  if (!rt_.svm_ready()) return no_device_opened();
  return space_.release(va);
}

Status Vmm::map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle, bool no_access) {
  // products.md: over PCIe, A2, A3 and 950 devices have no "no access" mappings; the driver
  // refuses before it looks at the arguments.
  if (no_access) {
    const ProductRules product = rt_.rules();
    if (!product.no_access_mappings) {
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "aclrtMemMapNoAccess is not supported on PCIe-interconnected " + *product.soc +
                       " devices (ACLVMM_INTERCONNECT=pcie)");
    }
  }
  if (offset != 0) return Error(ACL_ERROR_RT_PARAM_INVALID, "offset is reserved and must be 0");
  auto& table = physical_;
  std::shared_ptr<PhysicalAllocation> phys;
  uint32_t link = 0;
  {
    // Shared: mapping threads only count. A count that reached 0 belongs to a handle on its way
    // out of the table (release_ref), which must not come back to life.
    std::shared_lock lock(table.mutex());
    phys = table.find_locked(handle);
    int ref = phys ? phys->ref.load() : 0;
    while (ref > 0 && !phys->ref.compare_exchange_weak(ref, ref + 1)) {
    }
    if (ref <= 0) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "the handle is not a live physical memory handle (freed, forged or foreign)");
    }
    ++phys->map_ref;
    link = phys->link;  // the route in force when the mapping is requested
  }
  Status st = space_.map(va, size, handle, phys, no_access);
  if (!st.ok()) {
    // Another thread may have freed the handle while this map was in flight: the reference
    // taken above is then the last one, and dropping it must release the handle, not leak it.
    release_ref(handle);
    return st;
  }
  count_link_mapping(link);
  return st;
}

Status Vmm::unmap(uint64_t va) {
  ACLVMM_ASSIGN_OR_RETURN(const Mapping m, space_.unmap(va));
  if (ipc_ != nullptr) ipc_->memory_gone(m.va);
  release_ref(m.handle);
  return Status::Ok();
}

Status Vmm::set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes) {
  return space_.set_access(va, size, changes, rt_.rules().quirks);
}

StatusOr<int> Vmm::get_access(uint64_t va, bool host, int device) {
  return space_.get_access(va, host, device);
}

StatusOr<AddressRange> Vmm::address_range(uint64_t ptr) {
  if (managed_.in_window(ptr)) {
    auto r = managed_.range_of(ptr);
    if (!r.ok()) return Error(ACL_ERROR_RT_PARAM_INVALID, r.status().message());
    return r;
  }
  return space_.address_range(ptr);
}

Status Vmm::p2p_map(uint64_t ptr, uint64_t size, int device) {
  ACLVMM_ASSIGN_OR_RETURN(const int owner, space_.grant_peer(ptr, size, device));
  if (owner >= 0) {
    // An aclrtMalloc block (grant_peer changed nothing for it yet): the range must lie inside the
    // block, as it must inside a reservation, and without wrapping around.
    ACLVMM_ASSIGN_OR_RETURN(const AddressRange block, space_.address_range(ptr));
    if (size > block.base + block.size - ptr) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, "the range runs past its allocation");
    }
    if (owner != device) rt_.enable_peer_pair(device, owner);
  }
  return Status::Ok();
}

StatusOr<PointerInfo> Vmm::pointer_info(uint64_t ptr) {
  if (!rt_.svm_ready()) return no_device_opened();
  if (managed_.in_window(ptr)) {
    ACLVMM_RETURN_IF_ERROR(managed_.range_of(ptr).status());
    PointerInfo info;
    info.kind = PointerInfo::kManaged;
    info.device = 0;  // the driver leaves the id 0 for managed memory
    info.page_size = static_cast<uint32_t>(kChunk);
    return info;
  }
  StatusOr<PointerInfo> info = space_.pointer_info(ptr, host_page());
  // Registered process memory is HOST to the device, not UNREGISTERED (runtime-extra.md §5).
  if (info.ok() && info->kind == PointerInfo::kUnregistered && registrations_ != nullptr &&
      registrations_->registered(ptr)) {
    info->kind = PointerInfo::kHost;
  }
  return info;
}

size_t Vmm::host_page() {
  size_t page = host_page_.load(std::memory_order_relaxed);
  if (page == 0) {
    page = rt_.device()->host().page_size();
    host_page_.store(page, std::memory_order_relaxed);
  }
  return page;
}

}  // namespace aclvmm::vmm
