// Access control: halMemSetAccess / halMemGetAccess (hal.md §3.4, §7.1 #3) and
// drvMemPrefetchToDevice, the P2P map (§3.10).
//
// Each mapping keeps what SetAccess recorded per location (type and the size of the call). The
// owner's READWRITE is implicit and not a record, so setting it again is no "repeat".
// Descriptors are applied one by one, each to emu's page table, and a failure stops the loop
// without undoing the ones before (the HAL does not roll back).
#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

// The mapping containing va (p.mu held), or nullptr.
Mapping* mapping_at(Process& p, uint64_t va) {
  auto it = p.mappings.upper_bound(va);
  if (it == p.mappings.begin()) return nullptr;
  --it;
  return va - it->second.va < it->second.size ? &it->second : nullptr;
}

// The location checks both functions make (user space): INVALID_VALUE.
bool valid_location(const drv_mem_location& l) {
  if (raw(l.side) == MEM_HOST_SIDE) return l.id == 0;
  return raw(l.side) == MEM_DEV_SIDE && l.id < kMaxDeviceIds;
}

// Only for a valid location: its side is then HOST or DEVICE.
bool host(const drv_mem_location& l) { return raw(l.side) == MEM_HOST_SIDE; }
uint32_t key_of(const drv_mem_location& l) { return host(l) ? kHostKey : l.id; }

drvError_t set_access(void* va, size_t size, const drv_mem_access_desc* desc, size_t count) {
  if (va == nullptr || desc == nullptr || count == 0) return DRV_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t t = raw(desc[i].type);
    if (t == MEM_ACCESS_TYPE_NONE || t == MEM_ACCESS_TYPE_READ) return DRV_ERROR_NOT_SUPPORT;
    if (t != MEM_ACCESS_TYPE_READWRITE || !valid_location(desc[i].location)) {
      return DRV_ERROR_INVALID_VALUE;
    }
  }
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  const auto start = reinterpret_cast<uint64_t>(va);
  for (size_t i = 0; i < count; ++i) {
    const drv_mem_location& loc = desc[i].location;
    Mapping* m = mapping_at(p, start);  // the kernel's access query
    if (m == nullptr) return DRV_ERROR_PARA_ERROR;
    auto set = m->access.find(key_of(loc));
    if (set != m->access.end()) {
      if (set->second.type == raw(desc[i].type) && set->second.size == size) continue;
      return DRV_ERROR_BUSY;
    }
    const drv_mem_handle& h = *m->handle;
    const bool device_memory = h.side == MEM_DEV_SIDE;
    if (device_memory && !h.imported && !host(loc) && loc.id == h.devid) continue;
    if (!device_memory && host(loc)) return DRV_ERROR_NOT_SUPPORT;
    // The kernel's set: exactly one mapping, a device that exists.
    if (start != m->va || size != m->size) return DRV_ERROR_PARA_ERROR;
    if (!host(loc) && !valid_device(loc.id)) return DRV_ERROR_PARA_ERROR;
    const dev::AccessGrant grant{host(loc) ? dev::Location::host()
                                     : dev::Location::device(static_cast<int32_t>(loc.id)),
                                 dev::Access::kReadWrite};
    size_t applied = 0;
    if (dev::Result r = b->mmu().set_access(m->va, m->size, &grant, 1, &applied); !r.ok()) {
      return from_result(r);
    }
    m->access[key_of(loc)] = AccessSet{raw(desc[i].type), size};
  }
  return DRV_ERROR_NONE;
}

drvError_t get_access(void* va, const drv_mem_location* location, uint64_t* flags) {
  if (va == nullptr || location == nullptr || flags == nullptr || !valid_location(*location)) {
    return DRV_ERROR_INVALID_VALUE;
  }
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  const Mapping* m = mapping_at(p, reinterpret_cast<uint64_t>(va));
  if (m == nullptr) return DRV_ERROR_PARA_ERROR;  // the kernel's query of one byte
  const drv_mem_handle& h = *m->handle;
  // The owner reads READWRITE: the device of device memory, the HOST of host memory.
  const bool owner =
      h.side == MEM_DEV_SIDE ? !host(*location) && location->id == h.devid : host(*location);
  if (owner) {
    *flags = MEM_ACCESS_TYPE_READWRITE;
    return DRV_ERROR_NONE;
  }
  auto set = m->access.find(key_of(*location));
  *flags = set == m->access.end() ? 0 : set->second.type;
  return DRV_ERROR_NONE;
}

drvError_t prefetch_to_device(DVdeviceptr ptr, size_t size, DVdevice device) {
  if (device >= 66) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  const dev::VaRange svm = p.layout().device;
  if (size == 0 || !svm.contains(ptr) || size > svm.base + svm.size - ptr) {
    return DRV_ERROR_INVALID_VALUE;
  }
  if (!valid_device(device)) return DRV_ERROR_PARA_ERROR;
  // No device memory mapped in the range: the kernel's EINVAL.
  return from_result(b->mmu().grant_peer(ptr, size, static_cast<int32_t>(device)));
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemSetAccess(void* va, size_t size, struct drv_mem_access_desc* desc,
                                        size_t count) {
  return entry(Fn::halMemSetAccess,
               [&] { return aclvmm::fakehal::set_access(va, size, desc, count); });
}

FAKE_HAL_API drvError_t halMemGetAccess(void* va, struct drv_mem_location* location,
                                        uint64_t* flags) {
  return entry(Fn::halMemGetAccess,
               [&] { return aclvmm::fakehal::get_access(va, location, flags); });
}

FAKE_HAL_API DVresult drvMemPrefetchToDevice(DVdeviceptr ptr, size_t size, DVdevice dev) {
  return entry(Fn::drvMemPrefetchToDevice,
               [&] { return aclvmm::fakehal::prefetch_to_device(ptr, size, dev); });
}
