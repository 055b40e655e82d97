#include "vmm/address_space.h"

#include <cerrno>
#include <mutex>
#include <new>

#include "observability/log.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

// Vendor windows (emulation.md section 3). ThreadSanitizer confines a program to a few TiB and
// aborts on larger mappings, so its builds get small windows (only concurrency tests run there).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACLVMM_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(ACLVMM_TSAN)
constexpr uint64_t kWindowDivisor = 64;
#else
constexpr uint64_t kWindowDivisor = 1;
#endif
constexpr uint64_t kHostWindow = 0x70000000000ull, kHostWindowSize = 1 * kTiB / kWindowDivisor;
constexpr uint64_t kUvmWindow = 0x90000000000ull, kUvmWindowSize = 3 * kTiB / kWindowDivisor;
constexpr uint64_t kSvmWindow = 0x100000000000ull, kSvmWindowSize = 8 * kTiB / kWindowDivisor;
constexpr uint64_t kSvmGeneralOffset = 0x12C000000000ull - kSvmWindow;
constexpr uint64_t kNoUcStart = 0x180000000000ull, kNoUcEnd = 0x800000000000ull;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool is_reservation(const Region& r) {
  return r.kind == RegionKind::kReservation || r.kind == RegionKind::kNoUcReservation;
}

}  // namespace

Status AddressSpace::claim_windows(drv::Backend* backend, const WindowPlaces& inherited) {
  std::unique_lock lock(mu_);
  std::lock_guard claims(claims_mu_);
  if (backend_) return Status::Ok();
  host_window_size_ = kHostWindowSize;
  uvm_window_size_ = kUvmWindowSize;
  svm_window_size_ = kSvmWindowSize;
  struct Want {
    uint64_t preferred, inherited, size, *base, *size_out;
    const char* name;
  } wants[] = {
      {kHostWindow, inherited.host, kHostWindowSize, &host_window_, &host_window_size_,
       "host pinned"},
      {kUvmWindow, inherited.uvm, kUvmWindowSize, &uvm_window_, &uvm_window_size_, "managed"},
      {kSvmWindow, inherited.svm, kSvmWindowSize, &svm_window_, &svm_window_size_, "device"}};
  for (Want& w : wants) {
    // Under TSan even asking for the vendor address aborts the process: let the kernel choose
    // (an inherited place is one the kernel chose under the same sanitizer, so it may be asked).
    const uint64_t preferred = w.inherited ? w.inherited : kWindowDivisor == 1 ? w.preferred : 0;
    int rc = backend->claim_window(preferred, w.size, kGiB, w.base);
    // ThreadSanitizer confines a program to a few TiB: smaller windows keep the emulator usable
    // there (the concurrency tests need no terabyte reservations).
    while (rc == -ENOMEM && w.size > 64 * kGiB) {
      w.size /= 2;
      rc = backend->claim_window(preferred, w.size, kGiB, w.base);
    }
    if (rc != 0) {
      // Rollback: the windows claimed so far go back, so that a later start claims them afresh
      // at their preferred addresses instead of finding them taken by our own leftovers.
      for (Want* done = wants; done != &w; ++done) {
        (void)backend->release_window(*done->base, done->size);
        *done->base = 0;
      }
      return Error(kAclInternalError, std::string("cannot claim the ") + w.name +
                                          " address window: errno " + std::to_string(-rc));
    }
    if (*w.base != w.preferred || w.size != *w.size_out) {
      ACLVMM_LOG_WARN("DRV", "the {} window could not be placed at {} with {} bytes (taken, e.g. "
                      "by a sanitizer); it is at {} with {} bytes instead", w.name,
                      hex(w.preferred), *w.size_out, hex(*w.base), w.size);
    }
    *w.size_out = w.size;
  }
  host_.reset(host_window_, host_window_ + host_window_size_);
  // The general part starts at the vendor's offset unless the window had to shrink.
  svm_general_ = (kWindowDivisor == 1 && svm_window_size_ == kSvmWindowSize) ? kSvmGeneralOffset
                                                                        : svm_window_size_ / 4;
  svm_.reset(svm_window_ + svm_general_, svm_window_ + svm_window_size_);
  // Without the index (no memory for it) every query takes the trees: slower, still correct.
  const uint64_t chunks = ChunkIndex::chunks_for(svm_window_size_);
  index_.attach(svm_window_, svm_window_size_,
                chunks ? backend->allocate_table(chunks * sizeof(uint64_t)) : nullptr);
  backend_ = backend;
  return Status::Ok();
}

