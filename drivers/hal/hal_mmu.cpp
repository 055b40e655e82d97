// HalMmu: halMemMap / halMemUnmap / halMemMapNoAccess (hal.md §3.3), halMemSetAccess /
// halMemGetAccess (§3.4), drvMemPrefetchToDevice for aclrtMemP2PMap and drvMemGetAttribute for
// queries (§3.10).
#include <cstring>
#include <new>
#include <vector>

#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

drv_mem_location location_of(Location l) {
  drv_mem_location out;
  out.id = l.kind == Location::Kind::kHost ? 0 : static_cast<uint32_t>(l.id);
  out.side = static_cast<drv_mem_side>(l.kind);
  return out;
}

}  // namespace

Result HalMmu::map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
                   InitialAccess initial) {
  const HalFunctions& fn = *ctx_.fn;
  if (initial == InitialAccess::kNone) {
    // No public driver has it (hal.md §3.3): 207000 unless a release adds it.
    if (fn.halMemMapNoAccess == nullptr) return missing();
    const Result r =
        driver_result(fn.halMemMapNoAccess(va_ptr(va), size, offset, handle_of(memory), 0));
    if (r.ok()) remember(va, size);
    return r;
  }
  if (fn.halMemMap == nullptr) return missing();
  const Result r = driver_result(fn.halMemMap(va_ptr(va), size, offset, handle_of(memory), 0));
  if (r.ok()) remember(va, size);
  return r;
}

void HalMmu::remember(uint64_t va, uint64_t size) {
  std::lock_guard lock(mu_);
  try {
    mapped_[va] = size;
  } catch (const std::bad_alloc&) {
    // Only the backend's end uses the record: a mapping missing from it is left to the driver,
    // which releases it with the process.
  }
}

void HalMmu::unmap_all() {
  std::map<uint64_t, uint64_t> left;
  {
    std::lock_guard lock(mu_);
    left.swap(mapped_);
  }
  for (const auto& [va, size] : left) (void)unmap(va, size);
}

Result HalMmu::unmap(uint64_t va, uint64_t size) {
  (void)size;
  if (ctx_.fn->halMemUnmap == nullptr) return missing();
  const Result r = driver_result(ctx_.fn->halMemUnmap(va_ptr(va)));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    mapped_.erase(va);
  }
  return r;
}

Result HalMmu::set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                          size_t* applied) {
  *applied = 0;
  const HalFunctions& fn = *ctx_.fn;
  if (fn.halMemSetAccess == nullptr) return missing();
  // One array of 20-byte descriptors (the vendor runtime casts the application's 24-byte ones,
  // which only works for one; hal.md §3.4).
  std::vector<drv_mem_access_desc> desc(count);
  for (size_t i = 0; i < count; ++i) {
    std::memset(&desc[i], 0, sizeof desc[i]);
    desc[i].type = static_cast<drv_mem_access_type>(grants[i].flags);
    desc[i].location = location_of(grants[i].location);
  }
  const Result r = driver_result(fn.halMemSetAccess(va_ptr(va), size, desc.data(), count));
  if (r.ok()) {
    *applied = count;
    return r;
  }
  // The driver applies descriptors in order and rolls nothing back: ask it how far it got, so
  // that the core can restore those (device_mmu.h).
  size_t done = 0;
  while (done < count) {
    Access now = Access::kNone;
    if (!access(va, grants[done].location, &now).ok() || now != grants[done].flags) break;
    ++done;
  }
  *applied = done;
  return r;
}

Result HalMmu::access(uint64_t va, Location location, Access* out) const {
  if (ctx_.fn->halMemGetAccess == nullptr) return missing();
  drv_mem_location loc = location_of(location);
  uint64_t flags = 0;
  const Result r = driver_result(ctx_.fn->halMemGetAccess(va_ptr(va), &loc, &flags));
  if (r.ok()) *out = static_cast<Access>(flags);
  return r;
}

Result HalMmu::grant_peer(uint64_t va, uint64_t size, DeviceIndex device) {
  const HalFunctions& fn = *ctx_.fn;
  // The vendor runtime goes through the physical id and back (hal.md §3.10).
  uint32_t phy = 0, logic = 0;
  if (Result r = driver_result(fn.drvDeviceGetPhyIdByIndex(static_cast<uint32_t>(device), &phy));
      !r.ok()) {
    return r;
  }
  if (Result r = driver_result(fn.drvDeviceGetIndexByPhyId(phy, &logic)); !r.ok()) return r;
  return driver_result(fn.drvMemPrefetchToDevice(va, size, logic));
}

Result HalMmu::query(uint64_t va, AddressInfo* out) const {
  const HalFunctions& fn = *ctx_.fn;
  DVattribute a;
  std::memset(&a, 0, sizeof a);
  if (Result r = driver_result(fn.drvMemGetAttribute(va, &a)); !r.ok()) {
    return r.condition() == Condition::kNotFound ? Result::from_driver(DRV_ERROR_NOT_EXIST) : r;
  }
  AddressInfo info;
  info.page_size = a.pageSize;
  // The first matching bit, in the order the vendor runtime tests them (hal.md §3.10).
  if ((a.memType & DV_MEM_UVM) != 0 && (a.memType & (DV_MEM_LOCK_DEV | DV_MEM_LOCK_HOST)) == 0) {
    info.kind = AddressInfo::Kind::kManaged;
    info.owner = Location::host();
  } else if ((a.memType & (DV_MEM_LOCK_DEV | DV_MEM_LOCK_DEV_DVPP | DV_MEM_SOMA |
                           DV_MEM_SVM_DEVICE | DV_MEM_SVM)) != 0) {
    info.kind = AddressInfo::Kind::kMapping;
    info.owner = Location::device(static_cast<DeviceIndex>(a.devId));
  } else if ((a.memType & (DV_MEM_LOCK_HOST | DV_MEM_SVM_HOST)) != 0) {
    info.kind = AddressInfo::Kind::kHostBlock;
    info.owner = Location::host();
  } else {
    return Result::from_driver(DRV_ERROR_NOT_EXIST);
  }
  if (fn.halMemGetAddressRange != nullptr) {
    DVdeviceptr base = 0;
    size_t size = 0;
    if (fn.halMemGetAddressRange(va, &base, &size) == DRV_ERROR_NONE) info.range = {base, size};
  }
  if (info.range.size != 0) info.offset = va - info.range.base;
  // A mapping names its handle: the driver's retain takes a reference, given back at once. What
  // has none is a block (aclrtMalloc / aclrtMallocHost memory the driver keeps as one record).
  if (info.range.size != 0) {
    drv_mem_handle_t* h = nullptr;
    if (fn.halMemRetainAllocationHandle != nullptr &&
        fn.halMemRetainAllocationHandle(&h, va_ptr(info.range.base)) == DRV_ERROR_NONE) {
      info.kind = AddressInfo::Kind::kMapping;
      info.memory = id_of(h);
      if (fn.halMemRelease != nullptr) (void)fn.halMemRelease(h);
    } else if (info.kind == AddressInfo::Kind::kMapping) {
      info.kind = AddressInfo::Kind::kDeviceBlock;
    }
  }
  *out = info;
  return Result::success();
}

// halHostRegister is not part of the interface hal.md fixes: registering host memory needs the
// vendor runtime (aclrtHostRegister answers 207000 in hal mode).
Result HalMmu::register_host(uint64_t, uint64_t, DeviceIndex, bool) { return missing(); }
Result HalMmu::unregister_host(uint64_t, uint64_t, DeviceIndex, bool) { return missing(); }

}  // namespace aclvmm::dev::hal
