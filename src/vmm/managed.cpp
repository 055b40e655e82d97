#include "vmm/managed.h"

#include <algorithm>
#include <unistd.h>

#include <cerrno>

#include "observability/log.h"
#include "observability/trace.h"

namespace aclvmm {
namespace {

constexpr uint64_t kPage = kManagedPage;
constexpr int kFaultPollMs = 100;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Status ManagedMemory::not_allocated(uint64_t va) {
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               fmt::format("0x{:x} is not inside a managed allocation", va));
}

ManagedMemory::~ManagedMemory() { stop_tracking(); }

void ManagedMemory::attach(drv::Backend* backend, dev::VaRange window, dev::LegacyMemory* ranges) {
  backend_ = backend;
  tracker_ = &backend->fault_tracker();
  window_ = window.base;
  window_size_ = window.size;
  Lock lock(mu_);
  window_ranges_ = ranges;
}

Status ManagedMemory::start_tracking() {
  // Started with the first allocation and stopped when the last range goes (aclFinalize), so an
  // application that never uses managed memory has no descriptor or thread for it.
  if (tracking_ || tracking_failed_) return Status::Ok();
  int rc = tracker_->start();
  if (rc != 0) {
    tracking_failed_ = true;
    ACLVMM_LOG_WARN("RUNTIME", "CPU fault tracking is unavailable (errno {}): managed memory stays "
                    "on the host and devices reach it in place", -rc);
    return Status::Ok();
  }
  stop_.store(false);
  try {
    fault_thread_ = new std::thread([this] { serve_faults(); });
  } catch (const std::exception& e) {  // std::system_error (no thread) or std::bad_alloc
    // Rollback: no descriptor stays open. A later allocation tries again (the machine may have
    // threads to spare by then), so this is not the permanent "unavailable" above.
    tracker_->stop();
    return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
                 fmt::format("the managed-memory fault thread could not be created: {}", e.what()));
  }
  tracking_ = true;
  return Status::Ok();
}

void ManagedMemory::stop_tracking() {
  std::lock_guard life(life_mu_);
  stop_tracking_life_locked(false);
}

void ManagedMemory::stop_tracking_life_locked(bool only_if_unused) {
  std::thread* thread = nullptr;
  {
    // The fault thread takes mu_ itself: it is joined outside the lock.
    Lock lock(mu_);
    if (!tracking_ || (only_if_unused && !ranges_.empty())) return;
    tracking_ = false;
    thread = fault_thread_;
    fault_thread_ = nullptr;
    stop_.store(true);
  }
  if (thread) {
    thread->join();
    delete thread;
  }
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
  // More than the window can never fit: answer 207001 before any backing is made (tests/fuzz
  // found such sizes failing with the backend's 507899 when the host refused the backing).
  if (bytes > window_size_) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("managed memory is limited to {} bytes per process", window_size_));
  }
  std::lock_guard life(life_mu_);
  bool started_here = false;
  {
    Lock lock(mu_);
    started_here = !tracking_;
    ACLVMM_RETURN_IF_ERROR(start_tracking());  // nothing was started
    started_here = started_here && tracking_;
  }
  // Rollback: tracking this call started (a descriptor and a thread) stops again when the call
  // fails and no other range uses it.
  auto failed = [&](Status st) -> StatusOr<uint64_t> {
    if (started_here) stop_tracking_life_locked(true);
    return st;
  };
  auto range = std::make_unique<ManagedRange>();
  drv::PhysicalRequest req;
  req.size = bytes;
  int rc = backend_->create_physical(req, &range->memory);
  if (rc != 0) return failed(Error(code_from_errno(rc), "no memory for the managed allocation"));
  Lock lock(mu_);
  uint64_t base = 0;
  if (bytes > window_size_ - reserved_total_ || window_ranges_ == nullptr ||
      !window_ranges_->reserve_managed(bytes, &base).ok()) {
    Status full = Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                        fmt::format("managed memory is limited to {} bytes per process; {} are in use",
                                    window_size_, reserved_total_));
    lock.unlock();
    return failed(full);
  }
  rc = backend_->map_cpu(base, bytes, *range->memory, 0, drv::CpuAccess::kReadWrite);
  if (rc == 0 && tracking_) {
    rc = tracker_->watch(base, bytes);
    if (rc != 0) backend_->unmap_cpu(base, bytes);
  }
  if (rc != 0) {
    window_ranges_->release_managed(base, bytes);
    lock.unlock();
    return failed(Error(code_from_errno(rc), "the managed range could not be mapped"));
  }
  range->base = base;
  range->size = bytes;
  range->requested = size;
  range->pages.resize(bytes / kPage);
  reserved_total_ += bytes;
  ranges_.emplace(base, std::move(range));
  return base;
}