std::vector<std::unique_ptr<Region>> AddressSpace::clear() {
  std::unique_lock lock(mu_);
  // A no-UC range and its record go together, so a fork never sees one without the other.
  std::lock_guard claims(claims_mu_);
  std::vector<std::unique_ptr<Region>> out;
  for (auto& [base, region] : regions_) {
    unindex(*region);
    if (is_reservation(*region)) {
      for (auto& [va, m] : region->mappings) {
        if (mmu_) (void)mmu_->unmap(m.va, m.size);  // the device MMU removes its CPU view too
      }
    } else if (device_) {
      (void)device_->blocks().free(base);  // with its CPU view
    }
    if (region->kind == RegionKind::kNoUcReservation) backend_->release_window(base, region->span);
    out.push_back(std::move(region));
  }
  regions_.clear();
  no_uc_claims_.clear();
  attach_device(nullptr);  // the runtime closes it; the next start attaches its own
  if (backend_) {
    host_.reset(host_window_, host_window_ + host_window_size_);
    svm_.reset(svm_window_ + svm_general_, svm_window_ + svm_window_size_);
  }
  return out;
}

WindowPlaces AddressSpace::release_inherited_claims() {
  std::lock_guard claims(claims_mu_);
  if (!backend_) return {};  // never claimed anything
  for (const auto& [base, span] : no_uc_claims_) (void)backend_->release_window(base, span);
  const AddressRange windows[] = {{host_window_, host_window_size_},
                                  {uvm_window_, uvm_window_size_},
                                  {svm_window_, svm_window_size_}};
  for (const AddressRange& w : windows) {
    if (w.size != 0) (void)backend_->release_window(w.base, w.size);
  }
  return {host_window_, uvm_window_, svm_window_};
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

bool AddressSpace::in_windows(uint64_t va) const {
  return (va - host_window_ < host_window_size_) || (va - uvm_window_ < uvm_window_size_) ||
         (va - svm_window_ < svm_window_size_);
}

StatusOr<uint64_t> AddressSpace::reserve(uint64_t size, uint64_t expect, bool no_uc,
                                         const char* api) {
  uint64_t rsize = round_up(size < kChunk ? kChunk : size, kChunk);
  if (rsize < size) return Error(ACL_ERROR_RT_PARAM_INVALID, "size is too large");
  auto region = std::make_unique<Region>();
  region->requested = size;
  region->created_by = api;
  std::unique_lock lock(mu_);
  if (no_uc) {
    if (rsize % kGiB != 0 || expect % kGiB != 0) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "a no-UC reservation needs a size that is a multiple of 1 GiB and a 1 GiB aligned "
                   "expectPtr (size " + std::to_string(size) + ", expectPtr " + hex(expect) + ")");
    }
    if (expect < kNoUcStart || expect >= kNoUcEnd || rsize > kNoUcEnd - expect) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, "expectPtr " + hex(expect) +
                                                   " is outside the no-UC window [0x180000000000, "
                                                   "0x800000000000)");
    }
    std::lock_guard claims(claims_mu_);
    int rc = backend_->claim_fixed(expect, rsize);
    if (rc != 0) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "the range at " + hex(expect) + " is already in use");
    }
    try {
      no_uc_claims_.emplace(expect, rsize);
    } catch (const std::bad_alloc&) {
      (void)backend_->release_window(expect, rsize);  // rollback: the claim goes with the record
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the reservation");
    }
    region->kind = RegionKind::kNoUcReservation;
    region->base = expect;
    region->size = region->span = rsize;
  } else {
    uint64_t align = rsize > 512 * kMiB ? kGiB : kChunk;
    uint64_t span = round_up(rsize, align);
    // Sizes within 1 GiB of 2^64 wrap here: the same "too large" as above, not a 0-byte range
    // that failed later as 507899 (found by tests/fuzz).
    if (span < rsize) return Error(ACL_ERROR_RT_PARAM_INVALID, "size is too large");
    uint64_t base = 0;
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
      if (expect - svm_window_ >= svm_window_size_) {
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     "expectPtr " + hex(expect) + " is outside the device address window");
      }
      if (!svm_.allocate_at(expect, span)) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "the range at " + hex(expect) + " is already reserved or not reservable");
      }
      base = expect;
    } else if (!svm_.allocate(span, align, &base)) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "the device address window has no free range of " +
                                                       std::to_string(span) + " bytes");
    }
    region->kind = RegionKind::kReservation;
    region->base = base;
    region->size = rsize;
    region->span = span;
  }
  uint64_t base = region->base;
  regions_.emplace(base, std::move(region));
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
  if (r.kind == RegionKind::kNoUcReservation) {
    std::lock_guard claims(claims_mu_);
    // A range that cannot be given back stays reserved: forgetting it would leak the placeholder.
    int rc = backend_->release_window(r.base, r.span);
    if (rc != 0) {
      return Error(code_from_errno(rc), "the range at " + hex(base) +
                                            " could not be given back: errno " + std::to_string(-rc));
    }
    no_uc_claims_.erase(r.base);
  } else {
    svm_.free(r.base, r.span);
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
  const uint64_t align = !host && spec.size >= kGiB ? kGiB : kChunk;
  const uint64_t span = round_up(spec.size, align);
  VaAllocator& window = host ? host_ : svm_;
  std::unique_lock lock(mu_);
  dev::LegacyMemory* bridge = device_ ? device_->legacy_memory() : nullptr;
  if (bridge == nullptr) {
    return Error(kAclInternalError,
                 "the device backend gives no access to its memory for this runtime's copies");
  }
  uint64_t base = 0;
  if (!window.allocate(span, align, &base)) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, host ? "the host pinned address window is full"
                                                      : "the device address window is full");
  }
  // One backend call makes the memory, its page-table words and (host blocks) its CPU view (D10).
  dev::BlockRequest request;
  request.kind = host ? dev::BlockKind::kHostPinned : dev::BlockKind::kDevice;
  request.device = host ? dev::kNoDevice : spec.device;
  request.size = spec.size;
  request.page_type = host ? dev::PageType::kNormal : block_page_type(spec.page_size);
  request.mem_type = static_cast<dev::MemType>(phys->mem_type);
  request.address = base;
  dev::Block block;
  const dev::Result made = device_->blocks().allocate(request, &block);
  if (!made.ok()) {
    if (refused != nullptr) *refused = made.condition();
    window.free(base, span);
    return device_error(*device_, made, std::string("the backend could not allocate ") +
                                            std::to_string(spec.size) + " bytes of " +
                                            (host ? "host" : "device") + " memory");
  }
  try {
    // The core's copies still reach the bytes the old way (legacy_memory.h, until step 3).
    phys->memory = backend_->instrument(bridge->memory(block.memory));
    auto region = std::make_unique<Region>();
    region->kind = spec.kind;
    region->base = base;
    region->size = spec.size;
    region->span = span;
    region->requested = spec.requested;
    region->device = host ? -1 : spec.device;
    region->page_size = host ? 0 : spec.page_size;
    region->created_by = host ? "aclrtMallocHost" : "aclrtMalloc";
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
    (void)device_->blocks().free(base);
    window.free(base, span);
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
  (kind == RegionKind::kHostPinned ? host_ : svm_).free(region->base, region->span);
  return region;
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
  if (r.kind != RegionKind::kDeviceMalloc || r.page_size == 0 ||
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
  if (r.kind == RegionKind::kDeviceMalloc) {
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
