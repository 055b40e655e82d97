#include "vmm/address_space.h"

#include <cerrno>
#include <mutex>
#include <new>

#include "base/hex.h"
#include "observability/log.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool is_reservation(const Region& r) {
  return r.kind == RegionKind::kReservation || r.kind == RegionKind::kNoUcReservation;
}

}  // namespace

void AddressSpace::attach_device(std::shared_ptr<dev::DeviceBackend> device) {
  std::unique_lock lock(mu_);
  mmu_ = device ? &device->mmu() : nullptr;
  windows_ = device ? &device->windows() : nullptr;
  if (device) {
    const dev::WindowLayout& layout = device->windows().layout();
    // Every backend of an emu process shares its windows (drivers/emu/device/windows.h), so a
    // restart finds the index covering them already; only a new place needs a new table. The
    // table is the backend's host memory (HostServices::allocate_table): emu's is never given
    // back; a fake's goes with its backend, and each test's space has a fake of its own. Without
    // a table (no memory for it) every query takes the trees: slower, still correct.
    if (layout.device.base != layout_.device.base || layout.device.size != layout_.device.size) {
      const uint64_t chunks = ChunkIndex::chunks_for(layout.device.size);
      index_.attach(layout.device.base, layout.device.size,
                    chunks ? device->host().allocate_table(chunks * sizeof(uint64_t)) : nullptr);
    }
    layout_ = layout;
  }
  device_ = std::move(device);
}

std::vector<std::unique_ptr<Region>> AddressSpace::clear() {
  std::vector<std::unique_ptr<Region>> out;
  {
    std::unique_lock lock(mu_);
    for (auto& [base, region] : regions_) {
      unindex(*region);
      if (is_reservation(*region)) {
        for (auto& [va, m] : region->mappings) {
          if (mmu_) (void)mmu_->unmap(m.va, m.size);  // the device MMU removes its CPU view too
        }
        // The range goes back to the backend's windows (a no-UC one: its placeholder too).
        if (windows_) (void)windows_->release(base, region->span);
      } else if (region->kind == RegionKind::kIpcImport) {
        if (mmu_) (void)mmu_->unmap(region->window_base, region->mapped_size);
        if (windows_) (void)windows_->release(region->window_base, region->window_size);
      } else if (device_) {
        (void)device_->blocks().free(base);  // with its CPU view and its range
      }
      out.push_back(std::move(region));
    }
    regions_.clear();
  }
  attach_device(nullptr);  // the runtime closes it; the next start attaches its own
  return out;
}

const Region* AddressSpace::find_region(uint64_t va) const {
  auto it = regions_.upper_bound(va);
  if (it == regions_.begin()) return nullptr;
  --it;
  const Region* r = it->second.get();
  return va - r->base < r->span ? r : nullptr;
}

Region* AddressSpace::find_region(uint64_t va) {
  return const_cast<Region*>(static_cast<const AddressSpace*>(this)->find_region(va));
}

bool AddressSpace::is_host_block(uint64_t va) const {
  std::shared_lock lock(mu_);
  const Region* r = find_region(va);
  return r != nullptr && r->kind == RegionKind::kHostPinned && va - r->base < r->size;
}

bool AddressSpace::overlaps_device_windows(uint64_t base, uint64_t size) const {
  auto overlaps = [base, size](uint64_t b, uint64_t n) { return n != 0 && base < b + n && b < base + size; };
  if (overlaps(layout_.device.base, layout_.device.size) ||
      overlaps(layout_.managed.base, layout_.managed.size)) {
    return true;
  }
  // The no-UC "window" is only where such reservations may be placed, among the process's own
  // mappings: what counts is the no-UC reservations made there.
  std::shared_lock lock(mu_);
  auto it = regions_.upper_bound(base + size - 1);
  while (it != regions_.begin()) {
    --it;
    const Region& r = *it->second;
    if (r.base + r.span <= base) break;  // regions do not overlap: nothing further down reaches
    if (r.kind == RegionKind::kNoUcReservation) return true;
  }
  return false;
}

bool AddressSpace::in_windows(uint64_t va) const {
  return layout_.host_pinned.contains(va) || layout_.managed.contains(va) ||
         layout_.device.contains(va);
}

