#include "drivers/emu/unified/emu_unified.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <new>
#include <system_error>

#include "drivers/emu/os/placeholders.h"
#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/windows.h"
#include "drivers/emu/os/memfd_memory.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kPage = kManagedPage;
constexpr int kFaultPollMs = 100;
// Faults read and served at once, at most.
constexpr size_t kFaultBatch = 32;

}  // namespace

EmuUnified::EmuUnified(CapacityLedger& ledger, EmuWindows& windows, BackendListener& listener,
                       int32_t device_count, bool host_numa, int32_t numa_nodes)
    : ledger_(ledger),
      windows_(windows),
      listener_(listener),
      gate_(listener),
      device_count_(device_count),
      host_numa_(host_numa),
      numa_nodes_(numa_nodes),
      tracker_(listener) {}

EmuUnified::~EmuUnified() {
  std::vector<uint64_t> bases;
  {
    Lock lock(mu_);
    for (const auto& [base, r] : ranges_) bases.push_back(base);
  }
  for (uint64_t base : bases) (void)free(base, FreeMode::kTeardown);
  std::lock_guard life(life_mu_);
  stop_tracking_life_locked(false);
}

int EmuUnified::gated(const char* step) const { return gate_.check(step).raw(); }

void EmuUnified::event(const char* what, uint64_t va, DeviceIndex device) {
  listener_.residency_event(ResidencyEvent{what, va, device});
}

Result EmuUnified::start_tracking() {
  // Started with the first allocation and stopped with the backend, so an application that
  // never uses managed memory has no descriptor or thread for it.
  if (tracking_ || tracking_failed_) return Result::success();
  int rc = tracker_.start();
  if (rc != 0) {
    tracking_failed_ = true;
    char line[160];
    std::snprintf(line, sizeof line, "CPU fault tracking is unavailable (errno %d): managed memory "
                  "stays on the host and devices reach it in place", -rc);
    listener_.log(Severity::kWarning, "RUNTIME", line);
    return Result::success();
  }
  stop_.store(false);
  try {
    fault_thread_ = new std::thread([this] { serve_faults(); });
  } catch (const std::exception&) {  // std::system_error (no thread) or std::bad_alloc
    // Rollback: no descriptor stays open. A later allocation tries again (the machine may have
    // threads to spare by then), so this is not the permanent "unavailable" above.
    tracker_.stop();
    return Result::from_errno(EAGAIN);
  }
  tracking_ = true;
  return Result::success();
}

void EmuUnified::stop_tracking_life_locked(bool only_if_unused) {
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
  tracker_.stop();
}

ManagedRange* EmuUnified::find(uint64_t va) const {
  auto it = ranges_.upper_bound(va);
  if (it == ranges_.begin()) return nullptr;
  --it;
  return va - it->second->base < it->second->size ? it->second.get() : nullptr;
}

ManagedTracking EmuUnified::tracking() const { return ManagedTracking{tracking_, write_tracking()}; }

Result EmuUnified::allocate(uint64_t bytes, uint64_t* address) {
  if (address == nullptr || bytes == 0 || bytes % kPage != 0) return Result::from_errno(EINVAL);
  if (bytes > windows_.layout().managed.size) return Result::from_errno(ENOMEM);
  std::lock_guard life(life_mu_);
  bool started_here = false;
  {
    Lock lock(mu_);
    started_here = !tracking_;
    if (Result r = start_tracking(); !r.ok()) return r;  // nothing was started
    started_here = started_here && tracking_;
  }
  // Rollback: tracking this call started (a descriptor and a thread) stops again when the call
  // fails and no other range uses it.
  auto failed = [&](Result r) {
    if (started_here) stop_tracking_life_locked(true);
    return r;
  };
  std::unique_ptr<ManagedRange> range(new (std::nothrow) ManagedRange());
  if (!range) return failed(Result::from_errno(ENOMEM));
  int rc = gated(steps::kEmuMemfdCreate);
  if (rc == 0) rc = os::MemfdMemory::create(bytes, &range->memory);
  if (rc != 0) return failed(Result::from_raw(rc));
  Lock lock(mu_);
  uint64_t base = 0;
  if (Result placed = windows_.place_managed(bytes, &base); !placed.ok()) {
    lock.unlock();
    return failed(Result::from_errno(ENOMEM));
  }
  rc = gated(steps::kEmuCpuMap);
  if (rc == 0) rc = os::map_cpu(base, bytes, *range->memory, 0, os::CpuAccess::kReadWrite);
  if (rc == 0 && tracking_) {
    rc = tracker_.watch(base, bytes);
    if (rc != 0 && gated(steps::kEmuCpuUnmap) == 0) (void)os::unmap_cpu(base, bytes);
  }
  try {
    if (rc == 0) {
      range->base = base;
      range->size = bytes;
      range->pages.resize(bytes / kPage);
      ranges_.emplace(base, std::move(range));
    }
  } catch (const std::bad_alloc&) {
    if (tracking_) (void)tracker_.unwatch(base, bytes);
    (void)os::unmap_cpu(base, bytes);
    rc = -ENOMEM;
  }
  if (rc != 0) {
    windows_.free_managed(base, bytes);
    lock.unlock();
    return failed(Result::from_raw(rc));
  }
  *address = base;
  return Result::success();
}

