// Reservations and mappings: halMemAddressReserve / halMemAddressFree (hal.md §3.2, §7.1 #8),
// halMemMap / halMemUnmap (§3.3), halMemRetainAllocationHandle (§3.7).
//
// The checks are the HAL's (user space: INVALID_VALUE) and then the kernel module's (errnos:
// EINVAL -> PARA_ERROR, EADDRINUSE -> IOCRL_FAIL, ENOMEM -> OUT_OF_MEMORY), made here on the
// records before emu is asked: emu's windows and page table then only place and program.
#include <cerrno>

#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

constexpr uint64_t kLargeReservation = 512 * kMiB;  // above it: whole GiB, GiB aligned
constexpr uint64_t kDynamicStart = 0x180000000000ull;  // no-UC reservations (behavior.md §4)

uint64_t next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

drvError_t reserve(void** va, size_t size, size_t alignment, void* fixed_va, uint64_t flags) {
  if (va == nullptr || size == 0 || alignment != 0) return DRV_ERROR_INVALID_VALUE;
  const auto fixed = reinterpret_cast<uint64_t>(fixed_va);
  if (fixed != 0) {
    if (size > kLargeReservation ? fixed % kGiB != 0
                                 : fixed % kHuge != 0 ||
                                       (size > kHuge && fixed % next_pow2(size) != 0)) {
      return DRV_ERROR_INVALID_VALUE;
    }
  }
  if ((flags & 0xFF) >= MEM_MAX_PAGE_TYPE) return DRV_ERROR_INVALID_VALUE;
  const uint64_t kinds = flags & (MEM_RSV_TYPE_DEVICE_SHARE | MEM_RSV_TYPE_REMOTE_MAP);
  if (kinds != 0 && fixed == 0) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  // Larger than the device window: no heap can hold it.
  if (size > p.layout().device.size) return DRV_ERROR_OUT_OF_MEMORY;
  uint64_t span = round_up(size, kHuge);
  if (span > kLargeReservation) span = round_up(span, kGiB);
  const bool no_uc = (flags & MEM_RSV_TYPE_REMOTE_MAP) != 0;
  if (no_uc && (span % kGiB != 0 || fixed % kGiB != 0 || fixed < kDynamicStart)) {
    return DRV_ERROR_INVALID_VALUE;
  }
  dev::ReserveRequest request;
  request.kind = no_uc ? dev::ReserveKind::kNoUc : dev::ReserveKind::kDevice;
  request.size = span;
  // §7.1 #8: up to 512 MiB the base is aligned to the next power of two, above it to 1 GiB.
  request.alignment = span > kLargeReservation ? kGiB : next_pow2(span);
  request.fixed_address = fixed;
  request.page_type = (flags & 0xFF) == 0 ? dev::PageType::kNormal : dev::PageType::kHuge;
  Reservation record;
  record.size = span;
  record.no_uc = no_uc;
  uint64_t base = 0;
  if (dev::Result r = b->windows().reserve(request, &base); !r.ok()) {
    // Outside the dynamic window: the HAL's own range check.
    return no_uc && r.condition() == dev::Condition::kInvalidArgument ? DRV_ERROR_INVALID_VALUE
                                                                       : from_result(r);
  }
  record.base = base;
  try {
    p.reservations.emplace(base, record);
  } catch (...) {
    (void)b->windows().release(base, span);
    throw;
  }
  *va = reinterpret_cast<void*>(base);
  return DRV_ERROR_NONE;
}

drvError_t free_reservation(void* va) {
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  auto it = p.reservations.find(reinterpret_cast<uint64_t>(va));
  // Not a reservation's start (interior, a block, released already, nothing): §3.2.
  if (it == p.reservations.end()) return DRV_ERROR_INVALID_VALUE;
  // v2 does not check this (§3.2); the fake answers as v3 does and as aclvmm decides
  // (behavior.md §2), so that emu's page table never keeps mappings in a range given back.
  if (it->second.mappings != 0) return DRV_ERROR_BUSY;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  if (dev::Result r = b->windows().release(it->second.base, it->second.size); !r.ok()) {
    return from_result(r);
  }
  p.reservations.erase(it);
  return DRV_ERROR_NONE;
}

// The reservation containing va, or nullptr (p.mu held).
Reservation* reservation_at(Process& p, uint64_t va) {
  auto it = p.reservations.upper_bound(va);
  if (it == p.reservations.begin()) return nullptr;
  --it;
  return va - it->second.base < it->second.size ? &it->second : nullptr;
}

bool overlaps_mapping(const Process& p, uint64_t va, uint64_t size) {
  auto it = p.mappings.lower_bound(va + size);
  if (it == p.mappings.begin()) return false;
  --it;
  return it->second.va + it->second.size > va;
}