Status ManagedMemory::free(uint64_t base, bool teardown) {
  std::unique_ptr<ManagedRange> range;
  {
    Lock lock(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end()) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   fmt::format("0x{:x} is not the start of a managed allocation", base));
    }
    ManagedRange& doomed = *it->second;
    // Unwatching wakes any thread still blocked on the range and drops its write protection;
    // the range is then unmapped. If the mapping cannot be removed, the allocation stays (and is
    // watched again): freeing it anyway would leave its memory mapped where the next allocation
    // lands.
    if (tracking_) tracker_->unwatch(doomed.base, doomed.size);
    const int rc = backend_->unmap_cpu(doomed.base, doomed.size);
    if (rc != 0 && !teardown) {
      if (tracking_) tracker_->watch(doomed.base, doomed.size);
      return Error(code_from_errno(rc), fmt::format("the managed range at 0x{:x} could not be "
                                                    "unmapped: errno {}", base, -rc));
    }
    range = std::move(it->second);
    ranges_.erase(it);
    for (ManagedPage& p : range->pages) {
      // Released, not migrated: the device charge goes back and nothing is counted.
      if (p.resident == kHostResident) continue;
      if (auto pool = devices_.pool(p.resident)) pool->uncharge(kPage);
      lru_.remove(p.resident, p.lru_stamp);
      p.resident = kHostResident;
    }
    reserved_total_ -= range->size;
    if (window_ranges_ != nullptr) window_ranges_->release_managed(range->base, range->size);
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

void ManagedMemory::serve_faults() {
  while (!stop_.load()) {
    drv::CpuFault fault;
    if (tracker_->next_fault(kFaultPollMs, &fault) != 0) continue;
    serve_fault(fault);
  }
}

void ManagedMemory::serve_fault(const drv::CpuFault& fault) {
  const uint64_t page_va = fault.address / kPage * kPage;
  // What the faulting thread gets when the page's state asks for nothing more: its own 4 KiB
  // page, as it was (an entry that was merely absent, or protection that is already gone).
  const uint64_t small = fault.address & ~uint64_t{4095};
  Lock lock(mu_);
  ManagedRange* r = find(page_va);
  if (!r) {
    // Freed meanwhile: unwatching woke the thread already; this only covers the race.
    if (fault.write_protect) tracker_->allow_writes(small, 4096);
    else tracker_->resolve(small, 4096);
    return;
  }
  const size_t i = (page_va - r->base) / kPage;
  ManagedPage& p = r->pages[i];
  if (fault.write_protect) {
    if (p.write_protected) {
      // A CPU write to a READ_MOSTLY page: the devices' read copies are stale from now on.
      stats_.read_copy_invalidations.fetch_add(1);
      trace::event("read_copy_invalidate", page_va, -1);
      drop_read_copies(*r, i);  // lets the writer in
    } else {
      tracker_->allow_writes(small, 4096);
    }
    return;
  }
  // Only a page whose CPU access was revoked comes back; a page the CPU reaches in place
  // (advice) merely had no page-table entry yet.
  if (p.resident != kHostResident && p.cpu_revoked) {
    stats_.host_faults.fetch_add(1);
    trace::event("cpu_fault", page_va, -1);
    if (to_host(*r, i, false)) return;
  }
  if (p.write_protected) {
    tracker_->resolve_read_only(small, 4096);
  } else {
    tracker_->resolve(small, 4096);
  }
}

std::vector<AddressRange> ManagedMemory::release_all() {
  std::vector<AddressRange> released;
  {
    Lock lock(mu_);
    for (auto& [base, r] : ranges_) released.push_back(AddressRange{base, r->size});
  }
  for (const AddressRange& r : released) (void)free(r.base, true);
  stop_tracking();
  Lock lock(mu_);
  tracking_failed_ = false;
  window_ranges_ = nullptr;  // the device backend goes with the runtime; the next start attaches
  return released;
}

size_t ManagedMemory::live() const {
  Lock lock(mu_);
  return ranges_.size();
}

std::string ManagedMemory::stats_json() const {
  return fmt::format(
      "{{\"fault_tracking\": {}, \"cpu_write_tracking\": {}, \"host_faults\": {}, "
      "\"device_faults\": {}, \"bytes_to_device\": {}, \"bytes_to_host\": {}, "
      "\"evictions\": {}, \"prefetch_bytes\": {}, \"read_copy_invalidations\": {}}}",
      tracking_ ? "true" : "false", write_tracking() ? "true" : "false",
      stats_.host_faults.load(), stats_.device_faults.load(), stats_.bytes_to_device.load(),
      stats_.bytes_to_host.load(), stats_.evictions.load(), stats_.prefetch_bytes.load(),
      stats_.read_copy_invalidations.load());
}

}  // namespace aclvmm
