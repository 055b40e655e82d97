#include "core/managed.h"

#include <algorithm>
#include <unistd.h>

#include <cerrno>

#include "core/log.h"
#include "core/runtime.h"
#include "core/trace.h"

namespace aclvmm {
namespace {

constexpr uint64_t kPage = kChunk;  // managed memory migrates in 2 MiB pages
constexpr int kFaultPollMs = 100;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Status not_allocated(uint64_t va) {
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               fmt::format("0x{:x} is not inside a managed allocation", va));
}

bool same(const ManagedLocation& a, const ManagedLocation& b) {
  return a.type == b.type && (a.type == 2 || a.id == b.id);
}

}  // namespace

ManagedMemory::~ManagedMemory() { stop_tracking(); }

void ManagedMemory::attach(drv::Backend* backend, uint64_t window, uint64_t window_size) {
  backend_ = backend;
  tracker_ = &backend->fault_tracker();
  window_ = window;
  window_size_ = window_size;
  va_.reset(window, window + window_size);
}

void ManagedMemory::start_tracking() {
  // Started with the first allocation and stopped when the last range goes (aclFinalize), so an
  // application that never uses managed memory has no descriptor or thread for it.
  if (tracking_ || tracking_failed_) return;
  int rc = tracker_->start();
  if (rc != 0) {
    tracking_failed_ = true;
    ACLVMM_LOG_WARN("RUNTIME", "CPU fault tracking is unavailable (errno {}): managed memory stays "
                    "on the host and devices reach it in place", -rc);
    return;
  }
  tracking_ = true;
  stop_.store(false);
  fault_thread_ = new std::thread([this] { serve_faults(); });
  fault_thread_pid_ = getpid();
}

void ManagedMemory::stop_tracking() {
  std::thread* thread = nullptr;
  {
    // The fault thread takes mu_ itself: it is joined outside the lock.
    Lock lock(mu_);
    if (!tracking_) return;
    tracking_ = false;
    thread = fault_thread_;
    fault_thread_ = nullptr;
    stop_.store(true);
  }
  if (thread && fault_thread_pid_ == getpid()) {
    thread->join();
    delete thread;
  }
  // In a forked child the thread is the parent's: the object is left alone.
  tracker_->stop();
}

ManagedRange* ManagedMemory::find(uint64_t va) {
  return const_cast<ManagedRange*>(static_cast<const ManagedMemory*>(this)->find(va));
}

const ManagedRange* ManagedMemory::find(uint64_t va) const {
  auto it = ranges_.upper_bound(va);
  if (it == ranges_.begin()) return nullptr;
  --it;
  return va - it->second->base < it->second->size ? it->second.get() : nullptr;
}

StatusOr<uint64_t> ManagedMemory::allocate(uint64_t size) {
  const uint64_t bytes = round_up(size, kPage);
  if (bytes < size) return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large");
  {
    Lock lock(mu_);
    start_tracking();
  }
  auto range = std::make_unique<ManagedRange>();
  drv::PhysicalRequest req;
  req.size = bytes;
  int rc = backend_->create_physical(req, &range->memory);
  if (rc != 0) return Error(code_from_errno(rc), "no memory for the managed allocation");
  Lock lock(mu_);
  uint64_t base = 0;
  if (bytes > window_size_ - reserved_total_ || !va_.allocate(bytes, kPage, &base)) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("managed memory is limited to {} bytes per process; {} are in use",
                             window_size_, reserved_total_));
  }
  rc = backend_->map_cpu(base, bytes, *range->memory, 0, drv::CpuAccess::kReadWrite);
  if (rc == 0 && tracking_) {
    rc = tracker_->watch(base, bytes);
    if (rc != 0) backend_->unmap_cpu(base, bytes);
  }
  if (rc != 0) {
    va_.free(base, bytes);
    return Error(code_from_errno(rc), "the managed range could not be mapped");
  }
  range->base = base;
  range->size = bytes;
  range->requested = size;
  range->pages.resize(bytes / kPage);
  reserved_total_ += bytes;
  ranges_.emplace(base, std::move(range));
  return base;
}

