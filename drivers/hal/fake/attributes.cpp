// Pointer queries: drvMemGetAttribute (hal.md §3.10, behavior.md §9) and halMemGetAddressRange
// (§3.7), both answered from the records by locate().
//
// DV_MEM_* bits per kind of memory (the runtime maps the first matching bit to a location):
//   device memory (halMemAlloc MEM_DEV blocks, VMM mappings of device handles) DV_MEM_LOCK_DEV,
//     devId the device (an import: the importing device), pageSize the block's page (2 MiB huge,
//     4 KiB normal, 1 GiB giant) or 2 MiB for mappings;
//   host memory (MEM_HOST blocks, VMM mappings of host handles) DV_MEM_LOCK_HOST, devId 0, the
//     host page size;
//   managed memory DV_MEM_UVM, devId 0 (the driver leaves it), 2 MiB;
//   plain process memory DV_MEM_LOCK_HOST, or DV_MEM_USER_MALLOC once the process asked
//     FEATURE_SVM_GET_USER_MALLOC_ATTR (§2 step 3), devId 0, the host page size.
// Refusals: 0 -> INVALID_VALUE; no device opened -> INVALID_HANDLE; an address in a window that
// nothing holds -> NOT_EXIST; a reservation where nothing is mapped -> INVALID_HANDLE.
#include <unistd.h>

#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {

Where locate(const Process& p, uint64_t va) {
  Where w;
  auto m = p.mappings.upper_bound(va);
  if (m != p.mappings.begin() && va - std::prev(m)->second.va < std::prev(m)->second.size) {
    const Mapping& mm = std::prev(m)->second;
    return Where{Place::kMapping, &mm, nullptr, mm.va, mm.size};
  }
  auto r = p.reservations.upper_bound(va);
  if (r != p.reservations.begin() && va - std::prev(r)->second.base < std::prev(r)->second.size) {
    w.place = Place::kReservedUnmapped;
    return w;
  }
  auto b = p.blocks.upper_bound(va);
  if (b != p.blocks.begin()) {
    const BlockRecord& block = std::prev(b)->second;
    // The driver's node: the page-rounded size; an allocation of whole 1 GiB heaps reports the
    // heap extent (behavior.md §9). Past it, inside the block's span, nothing is allocated.
    const uint64_t extent =
        block.span >= kGiB ? block.span : round_up(block.size, block.page_size);
    if (va - block.base < extent) return Where{Place::kBlock, nullptr, &block, block.base, extent};
    if (va - block.base < block.span) {
      w.place = Place::kUnallocated;
      return w;
    }
  }
  auto u = p.managed.upper_bound(va);
  if (u != p.managed.begin() && va - std::prev(u)->first < std::prev(u)->second) {
    return Where{Place::kManaged, nullptr, nullptr, std::prev(u)->first, std::prev(u)->second};
  }
  // The windows the HAL maps at the first open. The dynamic (no-UC) range is not one of them:
  // only its reservations are the driver's, the rest is the process's (an ASan heap lives there).
  const dev::WindowLayout& l = p.layout();
  if (l.host_pinned.contains(va) || l.managed.contains(va) || l.device.contains(va)) {
    w.place = Place::kUnallocated;
  }
  return w;
}

namespace {

drvError_t get_attribute(DVdeviceptr ptr, DVattribute* attr) {
  if (ptr == 0 || attr == nullptr) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  const auto host_page = static_cast<UINT32>(sysconf(_SC_PAGESIZE));
  const Where w = locate(p, ptr);
  UINT32 type = 0, device = 0, page = host_page;
  switch (w.place) {
    case Place::kUnallocated: return DRV_ERROR_NOT_EXIST;
    case Place::kReservedUnmapped: return DRV_ERROR_INVALID_HANDLE;
    case Place::kMapping:
      if (w.mapping->handle->side == MEM_DEV_SIDE) {
        type = DV_MEM_LOCK_DEV;
        device = w.mapping->handle->devid;
        page = static_cast<UINT32>(kHuge);
      } else {
        type = DV_MEM_LOCK_HOST;
      }
      break;
    case Place::kBlock:
      if (w.block->host) {
        type = DV_MEM_LOCK_HOST;
      } else {
        type = DV_MEM_LOCK_DEV;
        device = static_cast<UINT32>(w.block->device);
        page = w.block->page_size;
      }
      break;
    case Place::kManaged:
      type = DV_MEM_UVM;
      page = static_cast<UINT32>(kHuge);
      break;
    case Place::kPlain:
      type = p.user_malloc_attr.load(std::memory_order_relaxed) ? DV_MEM_USER_MALLOC
                                                                : DV_MEM_LOCK_HOST;
      break;
  }
  attr->memType = type;
  attr->devId = device;
  attr->pageSize = page;
  return DRV_ERROR_NONE;
}

drvError_t address_range(DVdeviceptr va, DVdeviceptr* base, size_t* size) {
  if (base == nullptr && size == nullptr) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  const Where w = locate(p, va);
  switch (w.place) {
    case Place::kMapping:
    case Place::kBlock:
    case Place::kManaged:
      if (base != nullptr) *base = w.base;
      if (size != nullptr) *size = w.size;
      return DRV_ERROR_NONE;
    default:
      return DRV_ERROR_INVALID_VALUE;  // no allocation contains it (start == 0 in the driver)
  }
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::Fn;

FAKE_HAL_API DVresult drvMemGetAttribute(DVdeviceptr ptr, struct DVattribute* attr) {
  return entry(Fn::drvMemGetAttribute, [&] { return aclvmm::fakehal::get_attribute(ptr, attr); });
}

FAKE_HAL_API drvError_t halMemGetAddressRange(DVdeviceptr va, DVdeviceptr* base, size_t* size) {
  return entry(Fn::halMemGetAddressRange,
               [&] { return aclvmm::fakehal::address_range(va, base, size); });
}
