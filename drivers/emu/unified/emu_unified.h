// EmuUnified: emu's UnifiedMemory (drivers/unified_memory.h; emulation.md §6, behavior.md §10),
// the residency model that was the core's ManagedMemory until migration step 6.
//
// A range is one allocation in WindowLayout::managed: one memfd the CPU maps directly, and a
// residency per 2 MiB page (the host or one device). There is one copy of the bytes; residency
// decides who may touch a page without a migration. A device operation on a page that lives
// elsewhere (a copy engine command with a kManaged endpoint: prepare()) migrates it to the
// executing device (charged to that device in the CapacityLedger, D8, evicting its least
// recently used managed pages when full) and revokes the CPU's access; the CPU's next access
// faults (userfaultfd, no signal handler), and the fault thread migrates the page back before
// the CPU continues. Advice changes the policy: READ_MOSTLY gives devices read copies instead of
// moving the page, PREFERRED_LOCATION keeps pages where they are preferred and lets others reach
// them in place, ACCESSED_BY keeps a processor's access while the page lives elsewhere.
// Read copies are write-protected for the CPU where the kernel can track writes, so a CPU write
// invalidates them (the next device read takes a new copy). HOST_NUMA locations place the host
// copy of a page on that node. Eviction picks the device's least recently used page from a
// per-device LRU (residency_lru.h). Without fault tracking every page stays on the host and
// device operations reach it in place.
//
// Device ids are driver ids throughout (the core converts user ids). Each migration is a
// BackendListener::residency_event (the core's trace), each charge a usage_changed (the
// ledger's). Failure injection: emu.memfd.create, emu.cpu.map, emu.cpu.unmap, emu.numa.bind,
// emu.memfd.populate and emu.cpu_fault.* (fault_tracker.h), where the core's path met the
// same steps by their drv.* names before step 6.
//
// Threading: every method from any thread. Lock order: life_mu_ (starting and stopping fault
// tracking), then mu_ (the ranges, their pages and the LRU); the fault thread takes mu_ only.
// Under mu_ the unit calls the listener, the ledger and the kernel. Fork: the child calls
// after_fork_child() only (the inherited descriptor is the parent's).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "drivers/backend_listener.h"
#include "drivers/copy_engine.h"
#include "drivers/device_backend.h"
#include "drivers/emu/os/physical_memory.h"
#include "drivers/emu/unified/fault_tracker.h"
#include "drivers/emu/unified/residency_lru.h"
#include "drivers/unified_memory.h"

namespace aclvmm::dev::emu {

class CapacityLedger;
class EmuWindows;

inline constexpr uint64_t kManagedPage = 2 * kMiB;  // managed memory migrates in 2 MiB pages

struct ManagedPage {
  DeviceIndex resident = kNoDevice;  // kNoDevice: the host
  uint64_t read_copies = 0;     // READ_MOSTLY: devices holding a read copy
  bool read_mostly = false;
  Location preferred;           // kind kNone: none
  uint64_t accessed_by = 0;     // devices that keep access wherever the page lives
  bool accessed_by_host = false;
  Location last_prefetch;
  uint64_t lru_stamp = 0;       // its entry in the resident device's LRU (0: none)
  bool cpu_revoked = false;     // the CPU's entries were dropped: its next access faults
  bool write_protected = false; // CPU writes fault: read copies exist (READ_MOSTLY)
};

struct ManagedRange {
  uint64_t base = 0;
  uint64_t size = 0;
  std::shared_ptr<os::PhysicalMemory> memory;
  std::vector<ManagedPage> pages;
};

class EmuUnified final : public UnifiedMemory {
 public:
  // host_numa: ACLVMM_HOST_NUMA is not off; numa_nodes: the host's nodes (0 without NUMA).
  EmuUnified(CapacityLedger& ledger, EmuWindows& windows, BackendListener& listener,
             int32_t device_count, bool host_numa, int32_t numa_nodes);
  ~EmuUnified() override;
  EmuUnified(const EmuUnified&) = delete;
  EmuUnified& operator=(const EmuUnified&) = delete;