Status ManagedMemory::free(uint64_t base) {
  std::unique_ptr<ManagedRange> range;
  {
    Lock lock(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end()) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   fmt::format("0x{:x} is not the start of a managed allocation", base));
    }
    range = std::move(it->second);
    ranges_.erase(it);
    for (ManagedPage& p : range->pages) {
      // Released, not migrated: the device charge goes back and nothing is counted.
      if (p.resident == kHostResident) continue;
      if (auto pool = Runtime::get().pool(p.resident)) pool->uncharge(kPage);
      p.resident = kHostResident;
    }
    // Unwatching wakes any thread still blocked on the range; the range is then unmapped.
    reserved_total_ -= range->size;
    if (tracking_) tracker_->unwatch(range->base, range->size);
    backend_->unmap_cpu(range->base, range->size);
    va_.free(range->base, range->size);
  }
  return Status::Ok();
}

StatusOr<AddressRange> ManagedMemory::range_of(uint64_t va) const {
  Lock lock(mu_);
  const ManagedRange* r = find(va);
  if (!r) return not_allocated(va);
  return AddressRange{r->base, r->size};
}

Status ManagedMemory::pages_of(uint64_t va, uint64_t size,
                               std::vector<std::pair<ManagedRange*, size_t>>* out) {
  if (size > window_size_ || va + size < va) return not_allocated(va);  // no wrap-around
  const uint64_t first = va / kPage * kPage;
  const uint64_t end = round_up(va + size, kPage);
  for (uint64_t page = first; page < end; page += kPage) {
    ManagedRange* r = find(page);
    if (!r) return not_allocated(page);
    out->emplace_back(r, (page - r->base) / kPage);
  }
  return Status::Ok();
}

bool ManagedMemory::cpu_keeps_access(const ManagedPage& p) const {
  if (p.resident == kHostResident) return true;
  // Read copies stay readable everywhere; the host may be told to keep its mapping; a page that
  // prefers its device is reached by the CPU in place instead of being pulled back.
  return p.read_mostly || p.accessed_by_host ||
         (p.preferred.type == 1 && p.preferred.id == p.resident);
}

Status ManagedMemory::to_device(ManagedRange& r, size_t page, int device, Lock& lock) {
  (void)lock;
  ManagedPage& p = r.pages[page];
  if (p.resident == device) return Status::Ok();
  auto pool = Runtime::get().pool(device);
  if (!pool) return Error(ACL_ERROR_RT_INVALID_DEVICEID, "no such device");
  while (!pool->charge(kPage)) {
    if (!evict_one(device)) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                   fmt::format("device {} has no room for a managed page", device));
    }
  }
  const uint64_t va = r.base + page * kPage;
  if (p.resident != kHostResident) {
    if (auto old = Runtime::get().pool(p.resident)) old->uncharge(kPage);
  } else {
    // Fault tracking hands the CPU existing pages only: allocate the page before revoking.
    r.memory->populate(page * kPage, kPage);
  }
  trace::event(p.resident == kHostResident ? "to_device" : "device_to_device", va, device);
  p.resident = device;
  p.read_copies = 0;
  p.last_use = ++clock_;
  if (!cpu_keeps_access(p) && !p.cpu_revoked) {
    tracker_->revoke(va, kPage);
    p.cpu_revoked = true;
  }
  stats_.bytes_to_device.fetch_add(kPage);
  return Status::Ok();
}

bool ManagedMemory::to_host(ManagedRange& r, size_t page, bool eviction) {
  ManagedPage& p = r.pages[page];
  if (p.resident == kHostResident) return false;
  if (auto pool = Runtime::get().pool(p.resident)) pool->uncharge(kPage);
  trace::event(eviction ? "eviction_to_host" : "to_host", r.base + page * kPage, p.resident);
  p.resident = kHostResident;
  stats_.bytes_to_host.fetch_add(kPage);
  if (eviction) stats_.evictions.fetch_add(1);
  if (!p.cpu_revoked) return false;
  // The whole page was revoked and is populated: one ioctl gives the CPU all of it back.
  tracker_->resolve(r.base + page * kPage, kPage);
  p.cpu_revoked = false;
  return true;
}

bool ManagedMemory::evict_one(int device) {
  ManagedRange* victim = nullptr;
  size_t victim_page = 0;
  uint64_t oldest = UINT64_MAX;
  for (auto& [base, r] : ranges_) {
    for (size_t i = 0; i < r->pages.size(); ++i) {
      const ManagedPage& p = r->pages[i];
      if (p.resident == device && p.last_use < oldest) {
        oldest = p.last_use;
        victim = r.get();
        victim_page = i;
      }
    }
  }
  if (!victim) return false;
  to_host(*victim, victim_page, true);
  return true;
}