Result EmuUnified::free(uint64_t base, FreeMode mode) {
  std::unique_ptr<ManagedRange> range;
  {
    Lock lock(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end()) return Result::from_errno(EINVAL);
    ManagedRange& doomed = *it->second;
    // Unwatching wakes any thread still blocked on the range and drops its write protection;
    // the range is then unmapped. If the mapping cannot be removed, the allocation stays (and is
    // watched again): freeing it anyway would leave its memory mapped where the next allocation
    // lands.
    if (tracking_) (void)tracker_.unwatch(doomed.base, doomed.size);
    int rc = gated(steps::kEmuCpuUnmap);
    if (rc == 0) rc = os::unmap_cpu(doomed.base, doomed.size);
    if (rc != 0 && mode != FreeMode::kTeardown) {
      if (tracking_) (void)tracker_.watch(doomed.base, doomed.size);
      return Result::from_raw(rc);
    }
    range = std::move(it->second);
    ranges_.erase(it);
    for (ManagedPage& p : range->pages) {
      // Released, not migrated: the device charge goes back and nothing is counted.
      if (p.resident == kNoDevice) continue;
      ledger_.uncharge(Location::device(p.resident), kPage);
      lru_.remove(p.resident, p.lru_stamp);
      p.resident = kNoDevice;
    }
    windows_.free_managed(range->base, range->size);
  }
  return Result::success();
}

Result EmuUnified::pages_of(uint64_t va, uint64_t size, Pages* out) const {
  const uint64_t window = windows_.layout().managed.size;
  if (size == 0 || size > window || va + size < va) return Result::from_errno(EFAULT);
  const uint64_t first = va / kPage * kPage;
  for (uint64_t page = first; page < va + size; page += kPage) {
    ManagedRange* r = find(page);
    if (!r) return Result::from_errno(EFAULT);
    out->emplace_back(r, (page - r->base) / kPage);
  }
  return Result::success();
}

Result EmuUnified::reach(uint64_t va, uint64_t left, std::shared_ptr<os::PhysicalMemory>* memory,
                         uint64_t* offset, uint64_t* length) const {
  Lock lock(mu_);
  const ManagedRange* r = find(va);
  if (r == nullptr) return Result::from_errno(EFAULT);
  *memory = r->memory;
  *offset = va - r->base;
  *length = std::min(left, r->base + r->size - va);
  return Result::success();
}

Result EmuUnified::populate(os::PhysicalMemory& memory, uint64_t offset, uint64_t n) {
  int rc = gated(steps::kEmuMemfdPopulate);
  if (rc == 0) rc = memory.populate(offset, n);
  return Result::from_raw(rc);
}

void EmuUnified::serve_faults() {
  // Faults pending together (threads touching several device-resident pages at once) are read
  // and served as one batch: one read and one hold of mu_ for all of them.
  CpuFault faults[kFaultBatch];
  while (!stop_.load()) {
    const int n = tracker_.next_faults(kFaultPollMs, faults, kFaultBatch);
    if (n <= 0) continue;
    serve_batch(faults, static_cast<size_t>(n));
  }
}

