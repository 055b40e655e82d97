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
// Read copies are write-protected for the CPU where the kernel can track writes, so a CPU write
// invalidates them (the next device read takes a new copy). HOST_NUMA locations place the host
// copy of a page on that node (libnuma, through the backend). Eviction picks the device's least
// recently used page from a per-device LRU (managed_lru.h).
// Without fault tracking every page stays on the host and device operations reach it in place.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/lock_rank.h"
#include "base/status.h"
#include "drivers/driver.h"
#include "vmm/address_space.h"
#include "vmm/device_directory.h"
#include "vmm/managed_lru.h"

namespace aclvmm {

inline constexpr int kHostResident = -1;
inline constexpr uint64_t kManagedPage = kChunk;  // managed memory migrates in 2 MiB pages

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
  uint64_t lru_stamp = 0;       // its entry in the resident device's LRU (0: none)
  bool cpu_revoked = false;     // the CPU's entries were dropped: its next access faults
  bool write_protected = false; // CPU writes fault: read copies exist (READ_MOSTLY)
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
  std::atomic<uint64_t> read_copy_invalidations{0};
};

class ManagedMemory {
 public:
  // `devices`: the pools pages are charged to, the user ids attributes report, whether the host
  // has NUMA; it outlives this object (the runtime that owns both).
  explicit ManagedMemory(const DeviceDirectory& devices) : devices_(devices) {}
  ~ManagedMemory();
  // The backend, the UVM window (the device backend's, WindowLayout::managed) and what places
  // ranges in it (`ranges`: the device backend's LegacyMemory, until step 6; null: no managed
  // memory). Each runtime start, before the first allocation; fault tracking starts with it.
  void attach(drv::Backend* backend, dev::VaRange window, dev::LegacyMemory* ranges);
  bool in_window(uint64_t va) const { return va - window_ < window_size_; }
  bool fault_tracking() const { return tracking_; }
  // CPU writes to READ_MOSTLY pages invalidate the devices' read copies.
  bool write_tracking() const { return tracking_ && tracker_->tracks_writes(); }

  StatusOr<uint64_t> allocate(uint64_t size);
  // `teardown`: the range goes even when its CPU mapping cannot be removed (nothing can be
  // reported back); otherwise that failure leaves the allocation as it was.
  Status free(uint64_t base, bool teardown = false);
  StatusOr<AddressRange> range_of(uint64_t va) const;

  // A device operation on [va, va+n): migrates as the policy says and returns the segments.
  Status device_access(uint64_t va, uint64_t n, int device, bool write, Translation* out);
  Status advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where);
  // Executed on a stream: migrates [va, va+size) to `where` (a device or the host).
  Status prefetch(uint64_t va, uint64_t size, const ManagedLocation& where);
  // The int32 results of one range attribute (behavior.md §10 encodings).
  StatusOr<std::vector<int32_t>> attribute(int attribute, uint64_t va, uint64_t size,
                                           size_t slots);

  // aclFinalize / exit: every range is released; returns them (base, rounded size) for the leak
  // report.
  std::vector<AddressRange> release_all();
  size_t live() const;
  const ManagedStats& stats() const { return stats_; }
  // The "managed" object of aclvmmStatsJson.
  std::string stats_json() const;

 private:
  using RangesMutex = RankedMutex<LockRank::kManagedRanges>;
  using Lock = std::unique_lock<RangesMutex>;
  static Status not_allocated(uint64_t va);
  ManagedRange* find(uint64_t va);
  const ManagedRange* find(uint64_t va) const;
  // Pages [first, last) of the ranges covering [va, va+size); 507899 if any is unallocated.
  Status pages_of(uint64_t va, uint64_t size, std::vector<std::pair<ManagedRange*, size_t>>* out);
  Status to_device(ManagedRange& r, size_t page, int device);
  // true when it gave the CPU its access back.
  bool to_host(ManagedRange& r, size_t page, bool eviction);
  bool cpu_keeps_access(const ManagedPage& p) const;
  bool evict_one(int device);
  // A device takes a read copy of a READ_MOSTLY page; CPU writes are caught from then on.
  void add_read_copy(ManagedRange& r, size_t page, int device);
  // Drops every read copy (a write happened or the advice went) and lets CPU writes in again.
  void drop_read_copies(ManagedRange& r, size_t page);
  // The CPU's view changes with residency or advice: revoke or restore its access.
  void sync_cpu_access(ManagedRange& r, size_t page);
  // Host copy of the page on NUMA node `node` (-1: default policy); best effort.
  void place_on_node(ManagedRange& r, size_t page, int node);
  void serve_faults();
  void serve_fault(const drv::CpuFault& fault);
  // Under life_mu_ and mu_. 207005 when the fault thread cannot be created (nothing stays
  // started); a machine without fault tracking is not an error (the pages stay on the host).
  Status start_tracking();
  void stop_tracking();   // takes life_mu_; not under mu_
  // Under life_mu_, not under mu_. `only_if_unused`: only when no range is live (a failed first
  // allocation gives back the tracking it started).
  void stop_tracking_life_locked(bool only_if_unused);

  drv::Backend* backend_ = nullptr;
  drv::FaultTracker* tracker_ = nullptr;
  std::atomic<bool> tracking_{false};
  const DeviceDirectory& devices_;
  uint64_t window_ = 0, window_size_ = 0;
  // Starting and stopping fault tracking, held across the fault thread's join (which mu_ cannot
  // be: the thread takes mu_), so a start never overlaps a stop. The fault thread never takes it.
  RankedMutex<LockRank::kManagedLifetime> life_mu_;
  mutable RangesMutex mu_;
  dev::LegacyMemory* window_ranges_ = nullptr;  // under mu_: places ranges in the UVM window
  std::map<uint64_t, std::unique_ptr<ManagedRange>> ranges_;
  ResidencyLru lru_;
  uint64_t reserved_total_ = 0;
  ManagedStats stats_;
  bool tracking_failed_ = false;
  std::thread* fault_thread_ = nullptr;
  std::atomic<bool> stop_{false};
};

}  // namespace aclvmm