Status ManagedMemory::device_access(uint64_t va, uint64_t n, int device, bool write,
                                    Translation* out) {
  out->cpu = false;
  out->segments.clear();
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, n, &pages));
  if (tracking_ && device >= 0) {
    for (auto& [r, i] : pages) {
      ManagedPage& p = r->pages[i];
      if (p.resident == device) {
        p.last_use = ++clock_;
        continue;
      }
      if (p.read_mostly && !write) {
        // A read copy: the page stays where it is and the device reads its own copy.
        if (!((p.read_copies >> device) & 1)) {
          trace::event("read_copy", r->base + i * kPage, device);
          p.read_copies |= 1ull << device;
          stats_.bytes_to_device.fetch_add(kPage);
          stats_.device_faults.fetch_add(1);
        }
        continue;
      }
      const bool preferred_elsewhere =
          p.preferred.type != 0 && !(p.preferred.type == 1 && p.preferred.id == device);
      if (preferred_elsewhere || ((p.accessed_by >> device) & 1)) continue;  // reached in place
      stats_.device_faults.fetch_add(1);
      trace::event("device_fault", r->base + i * kPage, device);
      Status st = to_device(*r, i, device, lock);
      if (!st.ok()) return st;
    }
  }
  // One copy of the bytes: the segments are the memfd ranges, whatever the residency.
  uint64_t cur = va, left = n;
  while (left > 0) {
    ManagedRange* r = find(cur);
    if (!r) return not_allocated(cur);
    uint64_t len = std::min(left, r->base + r->size - cur);
    out->segments.push_back(Segment{r->memory, cur - r->base, len});
    cur += len;
    left -= len;
  }
  return Status::Ok();
}

Status ManagedMemory::advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where) {
  const bool needs_location = advice >= 2;
  if (needs_location) {
    const int nodes = backend_->numa_node_count();
    const bool valid = where.type == 1 || where.type == 2 ||
                       (where.type == 3 && where.id >= 0 && where.id < std::max(nodes, 1));
    if (!valid) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("location type {} id {} is not valid for this advice", where.type,
                               where.id));
    }
  }
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    const bool cpu_before = cpu_keeps_access(p);
    switch (advice) {
      case 0: p.read_mostly = true; break;
      case 1: p.read_mostly = false; p.read_copies = 0; break;
      case 2: p.preferred = where; break;
      case 3: p.preferred = ManagedLocation{}; break;
      case 4:
      case 5:
        if (where.type == 1) {
          p.accessed_by = advice == 4 ? (p.accessed_by | (1ull << where.id))
                                      : (p.accessed_by & ~(1ull << where.id));
        } else {
          p.accessed_by_host = advice == 4;
        }
        break;
      default: break;
    }
    const bool cpu_after = cpu_keeps_access(p);
    if (tracking_ && cpu_before != cpu_after) {
      const uint64_t page_va = r->base + i * kPage;
      if (cpu_after && p.cpu_revoked) {
        tracker_->resolve(page_va, kPage);
        p.cpu_revoked = false;
      } else if (!cpu_after && !p.cpu_revoked) {
        r->memory->populate(i * kPage, kPage);
        tracker_->revoke(page_va, kPage);
        p.cpu_revoked = true;
      }
    }
  }
  return Status::Ok();
}

