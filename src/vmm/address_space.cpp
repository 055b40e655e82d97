#include "vmm/address_space.h"

#include <cerrno>
#include <mutex>
#include <new>

#include "observability/log.h"

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
    for (auto& [va, m] : region->mappings) {
      if (is_reservation(*region)) {
        if (mmu_) (void)mmu_->unmap(m.va, m.size);  // the device MMU removes its CPU view too
      } else if (m.cpu != drv::CpuAccess::kNone) {
        backend_->unmap_cpu(m.va, m.size);
      }
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

Status AddressSpace::cpu_apply(Mapping& m, drv::CpuAccess access) {
  if (access == m.cpu) return Status::Ok();
  int rc = access == drv::CpuAccess::kNone
               ? backend_->unmap_cpu(m.va, m.size)
               : backend_->map_cpu(m.va, m.size, *m.phys->memory, 0, access);
  if (rc == 0 && access != drv::CpuAccess::kNone && m.phys->side == Side::kHostNuma) {
    rc = backend_->bind_numa(m.va, m.size, m.phys->device);  // on failure: unmapped below
  }
  if (rc != 0) {
    if (access != drv::CpuAccess::kNone) {
      // A failed mmap may already have dropped the old mapping (the emu backend then puts the
      // placeholder back): make the placeholder certain and say so, so that the caller's
      // rollback maps the old access again instead of believing it is still there.
      (void)backend_->unmap_cpu(m.va, m.size);
      m.cpu = drv::CpuAccess::kNone;
    }
    return Error(code_from_errno(rc), "the CPU mapping at " + hex(m.va) +
                                          " could not be changed: errno " + std::to_string(-rc));
  }
  m.cpu = access;
  return Status::Ok();
}

StatusOr<uint64_t> AddressSpace::add_device_malloc(uint64_t size, uint64_t requested,
                                                   uint32_t page_size, int device,
                                                   std::shared_ptr<PhysicalAllocation> phys) {
  uint64_t align = size >= kGiB ? kGiB : kChunk;
  uint64_t span = round_up(size, align);
  std::unique_lock lock(mu_);
  uint64_t base = 0;
  if (!svm_.allocate(span, align, &base)) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "the device address window is full");
  }
  auto region = std::make_unique<Region>();
  region->kind = RegionKind::kDeviceMalloc;
  region->base = base;
  region->size = size;
  region->span = span;
  region->requested = requested;
  region->device = device;
  region->page_size = page_size;
  region->created_by = "aclrtMalloc";
  Mapping m;
  m.va = base;
  m.size = round_up(size, 4096);
  m.phys = std::move(phys);
  m.access.set_device(device, 3);
  if (cpu_open_) {
    Status st = cpu_apply(m, drv::CpuAccess::kReadWrite);
    if (!st.ok()) {
      svm_.free(base, span);
      return st;
    }
  }
  region->mappings.emplace(base, std::move(m));
  index_malloc(*region);
  regions_.emplace(base, std::move(region));
  return base;
}

StatusOr<uint64_t> AddressSpace::add_host_pinned(uint64_t size, uint64_t requested,
                                                 std::shared_ptr<PhysicalAllocation> phys) {
  uint64_t span = round_up(size, kChunk);
  std::unique_lock lock(mu_);
  uint64_t base = 0;
  if (!host_.allocate(span, kChunk, &base)) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "the host pinned address window is full");
  }
  auto region = std::make_unique<Region>();
  region->kind = RegionKind::kHostPinned;
  region->base = base;
  region->size = size;
  region->span = span;
  region->requested = requested;
  region->created_by = "aclrtMallocHost";
  Mapping m;
  m.va = base;
  m.size = size;
  m.phys = std::move(phys);
  m.access.host = 3;
  Status st = cpu_apply(m, drv::CpuAccess::kReadWrite);
  if (!st.ok()) {
    host_.free(base, span);
    return st;
  }
  region->mappings.emplace(base, std::move(m));
  regions_.emplace(base, std::move(region));
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
  // The CPU mapping goes first: if it cannot be removed, the allocation stays as it was
  // (freeing it anyway would leave its memory mapped at an address the next allocation reuses).
  for (auto& [va, m] : it->second->mappings) {
    if (m.cpu == drv::CpuAccess::kNone) continue;
    int rc = backend_->unmap_cpu(m.va, m.size);
    if (rc != 0) {
      return Error(code_from_errno(rc), "the CPU mapping at " + hex(m.va) +
                                            " could not be removed: errno " + std::to_string(-rc));
    }
    m.cpu = drv::CpuAccess::kNone;
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
