// Managed memory (hal.md §3.9, behavior.md §10) over emu's residency model: advice, range
// attributes, prefetch and batch prefetch; halMemAdvise (the old SVM advice, not modelled) and
// halGetCurrentThreadNumaNode.
//
// The HAL checks the range against the UVM window itself (INVALID_VALUE); the rest is the
// kernel's: a location invalid for the advice, pages that are not allocated -> EINVAL, i.e.
// PARA_ERROR (emu reports unallocated pages as EFAULT, which here is PARA_ERROR too: the kernel
// module answers a bad range of a valid request with EINVAL, behavior.md §10 "507899").
// Location types are the driver's (DEVICE 1, HOST 2, HOST_NUMA 3); device ids driver ids.
#include <cerrno>
#include <cstring>
#include <vector>

#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

drvError_t kernel(dev::Result r) {
  return r.errno_value() == EFAULT ? DRV_ERROR_PARA_ERROR : from_result(r);
}

bool in_window(const Process& p, DVdeviceptr ptr, size_t size) {
  const dev::VaRange w = p.layout().managed;
  return size != 0 && w.contains(ptr) && size <= w.base + w.size - ptr;
}

// false: a location the kernel refuses (EINVAL).
bool to_location(const drv_uvm_location& l, dev::Location* out) {
  switch (raw(l.type)) {
    case DRV_UVM_LOCATION_TYPE_DEVICE:
      if (!valid_device(l.id)) return false;
      *out = dev::Location::device(l.id);
      return true;
    case DRV_UVM_LOCATION_TYPE_HOST:
      *out = dev::Location::host();
      return true;
    case DRV_UVM_LOCATION_TYPE_HOST_NUMA:
      if (l.id < 0) return false;
      *out = dev::Location::host_numa(l.id);
      return true;
    default:
      return false;
  }
}

// The state with an opened device and its backend, or the code to return (p.mu held).
drvError_t ready(Process& p, dev::DeviceBackend** b) {
  if (!managed_offered(config().family)) return DRV_ERROR_NOT_SUPPORT;
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  *b = p.backend();
  return *b == nullptr ? DRV_ERROR_INNER_ERR : DRV_ERROR_NONE;
}

drvError_t advise(DVdeviceptr ptr, size_t size, uint32_t advice, drv_uvm_location location) {
  if (size == 0) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  dev::DeviceBackend* b = nullptr;
  if (drvError_t e = ready(p, &b)) return e;
  if (!in_window(p, ptr, size)) return DRV_ERROR_INVALID_VALUE;
  if (advice > UNSET_ACCESS_BY_LOCATION) return DRV_ERROR_PARA_ERROR;
  dev::Location where = dev::Location::host();
  // READ_MOSTLY and its unset take no location.
  if (advice >= PREFER_LOCATION && !to_location(location, &where)) return DRV_ERROR_PARA_ERROR;
  return kernel(b->unified_memory().advise(ptr, size, static_cast<dev::ManagedAdvice>(advice),
                                           where));
}

drvError_t range_attributes(void** data, size_t* sizes, uint32_t* attributes, size_t count,
                            DVdeviceptr ptr, size_t size) {
  if (data == nullptr || sizes == nullptr || attributes == nullptr || count == 0 || size == 0) {
    return DRV_ERROR_INVALID_VALUE;
  }
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  dev::DeviceBackend* b = nullptr;
  if (drvError_t e = ready(p, &b)) return e;
  if (!in_window(p, ptr, size)) return DRV_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t a = attributes[i];
    const bool many = a == MEM_RANGE_ATTR_ACCESS_BY;
    if (a == 0 || a >= MEM_RANGE_ATTR_MAX || data[i] == nullptr || sizes[i] == 0 ||
        (many ? sizes[i] % 4 != 0 : sizes[i] != 4)) {
      return DRV_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    // Into a buffer of our own: the caller's need not be aligned for int32_t.
    std::vector<int32_t> values(sizes[i] / 4);
    if (dev::Result r = b->unified_memory().attribute(
            static_cast<dev::ManagedAttribute>(attributes[i]), ptr, size, values.data(),
            values.size());
        !r.ok()) {
      return kernel(r);
    }
    std::memcpy(data[i], values.data(), sizes[i]);
  }
  return DRV_ERROR_NONE;
}