Status ManagedMemory::prefetch(uint64_t va, uint64_t size, const ManagedLocation& where) {
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    p.last_prefetch = where;
    if (!tracking_) continue;
    if (where.type == 1) {
      if (p.resident == where.id) {
        p.last_use = ++clock_;
        continue;
      }
      ACLVMM_RETURN_IF_ERROR(to_device(*r, i, where.id, lock));
      stats_.prefetch_bytes.fetch_add(kPage);
    } else if (p.resident != kHostResident) {
      to_host(*r, i, false);
      stats_.prefetch_bytes.fetch_add(kPage);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> ManagedMemory::attribute(int attribute, uint64_t va, uint64_t size,
                                                        size_t slots) {
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  Runtime& rt = Runtime::get();
  auto user = [&](int physical) { return static_cast<int32_t>(rt.user_device(physical)); };
  // The location all pages agree on, or nullopt-like {type -1} when they differ.
  auto common = [&](bool prefetch) {
    ManagedLocation first = prefetch ? pages[0].first->pages[pages[0].second].last_prefetch
                                     : pages[0].first->pages[pages[0].second].preferred;
    for (auto& [r, i] : pages) {
      const ManagedLocation& l = prefetch ? r->pages[i].last_prefetch : r->pages[i].preferred;
      if (!same(l, first)) return ManagedLocation{-1, 0};
    }
    return first;
  };
  std::vector<int32_t> out;
  switch (attribute) {
    case 1: {  // READ_MOSTLY
      bool all = std::all_of(pages.begin(), pages.end(),
                             [](auto& pr) { return pr.first->pages[pr.second].read_mostly; });
      out.push_back(all ? 1 : 0);
      break;
    }
    case 2:    // PREFERRED_LOCATION
    case 6: {  // LAST_PREFETCH_LOCATION
      ManagedLocation l = common(attribute == 6);
      out.push_back(l.type == 1 ? user(l.id) : (l.type == 2 || l.type == 3) ? -1 : -2);
      break;
    }
    case 4:    // PREFERRED_LOCATION_TYPE
    case 7: {  // LAST_PREFETCH_LOCATION_TYPE
      ManagedLocation l = common(attribute == 7);
      out.push_back(l.type < 0 ? 0 : l.type);
      break;
    }
    case 5:    // PREFERRED_LOCATION_ID
    case 8: {  // LAST_PREFETCH_LOCATION_ID
      ManagedLocation l = common(attribute == 8);
      out.push_back(l.type == 1 ? user(l.id) : l.type == 3 ? l.id : -2);
      break;
    }
    case 3: {  // ACCESSED_BY: the processors every page names, packed from slot 0
      uint64_t devices = ~0ull;
      bool host = true;
      for (auto& [r, i] : pages) {
        devices &= r->pages[i].accessed_by;
        host = host && r->pages[i].accessed_by_host;
      }
      std::vector<int32_t> ids;
      for (int d = 0; d < 64; ++d) {
        if ((devices >> d) & 1) ids.push_back(user(d));
      }
      std::sort(ids.begin(), ids.end());
      if (host) ids.insert(ids.begin(), -1);
      out.assign(slots, -2);
      for (size_t k = 0; k < ids.size() && k < slots; ++k) out[k] = ids[k];
      break;
    }
    default:
      return Error(ACL_ERROR_RT_PARAM_INVALID, "unknown range attribute");
  }
  return out;
}

void ManagedMemory::serve_faults() {
  while (!stop_.load()) {
    drv::CpuFault fault;
    if (tracker_->next_fault(kFaultPollMs, &fault) != 0) continue;
    const uint64_t page_va = fault.address / kPage * kPage;
    bool resolved = false;
    {
      Lock lock(mu_);
      if (ManagedRange* r = find(page_va)) {
        const size_t i = (page_va - r->base) / kPage;
        // Only a page whose CPU access was revoked comes back; a page the CPU reaches in place
        // (advice) merely had no page-table entry yet.
        if (r->pages[i].resident != kHostResident && r->pages[i].cpu_revoked) {
          stats_.host_faults.fetch_add(1);
          trace::event("cpu_fault", page_va, -1);
          resolved = to_host(*r, i, false);
        }
      }
    }
    // A fault on a page the CPU was not denied (its entries were merely absent, e.g. after the
    // device wrote it): let the faulting thread in, and only at its own 4 KiB page.
    if (!resolved) tracker_->resolve(fault.address & ~uint64_t{4095}, 4096);
  }
}

size_t ManagedMemory::release_all() {
  std::vector<uint64_t> bases;
  {
    Lock lock(mu_);
    for (auto& [base, r] : ranges_) bases.push_back(base);
  }
  for (uint64_t b : bases) (void)free(b);
  stop_tracking();
  Lock lock(mu_);
  tracking_failed_ = false;
  return bases.size();
}

size_t ManagedMemory::live() const {
  Lock lock(mu_);
  return ranges_.size();
}

}  // namespace aclvmm
