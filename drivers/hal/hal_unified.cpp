// HalUnified: managed memory through halMemAlloc(MEM_UVM | MEM_PAGE_HUGE) and the
// halMemManaged* calls (hal.md §3.9; SVM v2 of the HEAD driver only: elsewhere they are missing
// and the calls answer 207000). Residency is the driver's: it tracks and migrates.
#include <cstring>
#include <new>

#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

// The core hands converted locations (driver ids; HOST_NUMA_CURRENT already resolved); the
// driver's location types are 1 device, 2 host, 3 host NUMA (0 invalid).
drv_uvm_location uvm_location(Location l) {
  drv_uvm_location out;
  switch (l.kind) {
    case Location::Kind::kDevice: out.type = DRV_UVM_LOCATION_TYPE_DEVICE; break;
    case Location::Kind::kHost: out.type = DRV_UVM_LOCATION_TYPE_HOST; break;
    case Location::Kind::kHostNuma: out.type = DRV_UVM_LOCATION_TYPE_HOST_NUMA; break;
    default: out.type = DRV_UVM_LOCATION_TYPE_INVALID; break;
  }
  out.id = l.kind == Location::Kind::kHost ? 0 : l.id;
  return out;
}

}  // namespace

Result HalUnified::allocate(uint64_t size, uint64_t* address) {
  void* p = nullptr;
  const Result r = driver_result(ctx_.fn->halMemAlloc(&p, size, MEM_UVM | MEM_PAGE_HUGE));
  if (!r.ok()) return r;
  *address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu_);
  try {
    ranges_[*address] = size;
  } catch (const std::bad_alloc&) {
    (void)ctx_.fn->halMemFree(p);  // nothing allocated that the backend could not give back
    return Result::from_driver(DRV_ERROR_OUT_OF_MEMORY);
  }
  return r;
}

Result HalUnified::free(uint64_t address, FreeMode mode) {
  (void)mode;
  const Result r = driver_result(ctx_.fn->halMemFree(va_ptr(address)));
  if (r.ok()) {
    std::lock_guard lock(mu_);
    ranges_.erase(address);
  }
  return r;
}

void HalUnified::free_all() {
  std::map<uint64_t, uint64_t> left;
  {
    std::lock_guard lock(mu_);
    left.swap(ranges_);
  }
  for (const auto& [address, size] : left) (void)ctx_.fn->halMemFree(va_ptr(address));
}

Result HalUnified::advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) {
  if (ctx_.fn->halMemManagedAdvise == nullptr) return missing();
  return driver_result(ctx_.fn->halMemManagedAdvise(address, size, static_cast<uint32_t>(advice),
                                                    uvm_location(where)));
}

Result HalUnified::prefetch(uint64_t address, uint64_t size, Location target) {
  if (ctx_.fn->halMemManagedPrefetch == nullptr) return missing();
  return driver_result(ctx_.fn->halMemManagedPrefetch(address, size, uvm_location(target), 0));
}

Result HalUnified::attribute(ManagedAttribute attribute, uint64_t address, uint64_t size,
                             int32_t* values, size_t slots) {
  if (ctx_.fn->halMemManagedRangeGetAttributes == nullptr) return missing();
  void* data = values;
  size_t data_size = slots * sizeof(int32_t);
  uint32_t attr = static_cast<uint32_t>(attribute);
  return driver_result(
      ctx_.fn->halMemManagedRangeGetAttributes(&data, &data_size, &attr, 1, address, size));
}

ManagedTracking HalUnified::tracking() const {
  // The driver migrates pages and tracks CPU writes itself when it offers managed memory.
  const bool offered = ctx_.fn->halMemManagedPrefetch != nullptr;
  return ManagedTracking{offered, offered};
}

}  // namespace aclvmm::dev::hal