drvError_t map(void* va, size_t size, size_t offset, drv_mem_handle* handle, uint64_t flags) {
  if (va == nullptr || size == 0 || offset != 0 || flags != 0) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  // A released handle reads ref 0 (§7.1 #2); every other defect is INVALID_VALUE.
  if (drvError_t e = check_handle(p, handle, DRV_ERROR_NO_RESOURCES)) return e;
  const auto start = reinterpret_cast<uint64_t>(va);
  // The kernel's checks (behavior.md §3).
  Reservation* r = reservation_at(p, start);
  const uint64_t granule = handle->pg_type == MEM_GIANT_PAGE_TYPE ? kGiB : kHuge;
  const bool whole_small = handle->pg_type == MEM_NORMAL_PAGE_TYPE && size == handle->size;
  if (r == nullptr || start % granule != 0 || (size % granule != 0 && !whole_small) ||
      size > r->base + r->size - start) {
    return DRV_ERROR_PARA_ERROR;
  }
  if (overlaps_mapping(p, start, size)) return DRV_ERROR_IOCRL_FAIL;  // EADDRINUSE
  if (r->owned && (r->owner_side != handle->side || r->owner_devid != handle->devid)) {
    return DRV_ERROR_PARA_ERROR;  // another device's (or the host's) reservation now
  }
  if (size > handle->size) return DRV_ERROR_OUT_OF_MEMORY;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  Mapping m;
  m.va = start;
  m.size = size;
  m.handle = handle;
  m.reservation = r->base;
  auto node = p.mappings.emplace(start, m);  // before emu: a failed insert changes nothing
  if (dev::Result res = b->mmu().map(start, size, handle->memory, 0,
                                     dev::InitialAccess::kOwnerReadWrite);
      !res.ok()) {
    p.mappings.erase(node.first);
    return from_result(res);
  }
  ++r->mappings;
  if (!r->owned) {
    r->owned = true;
    r->owner_side = handle->side;
    r->owner_devid = handle->devid;
  }
  ++handle->ref;
  ++handle->map_ref;
  return DRV_ERROR_NONE;
}

drvError_t unmap(void* va) {
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  // Found as halMemRetainAllocationHandle would find it; any miss is PARA_ERROR (§3.3).
  auto it = p.mappings.find(reinterpret_cast<uint64_t>(va));
  if (va == nullptr || it == p.mappings.end()) return DRV_ERROR_PARA_ERROR;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  if (dev::Result r = b->mmu().unmap(it->second.va, it->second.size); !r.ok()) {
    return from_result(r);  // EBUSY while queued work uses it: 13, the mapping stays
  }
  drv_mem_handle* h = it->second.handle;
  if (Reservation* r = reservation_at(p, it->second.va)) --r->mappings;
  p.mappings.erase(it);
  // map_ref - 1, and the map's reference dropped as halMemRelease drops one: one drop in all.
  --h->map_ref;
  drop_reference(p, h);
  return DRV_ERROR_NONE;
}

drvError_t retain(drv_mem_handle** handle, void* va) {
  if (handle == nullptr || va == nullptr) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  const auto address = reinterpret_cast<uint64_t>(va);
  // drvMemGetAttribute first (§3.7), then the record keyed by the exact start.
  switch (locate(p, address).place) {
    case Place::kUnallocated: return DRV_ERROR_NOT_EXIST;
    case Place::kReservedUnmapped: return DRV_ERROR_INVALID_HANDLE;
    default: break;
  }
  auto it = p.mappings.find(address);
  if (it == p.mappings.end()) return DRV_ERROR_NOT_EXIST;
  ++it->second.handle->ref;
  *handle = it->second.handle;
  return DRV_ERROR_NONE;
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemAddressReserve(void** va, size_t size, size_t alignment,
                                             void* fixedVa, uint64_t flags) {
  return entry(Fn::halMemAddressReserve, [&] {
    return aclvmm::fakehal::reserve(va, size, alignment, fixedVa, flags);
  });
}

FAKE_HAL_API drvError_t halMemAddressFree(void* va) {
  return entry(Fn::halMemAddressFree, [&] { return aclvmm::fakehal::free_reservation(va); });
}

FAKE_HAL_API drvError_t halMemMap(void* va, size_t size, size_t offset, drv_mem_handle_t* handle,
                                  uint64_t flags) {
  return entry(Fn::halMemMap,
               [&] { return aclvmm::fakehal::map(va, size, offset, handle, flags); });
}

FAKE_HAL_API drvError_t halMemUnmap(void* va) {
  return entry(Fn::halMemUnmap, [&] { return aclvmm::fakehal::unmap(va); });
}

FAKE_HAL_API drvError_t halMemRetainAllocationHandle(drv_mem_handle_t** handle, void* va) {
  return entry(Fn::halMemRetainAllocationHandle,
               [&] { return aclvmm::fakehal::retain(handle, va); });
}