void EmuUnified::count_batch(size_t n) {
  counters_.fault_batches.fetch_add(1, std::memory_order_relaxed);
  counters_.cpu_faults.fetch_add(n, std::memory_order_relaxed);
  // Only the fault thread writes the maximum.
  if (n > counters_.fault_batch_max.load(std::memory_order_relaxed)) {
    counters_.fault_batch_max.store(n, std::memory_order_relaxed);
  }
  const size_t bucket = n >= 16 ? 4 : n >= 8 ? 3 : n >= 4 ? 2 : n >= 2 ? 1 : 0;
  counters_.fault_batch_sizes[bucket].fetch_add(1, std::memory_order_relaxed);
}

void EmuUnified::serve_batch(const CpuFault* faults, size_t n) {
  count_batch(n);
  Lock lock(mu_);
  for (size_t i = 0; i < n; ++i) serve_fault_locked(faults[i]);
}

void EmuUnified::serve_fault_locked(const CpuFault& fault) {
  const uint64_t page_va = fault.address / kPage * kPage;
  // What the faulting thread gets when the page's state asks for nothing more: its own 4 KiB
  // page, as it was (an entry that was merely absent, or protection that is already gone).
  const uint64_t small = fault.address & ~uint64_t{4095};
  ManagedRange* r = find(page_va);
  if (!r) {
    // Freed meanwhile: unwatching woke the thread already; this only covers the race.
    if (fault.write_protect) (void)tracker_.allow_writes(small, 4096);
    else (void)tracker_.resolve(small, 4096);
    return;
  }
  const size_t i = (page_va - r->base) / kPage;
  ManagedPage& p = r->pages[i];
  if (fault.write_protect) {
    if (p.write_protected) {
      // A CPU write to a READ_MOSTLY page: the devices' read copies are stale from now on.
      counters_.read_copy_invalidations.fetch_add(1);
      event("read_copy_invalidate", page_va, kNoDevice);
      drop_read_copies(*r, i);  // lets the writer in
    } else {
      (void)tracker_.allow_writes(small, 4096);
    }
    return;
  }
  // Only a page whose CPU access was revoked comes back; a page the CPU reaches in place
  // (advice) merely had no page-table entry yet.
  if (p.resident != kNoDevice && p.cpu_revoked) {
    counters_.host_faults.fetch_add(1);
    event("cpu_fault", page_va, kNoDevice);
    if (to_host(*r, i, false, small)) return;
  }
  if (p.write_protected) {
    (void)tracker_.resolve_read_only(small, 4096);
  } else {
    (void)tracker_.resolve(small, 4096);
  }
}

void EmuUnified::visit_statistics(StatisticsVisitor& visitor) const {
  visitor.flag("managed", "fault_tracking", tracking_);
  visitor.flag("managed", "cpu_write_tracking", write_tracking());
  visitor.counter("managed", "host_faults", counters_.host_faults.load());
  visitor.counter("managed", "device_faults", counters_.device_faults.load());
  visitor.counter("managed", "bytes_to_device", counters_.bytes_to_device.load());
  visitor.counter("managed", "bytes_to_host", counters_.bytes_to_host.load());
  visitor.counter("managed", "evictions", counters_.evictions.load());
  visitor.counter("managed", "prefetch_bytes", counters_.prefetch_bytes.load());
  visitor.counter("managed", "read_copy_invalidations", counters_.read_copy_invalidations.load());
  // How the fault thread found the faults: in how many reads, and how many at once.
  visitor.counter("managed", "cpu_faults", counters_.cpu_faults.load());
  visitor.counter("managed", "fault_batches", counters_.fault_batches.load());
  visitor.counter("managed", "fault_batch_max", counters_.fault_batch_max.load());
  static const char* const kBucketNames[kBatchBuckets] = {
      "fault_batches_of_1", "fault_batches_of_2_3", "fault_batches_of_4_7", "fault_batches_of_8_15",
      "fault_batches_of_16_plus"};
  for (size_t b = 0; b < kBatchBuckets; ++b) {
    visitor.counter("managed", kBucketNames[b], counters_.fault_batch_sizes[b].load());
  }
}

}  // namespace aclvmm::dev::emu