StatusOr<uint64_t> AddressSpace::reserve(uint64_t size, uint64_t expect, bool no_uc,
                                         const char* api) {
  uint64_t rsize = round_up(size < kChunk ? kChunk : size, kChunk);
  if (rsize < size) return Error(ACL_ERROR_RT_PARAM_INVALID, "size is too large");
  auto region = std::make_unique<Region>();
  region->requested = size;
  region->created_by = api;
  std::unique_lock lock(mu_);
  if (windows_ == nullptr) {
    return Error(kAclInternalError, "no device backend gives this runtime its address windows");
  }
  dev::ReserveRequest request;
  if (no_uc) {
    if (rsize % kGiB != 0 || expect % kGiB != 0) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "a no-UC reservation needs a size that is a multiple of 1 GiB and a 1 GiB aligned "
                   "expectPtr (size " + std::to_string(size) + ", expectPtr " + hex(expect) + ")");
    }
    const dev::VaRange& window = layout_.no_uc;
    if (!window.contains(expect) || rsize > window.base + window.size - expect) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "expectPtr " + hex(expect) + " is outside the no-UC window [" +
                       hex(window.base) + ", " + hex(window.base + window.size) + ")");
    }
    request.kind = dev::ReserveKind::kNoUc;
    request.size = rsize;
    request.alignment = kGiB;
    request.fixed_address = expect;
    // Whatever the backend's reason (taken, or its claim refused), the range is not to be had.
    if (!windows_->reserve(request, &region->base).ok()) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "the range at " + hex(expect) + " is already in use");
    }
    region->kind = RegionKind::kNoUcReservation;
    region->size = region->span = rsize;
  } else {
    uint64_t align = rsize > 512 * kMiB ? kGiB : kChunk;
    uint64_t span = round_up(rsize, align);
    // Sizes within 1 GiB of 2^64 wrap here: the same "too large" as above, not a 0-byte range
    // that failed later as 507899 (found by tests/fuzz).
    if (span < rsize) return Error(ACL_ERROR_RT_PARAM_INVALID, "size is too large");
    if (expect != 0) {
      bool aligned;
      if (rsize > 512 * kMiB) {
        aligned = expect % kGiB == 0;
      } else {
        uint64_t pow2 = kChunk;
        while (pow2 < rsize) pow2 <<= 1;
        aligned = expect % pow2 == 0;
      }
      if (!aligned) {
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     "expectPtr " + hex(expect) + " is not aligned as a reservation of " +
                         std::to_string(size) + " bytes requires");
      }
      if (!layout_.device.contains(expect)) {
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     "expectPtr " + hex(expect) + " is outside the device address window");
      }
    }
    request.kind = dev::ReserveKind::kDevice;
    request.size = span;
    request.alignment = align;
    request.fixed_address = expect;
    const dev::Result got = windows_->reserve(request, &region->base);
    if (!got.ok()) {
      switch (got.condition()) {
        case dev::Condition::kBusy:
          return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                       "the range at " + hex(expect) + " is already reserved or not reservable");
        case dev::Condition::kOutOfMemory:
          return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       "the device address window has no free range of " + std::to_string(span) +
                           " bytes");
        default:
          return device_error(*device_, got, "the device address window refused a range of " +
                                                 std::to_string(span) + " bytes");
      }
    }
    region->kind = RegionKind::kReservation;
    region->size = rsize;
    region->span = span;
  }
  const uint64_t base = region->base;
  const uint64_t span = region->span;
  try {
    regions_.emplace(base, std::move(region));
  } catch (const std::bad_alloc&) {
    (void)windows_->release(base, span);  // rollback: the range goes with its record
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the reservation");
  }
  return base;
}

Status AddressSpace::release(uint64_t base) {
  std::unique_lock lock(mu_);
  auto it = regions_.find(base);
  if (it == regions_.end() || !is_reservation(*it->second)) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 hex(base) + " is not the start of a live reservation");
  }
  Region& r = *it->second;
  if (!r.mappings.empty()) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 "the reservation at " + hex(base) + " still has " +
                     std::to_string(r.mappings.size()) + " mapping(s); unmap them first");
  }
  // A range that cannot be given back stays reserved: forgetting it would leak the placeholder.
  const dev::Result given = windows_->release(r.base, r.span);
  if (!given.ok()) {
    return Error(device_code(given), "the range at " + hex(base) + " could not be given back: errno " +
                                         std::to_string(given.is_errno() ? given.errno_value() : 0));
  }
  regions_.erase(it);
  return Status::Ok();
}

namespace {

dev::PageType block_page_type(uint32_t page_size) {
  if (page_size >= kGiB) return dev::PageType::kGiant;
  return page_size >= kChunk ? dev::PageType::kHuge : dev::PageType::kNormal;
}

}  // namespace

