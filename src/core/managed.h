// ManagedMemory: aclrtMemAllocManaged allocations and their migration model (emulation.md §6,
// behavior.md §10).
//
// A ManagedRange is one allocation in the UVM window: one memfd the CPU maps directly, and a
// residency per 2 MiB page (the host or one device). There is one copy of the bytes; residency
// decides who may touch a page without a migration. A device operation on a page that lives
// elsewhere migrates it to the executing device (charged to that device, evicting its least
// recently used managed pages when full) and revokes the CPU's access; the CPU's next access
// faults (userfaultfd, no signal handler), and the fault thread migrates the page back before
// the CPU continues. Advice changes the policy: READ_MOSTLY gives devices read copies instead of
// moving the page, PREFERRED_LOCATION keeps pages where they are preferred and lets others reach
// them in place, ACCESSED_BY keeps a processor's access while the page lives elsewhere.
// Without fault tracking every page stays on the host and device operations reach it in place.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/address_space.h"
#include "core/status.h"
#include "core/va_allocator.h"
#include "drivers/driver.h"

namespace aclvmm {

inline constexpr int kHostResident = -1;

// A location as the managed-memory calls name it (aclrtMemManagedLocationType values).
struct ManagedLocation {
  int type = 0;  // 0 invalid, 1 device, 2 host, 3 host NUMA
  int id = 0;    // physical device id (type 1) or NUMA node (type 3)
};

struct ManagedPage {
  int resident = kHostResident;
  uint64_t read_copies = 0;     // READ_MOSTLY: devices holding a read copy
  bool read_mostly = false;
  ManagedLocation preferred;    // type 0: none
  uint64_t accessed_by = 0;     // devices that keep access wherever the page lives
  bool accessed_by_host = false;
  ManagedLocation last_prefetch;
  uint64_t last_use = 0;        // LRU clock of the device residency
  bool cpu_revoked = false;     // the CPU's entries were dropped: its next access faults
};

struct ManagedRange {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  std::shared_ptr<drv::PhysicalMemory> memory;
  std::vector<ManagedPage> pages;
};

struct ManagedStats {
  std::atomic<uint64_t> host_faults{0};
  std::atomic<uint64_t> device_faults{0};
  std::atomic<uint64_t> bytes_to_device{0};
  std::atomic<uint64_t> bytes_to_host{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> prefetch_bytes{0};
};

class ManagedMemory {
 public:
  ~ManagedMemory();
  // The UVM window and the backend; starts fault tracking when the machine allows it.
  void attach(drv::Backend* backend, uint64_t window, uint64_t window_size);
  bool in_window(uint64_t va) const { return va - window_ < window_size_; }
  bool fault_tracking() const { return tracking_; }

  StatusOr<uint64_t> allocate(uint64_t size);
  Status free(uint64_t base);
  StatusOr<AddressRange> range_of(uint64_t va) const;

  // A device operation on [va, va+n): migrates as the policy says and returns the segments.
  Status device_access(uint64_t va, uint64_t n, int device, bool write, Translation* out);
  Status advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where);
  // Executed on a stream: migrates [va, va+size) to `where` (a device or the host).
  Status prefetch(uint64_t va, uint64_t size, const ManagedLocation& where);
  // The int32 results of one range attribute (behavior.md §10 encodings).
  StatusOr<std::vector<int32_t>> attribute(int attribute, uint64_t va, uint64_t size,
                                           size_t slots);

  // aclFinalize / exit: every range is released; returns how many there were.
  size_t release_all();
  size_t live() const;
  const ManagedStats& stats() const { return stats_; }

 private:
  using Lock = std::unique_lock<std::mutex>;
  ManagedRange* find(uint64_t va);
  const ManagedRange* find(uint64_t va) const;
  // Pages [first, last) of the ranges covering [va, va+size); 507899 if any is unallocated.
  Status pages_of(uint64_t va, uint64_t size, std::vector<std::pair<ManagedRange*, size_t>>* out);
  Status to_device(ManagedRange& r, size_t page, int device, Lock& lock);
  // true when it gave the CPU its access back.
  bool to_host(ManagedRange& r, size_t page, bool eviction);
  bool cpu_keeps_access(const ManagedPage& p) const;
  bool evict_one(int device);
  void serve_faults();
  void start_tracking();  // under mu_
  void stop_tracking();   // not under mu_

  drv::Backend* backend_ = nullptr;
  drv::FaultTracker* tracker_ = nullptr;
  bool tracking_ = false;
  uint64_t window_ = 0, window_size_ = 0;
  mutable std::mutex mu_;
  VaAllocator va_;
  std::map<uint64_t, std::unique_ptr<ManagedRange>> ranges_;
  uint64_t clock_ = 0;
  uint64_t reserved_total_ = 0;
  ManagedStats stats_;
  bool tracking_failed_ = false;
  std::thread* fault_thread_ = nullptr;
  pid_t fault_thread_pid_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace aclvmm