drvError_t prefetch(DVdeviceptr ptr, size_t size, drv_uvm_location location, unsigned flags) {
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  dev::DeviceBackend* b = nullptr;
  if (drvError_t e = ready(p, &b)) return e;
  if (!in_window(p, ptr, size)) return DRV_ERROR_INVALID_VALUE;
  if (raw(location.type) == DRV_UVM_LOCATION_TYPE_DEVICE && (location.id < 0 || location.id > 64)) {
    return DRV_ERROR_INVALID_VALUE;
  }
  if (flags != 0) return DRV_ERROR_NOT_SUPPORT;
  dev::Location where;
  if (!to_location(location, &where)) return DRV_ERROR_PARA_ERROR;
  return kernel(b->unified_memory().prefetch(ptr, size, where));
}

drvError_t prefetch_batch(DVdeviceptr* ptrs, size_t* sizes, size_t count,
                          drv_uvm_location* locations, size_t* starts, size_t location_count,
                          unsigned long long flags) {
  if (ptrs == nullptr || sizes == nullptr || count == 0 || locations == nullptr ||
      starts == nullptr || location_count == 0 || location_count > count) {
    return DRV_ERROR_INVALID_VALUE;
  }
  if (flags != 0) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  dev::DeviceBackend* b = nullptr;
  if (drvError_t e = ready(p, &b)) return e;
  for (size_t i = 0; i < count; ++i) {
    if (!in_window(p, ptrs[i], sizes[i])) return DRV_ERROR_INVALID_VALUE;
  }
  // Location i covers ranges starts[i] .. starts[i+1]-1 (the last one up to count-1).
  std::vector<dev::Location> where(location_count);
  for (size_t i = 0; i < location_count; ++i) {
    if ((i == 0 ? starts[0] != 0 : starts[i] <= starts[i - 1]) || starts[i] >= count) {
      return DRV_ERROR_INVALID_VALUE;
    }
    if (!to_location(locations[i], &where[i])) return DRV_ERROR_PARA_ERROR;
  }
  for (size_t i = 0; i < location_count; ++i) {
    const size_t end = i + 1 < location_count ? starts[i + 1] : count;
    for (size_t k = starts[i]; k < end; ++k) {
      if (dev::Result r = b->unified_memory().prefetch(ptrs[k], sizes[k], where[i]); !r.ok()) {
        return kernel(r);
      }
    }
  }
  return DRV_ERROR_NONE;
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemAdvise(DVdeviceptr ptr, size_t size, unsigned int advice,
                                     DVdevice dev) {
  // The SVM advice of older runtimes: not modelled (the VMM and UVM paths never call it).
  return entry(Fn::halMemAdvise, [&] {
    (void)ptr, (void)size, (void)advice, (void)dev;
    return DRV_ERROR_NOT_SUPPORT;
  });
}

FAKE_HAL_API drvError_t halMemManagedAdvise(DVdeviceptr ptr, size_t size, uint32_t advice,
                                            struct drv_uvm_location location) {
  return entry(Fn::halMemManagedAdvise,
               [&] { return aclvmm::fakehal::advise(ptr, size, advice, location); });
}

FAKE_HAL_API drvError_t halMemManagedRangeGetAttributes(void** data, size_t* dataSizes,
                                                        uint32_t* attributes, size_t count,
                                                        DVdeviceptr ptr, size_t size) {
  return entry(Fn::halMemManagedRangeGetAttributes, [&] {
    return aclvmm::fakehal::range_attributes(data, dataSizes, attributes, count, ptr, size);
  });
}

FAKE_HAL_API DVresult halMemManagedPrefetch(DVdeviceptr ptr, size_t size,
                                            struct drv_uvm_location location,
                                            unsigned int flags) {
  return entry(Fn::halMemManagedPrefetch,
               [&] { return aclvmm::fakehal::prefetch(ptr, size, location, flags); });
}

FAKE_HAL_API DVresult halMemManagedPrefetchBatch(DVdeviceptr* ptrs, size_t* sizes, size_t count,
                                                 struct drv_uvm_location* locations,
                                                 size_t* locationStarts, size_t locationCount,
                                                 unsigned long long flags) {
  return entry(Fn::halMemManagedPrefetchBatch, [&] {
    return aclvmm::fakehal::prefetch_batch(ptrs, sizes, count, locations, locationStarts,
                                           locationCount, flags);
  });
}

FAKE_HAL_API int halGetCurrentThreadNumaNode(void) {
  using aclvmm::fakehal::Fn;
  if (aclvmm::fakehal::injected(Fn::halGetCurrentThreadNumaNode) != 0) return -1;
  try {
    aclvmm::dev::DeviceBackend* b = aclvmm::fakehal::Process::get().backend();
    return b == nullptr ? -1 : b->host().current_numa_node();
  } catch (...) {
    return -1;
  }
}