StatusOr<uint64_t> AddressSpace::add_block(const BlockSpec& spec,
                                           std::shared_ptr<PhysicalAllocation> phys,
                                           dev::Condition* refused) {
  const bool host = spec.kind == RegionKind::kHostPinned;
  std::unique_lock lock(mu_);
  if (!device_) return Error(kAclInternalError, "no device backend is attached");
  // One backend call places the block in its window and makes the memory, its page-table words
  // and (host blocks) its CPU view (D10).
  dev::BlockRequest request;
  request.kind = host ? dev::BlockKind::kHostPinned : dev::BlockKind::kDevice;
  request.device = host ? dev::kNoDevice : spec.device;
  request.size = spec.size;
  request.page_type = host ? dev::PageType::kNormal : block_page_type(spec.page_size);
  request.mem_type = static_cast<dev::MemType>(phys->mem_type);
  dev::Block block;
  const dev::Result made = device_->blocks().allocate(request, &block);
  if (!made.ok()) {
    if (refused != nullptr) *refused = made.condition();
    return device_error(*device_, made, std::string("the backend could not allocate ") +
                                            std::to_string(spec.size) + " bytes of " +
                                            (host ? "host" : "device") + " memory");
  }
  const uint64_t base = block.address;
  try {
    auto region = std::make_unique<Region>();
    region->kind = spec.kind;
    region->base = base;
    region->size = spec.size;
    region->span = block.span;
    region->requested = spec.requested;
    region->device = host ? -1 : spec.device;
    region->page_size = host ? 0 : spec.page_size;
    region->created_by = host ? "aclrtMallocHost" : "aclrtMalloc";
    region->block_memory = block.memory;
    Mapping m;
    m.va = base;
    m.size = round_up(spec.size, 4096);
    m.phys = std::move(phys);
    if (host) {
      m.access.host = 3;
    } else {
      m.access.set_device(spec.device, 3);
    }
    region->mappings.emplace(base, std::move(m));
    index_malloc(*region);
    regions_.emplace(base, std::move(region));
  } catch (const std::bad_alloc&) {
    index_.clear(base, spec.size);  // a no-op unless index_malloc ran
    (void)device_->blocks().free(base);  // with its range
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the allocation");
  }
  return base;
}

StatusOr<std::unique_ptr<Region>> AddressSpace::remove_allocation(uint64_t base, RegionKind kind) {
  std::unique_lock lock(mu_);
  auto it = regions_.find(base);
  if (it == regions_.end() || it->second->kind != kind) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 hex(base) + " is not the start of a live " +
                     (kind == RegionKind::kHostPinned ? "aclrtMallocHost" : "aclrtMalloc") +
                     " allocation");
  }
  // The block goes first: if the backend keeps it (its CPU view cannot be removed), the
  // allocation stays as it was (freeing it anyway would leave its memory mapped at an address
  // the next allocation reuses). Copies in flight keep the bytes through their PhysicalAllocation.
  const dev::Result freed = device_->blocks().free(base);
  if (!freed.ok()) {
    return device_error(*device_, freed, "the allocation at " + hex(base) + " could not be freed");
  }
  std::unique_ptr<Region> region = std::move(it->second);
  unindex(*region);
  regions_.erase(it);
  return region;
}

bool AddressSpace::has_allocation(uint64_t base, RegionKind kind) const {
  std::shared_lock lock(mu_);
  auto it = regions_.find(base);
  return it != regions_.end() && it->second->kind == kind;
}

void AddressSpace::index_mapping(const Mapping& m) {
  ChunkEntry e;
  const bool device = m.phys->on_device();
  e.kind = device ? ChunkEntry::kDevice : ChunkEntry::kHost;
  e.device = device ? m.phys->device : 0;
  e.page_shift = device ? 21 : 0;  // device mappings report 2 MiB pages, host ones the host's
  e.range_exact = true;
  e.range_base = m.va;
  e.range_size = m.size;
  index_.publish(m.va, m.size, e);
}

void AddressSpace::index_malloc(const Region& r) {
  if ((r.kind != RegionKind::kDeviceMalloc && r.kind != RegionKind::kIpcImport) ||
      r.page_size == 0 ||
      (r.page_size & (r.page_size - 1)) != 0) {
    return;
  }
  ChunkEntry e;
  e.kind = ChunkEntry::kDevice;
  e.device = r.device;
  e.page_shift = static_cast<uint32_t>(__builtin_ctz(r.page_size));
  // As address_range answers: blocks that own whole 1 GiB heaps report the heap.
  const uint64_t extent = r.span >= kGiB ? r.span : r.size;
  e.range_exact = true;
  e.range_base = r.base;
  e.range_size = extent;
  // Only chunks wholly inside the block: a query past its end must fail (the trees say so).
  index_.publish(r.base, r.size, e);
}

void AddressSpace::unindex(const Region& r) {
  if (r.kind == RegionKind::kDeviceMalloc || r.kind == RegionKind::kIpcImport) {
    index_.clear(r.base, r.size);
  } else if (r.kind != RegionKind::kHostPinned) {
    for (const auto& [va, m] : r.mappings) index_.clear(m.va, m.size);
  }
}

size_t AddressSpace::region_count(RegionKind kind) const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [base, r] : regions_) n += r->kind == kind;
  return n;
}

size_t AddressSpace::mapping_count() const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [base, r] : regions_) {
    if (!is_reservation(*r)) continue;
    auto own = read_mappings(r.get());
    n += r->mappings.size();
  }
  return n;
}

}  // namespace aclvmm
