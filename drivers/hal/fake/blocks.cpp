// halMemAlloc / halMemFree: memory that comes with its address (hal.md §3.12, §3.9), and what a
// device's close takes with it (§2).
//
// The flag word is decoded as §4 gives it: bits 10-13 the virtual type (MEM_DEV -> an emu device
// block on the device of bits 0-9, MEM_HOST -> a host-pinned block, MEM_UVM -> emu's managed
// memory; every other type NOT_SUPPORT), bit 14 HBM, bit 17 huge pages, MEM_PAGE_GIANT 1 GiB
// pages, MEM_ADVISE_P2P the P2P memory types; the read-only variants are NOT_SUPPORT. The
// alignment exponent, the module id and the 4G/TS advice change nothing here: blocks are at
// least 2 MiB aligned.
#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

constexpr uint64_t kVirtMask = 0xFULL << MEM_VIRT_BIT;
constexpr uint64_t kReadOnly = MEM_READONLY | MEM_HOST_RW_DEV_RO | MEM_DEV_CP_ONLY;

drvError_t allocate(void** pp, unsigned long long size, unsigned long long flags) {
  if (pp == nullptr || size == 0) return DRV_ERROR_INVALID_VALUE;
  const uint64_t virt = flags & kVirtMask;
  if ((flags & kReadOnly) != 0 || (virt != MEM_DEV && virt != MEM_HOST && virt != MEM_UVM)) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  const bool giant = (flags & MEM_PAGE_GIANT) != 0;
  if (giant && (virt != MEM_DEV || !giant_pages(config().family))) return DRV_ERROR_NOT_SUPPORT;
  if (virt == MEM_UVM && !managed_offered(config().family)) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  if (virt == MEM_UVM) {
    if (size > p.layout().managed.size) return DRV_ERROR_OUT_OF_MEMORY;
    const uint64_t bytes = round_up(size, kHuge);
    uint64_t base = 0;
    if (dev::Result r = b->unified_memory().allocate(bytes, &base); !r.ok()) {
      return from_result(r);
    }
    try {
      p.managed.emplace(base, bytes);
    } catch (...) {
      (void)b->unified_memory().free(base, dev::FreeMode::kNormal);
      throw;
    }
    *pp = reinterpret_cast<void*>(base);
    return DRV_ERROR_NONE;
  }
  dev::BlockRequest request;
  if (virt == MEM_DEV) {
    const uint64_t device = flags & MEM_DEVID_MASK;
    if (!valid_device(static_cast<int64_t>(device)) || !p.mem_open[device]) {
      return DRV_ERROR_INVALID_DEVICE;
    }
    request.kind = dev::BlockKind::kDevice;
    request.device = static_cast<int32_t>(device);
  } else {
    request.kind = dev::BlockKind::kHostPinned;
  }
  request.size = size;
  if (giant) {
    if (size > UINT64_MAX - kGiB) return DRV_ERROR_OUT_OF_MEMORY;
    request.size = round_up(size, kGiB);  // whole 1 GiB pages
    request.page_type = dev::PageType::kGiant;
  } else {
    request.page_type = (flags & MEM_PAGE_HUGE) ? dev::PageType::kHuge : dev::PageType::kNormal;
  }
  const bool hbm = (flags & MEM_TYPE_HBM) != 0, p2p = (flags & MEM_ADVISE_P2P) != 0;
  request.mem_type = hbm ? (p2p ? dev::MemType::kP2pHbm : dev::MemType::kHbm)
                         : (p2p ? dev::MemType::kP2pDdr : dev::MemType::kDdr);
  dev::Block block;
  if (dev::Result r = b->blocks().allocate(request, &block); !r.ok()) return from_result(r);
  BlockRecord record;
  record.base = block.address;
  record.size = request.size;
  record.span = block.span;
  record.page_size = block.page_size;
  record.host = virt == MEM_HOST;
  record.device = request.device;
  try {
    p.blocks.emplace(block.address, record);
  } catch (...) {
    (void)b->blocks().free(block.address);
    throw;
  }
  *pp = reinterpret_cast<void*>(block.address);
  return DRV_ERROR_NONE;
}

drvError_t free_block(void* ptr) {
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  const auto address = reinterpret_cast<uint64_t>(ptr);
  if (auto it = p.blocks.find(address); it != p.blocks.end()) {
    if (dev::Result r = b->blocks().free(address); !r.ok()) return from_result(r);
    p.blocks.erase(it);
    return DRV_ERROR_NONE;
  }
  if (auto it = p.managed.find(address); it != p.managed.end()) {
    if (dev::Result r = b->unified_memory().free(address, dev::FreeMode::kNormal); !r.ok()) {
      return from_result(r);
    }
    p.managed.erase(it);
    return DRV_ERROR_NONE;
  }
  return DRV_ERROR_INVALID_VALUE;  // not the start of an allocation
}

}  // namespace

void recycle_device(Process& p, int32_t device) {
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return;
  for (auto it = p.blocks.begin(); it != p.blocks.end();) {
    if (!it->second.host && it->second.device == device && b->blocks().free(it->first).ok()) {
      it = p.blocks.erase(it);
    } else {
      ++it;
    }
  }
  // The device's VMM records: its mappings go as unmaps would (each drops its handle reference);
  // the reservations stay, free for any owner again once empty.
  for (auto it = p.mappings.begin(); it != p.mappings.end();) {
    drv_mem_handle* h = it->second.handle;
    if (h->side != MEM_DEV_SIDE || h->devid != static_cast<uint32_t>(device) ||
        !b->mmu().unmap(it->second.va, it->second.size).ok()) {
      ++it;
      continue;
    }
    auto r = p.reservations.find(it->second.reservation);
    if (r != p.reservations.end() && --r->second.mappings == 0) r->second.owned = false;
    it = p.mappings.erase(it);
    --h->map_ref;
    drop_reference(p, h);
  }
}

}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemAlloc(void** ptr, unsigned long long size,
                                    unsigned long long flags) {
  return entry(Fn::halMemAlloc, [&] { return aclvmm::fakehal::allocate(ptr, size, flags); });
}

FAKE_HAL_API drvError_t halMemFree(void* ptr) {
  return entry(Fn::halMemFree, [&] { return aclvmm::fakehal::free_block(ptr); });
}