  Result allocate(uint64_t size, uint64_t* address) override;
  Result free(uint64_t address, FreeMode mode) override;
  Result advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) override;
  Result prefetch(uint64_t address, uint64_t size, Location target) override;
  Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size, int32_t* values,
                   size_t slots) override;
  ManagedTracking tracking() const override;

  // For the copy engine's kManaged endpoints (copy_engine.cpp). prepare(): the policy for the
  // executor over the pages of [va, va+n) (migrations, read copies; nothing without a device):
  // kBadAddress when a page is not allocated, kOutOfMemory when the device is full with nothing
  // to evict. reach(): the bytes at va, to the end of its range or `left` (*length), with the
  // copy's own reference on the memfd; kBadAddress outside every range.
  Result prepare(uint64_t va, uint64_t n, bool write, const Executor& who);
  Result reach(uint64_t va, uint64_t left, std::shared_ptr<os::PhysicalMemory>* memory,
               uint64_t* offset, uint64_t* length) const;
  // The step a zero fill of managed memory takes after the hole is punched: fault tracking
  // hands the CPU existing pages only.
  Result populate(os::PhysicalMemory& memory, uint64_t offset, uint64_t n);

  // Group "managed" of DeviceBackend::visit_statistics.
  void visit_statistics(StatisticsVisitor& visitor) const;
  // A forked child: closes its copy of the parent's descriptor, nothing else.
  void after_fork_child() { tracker_.abandon(); }

 private:
  using Lock = std::unique_lock<std::mutex>;
  using Pages = std::vector<std::pair<ManagedRange*, size_t>>;
  // Fault batches by size: 1, 2-3, 4-7, 8-15, 16 and more.
  static constexpr size_t kBatchBuckets = 5;
  struct Counters {
    std::atomic<uint64_t> host_faults{0}, device_faults{0}, bytes_to_device{0}, bytes_to_host{0},
        evictions{0}, prefetch_bytes{0}, read_copy_invalidations{0};
    // The fault thread's reads: batches, the faults they held, the largest, and their sizes.
    std::atomic<uint64_t> fault_batches{0}, cpu_faults{0}, fault_batch_max{0};
    std::atomic<uint64_t> fault_batch_sizes[kBatchBuckets] = {};
  };

  ManagedRange* find(uint64_t va) const;
  // The pages of the ranges covering [va, va+size); kBadAddress if any is unallocated.
  Result pages_of(uint64_t va, uint64_t size, Pages* out) const;
  bool write_tracking() const { return tracking_ && tracker_.tracks_writes(); }
  void event(const char* what, uint64_t va, DeviceIndex device);
  bool valid_device(DeviceIndex d) const { return d >= 0 && d < device_count_; }
  int gated(const char* step) const;

  // residency.cpp: the migration model.
  Result to_device(ManagedRange& r, size_t page, DeviceIndex device);
  // true when it gave the CPU its access back. `first` (a fault's 4 KiB page in it, or 0) is
  // given back before the rest of the page, so that the faulting thread runs again at once.
  bool to_host(ManagedRange& r, size_t page, bool eviction, uint64_t first = 0);
  bool cpu_keeps_access(const ManagedPage& p) const;
  bool evict_one(DeviceIndex device);
  // A device takes a read copy of a READ_MOSTLY page; CPU writes are caught from then on.
  void add_read_copy(ManagedRange& r, size_t page, DeviceIndex device);
  // Drops every read copy (a write happened or the advice went) and lets CPU writes in again.
  void drop_read_copies(ManagedRange& r, size_t page);
  // The CPU's view changes with residency or advice: revoke or restore its access.
  void sync_cpu_access(ManagedRange& r, size_t page);
  // Host copy of the page on NUMA node `node` (-1: default policy); best effort.
  void place_on_node(ManagedRange& r, size_t page, int node);

  // emu_unified.cpp: ranges and the fault thread.
  void serve_faults();
  // A batch of faults read at once, under one hold of mu_. Faults on the same 2 MiB page are
  // served by its first migration; each still gets its own 4 KiB page resolved.
  void serve_batch(const CpuFault* faults, size_t n);
  void serve_fault_locked(const CpuFault& fault);
  void count_batch(size_t n);
  // Under life_mu_ and mu_. EAGAIN when the fault thread cannot be created (nothing stays
  // started); a machine without fault tracking is not an error (the pages stay on the host).
  Result start_tracking();
  // Under life_mu_, not under mu_. `only_if_unused`: only when no range is live (a failed first
  // allocation gives back the tracking it started).
  void stop_tracking_life_locked(bool only_if_unused);

  CapacityLedger& ledger_;
  EmuWindows& windows_;
  BackendListener& listener_;
  const InjectionGate gate_;
  const int32_t device_count_;
  const bool host_numa_;
  const int32_t numa_nodes_;
  UffdFaultTracker tracker_;  // with the listener's gate
  std::atomic<bool> tracking_{false};
  // Starting and stopping fault tracking, held across the fault thread's join (which mu_ cannot
  // be: the thread takes mu_), so a start never overlaps a stop. The fault thread never takes it.
  std::mutex life_mu_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<ManagedRange>> ranges_;
  ResidencyLru lru_;
  Counters counters_;
  bool tracking_failed_ = false;
  std::thread* fault_thread_ = nullptr;
  std::atomic<bool> stop_{false};
};

}  // namespace aclvmm::dev::emu
