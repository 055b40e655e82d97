// The emu backend's fault tracker: userfaultfd minor faults on shared memfd mappings.
//
// A revoked range keeps its bytes in the memfd's page cache; only the CPU's page-table entries are
// dropped. Registered in minor mode, the next CPU access to such a page finds the page in the cache
// but no entry for it, so the kernel blocks the thread and queues a message instead of mapping the
// page; UFFDIO_CONTINUE maps the cached pages (with whatever the device wrote meanwhile) and wakes
// the thread. Nothing is process-wide: no signal handler, only this descriptor's ranges.
//
// Things the caller must know:
// - Registration belongs to the mapping, not to the address: a new mmap over a watched range
//   (map_cpu, unmap_cpu) drops it, so the range must be watched again after remapping.
// - Kernel-mode accesses: the descriptor is created user-mode-only when the kernel allows it (that
//   is what lets an unprivileged process use it), and then a system call or process_vm_readv
//   (host_copy) touching a revoked page fails with EFAULT instead of waiting: resolve such pages
//   before handing them to the kernel. user_mode_only() tells which kind was created.
// - Only pages present in the memfd's page cache can be handed back; populate() them before
//   revoking. A page that left the cache anyway (a hole punched by fill(0)) is not mapped by
//   resolve(); its waiters are woken and then fault the page in normally (it reads as zeros).
// - Write tracking: ranges are registered for write-protect faults as well when the kernel offers
//   them on shmem. Protection lives in the page-table entries (markers where no entry exists), so
//   allow_writes() a range before revoking it: a revoked page must come back writable.
// - Failure injection: given a gate (emu's UnifiedMemory gives its listener's), each operation
//   first checks its step, emu.cpu_fault.<operation> (drv.uffd_* by the legacy names), and
//   returns the rule's -errno without acting; abandon() and stop() have none.
// - fork(): without UFFD_FEATURE_EVENT_FORK the child's mappings are not registered (its accesses
//   fault normally), but the inherited descriptor still refers to the parent's address space: every
//   ioctl on it acts on the parent's ranges and a read takes the parent's faults. A forked child
//   calls only abandon(), which closes the child's copy of the descriptor and nothing else.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "drivers/backend_listener.h"

namespace aclvmm::dev::emu {

struct CpuFault {
  uint64_t address = 0;
  bool write = false;
  bool write_protect = false;  // a write to a page protected by protect_writes()
};

// The CPU's access to a watched range is revoked; its next CPU access blocks and is reported by
// next_fault(); resolve() lets the CPU in again and wakes the blocked thread. Watched ranges are
// MAP_SHARED views of an os::PhysicalMemory's descriptor, in 2 MiB-aligned pieces.
//
// Every method is thread-safe. Before start() succeeds, the others return -EBADF.
// Ranges must be page-aligned and non-empty (-EINVAL).
class UffdFaultTracker final {
 public:
  UffdFaultTracker() = default;
  explicit UffdFaultTracker(dev::BackendListener& listener) : gate_(std::in_place, listener) {}
  // Closing the descriptor unregisters every watched range and wakes every blocked thread.
  ~UffdFaultTracker();
  UffdFaultTracker(const UffdFaultTracker&) = delete;
  UffdFaultTracker& operator=(const UffdFaultTracker&) = delete;

  // 0 when faults can be tracked on this machine; idempotent. -EOPNOTSUPP when the kernel cannot
  // report minor faults on shmem, -EPERM where userfaultfd is not allowed.
  int start();
  bool started() const { return fd_.load(std::memory_order_acquire) >= 0; }
  // Closes the tracker (nothing may be watched any more); start() may open it again.
  void stop();
  // In a forked child, on the tracker inherited from the parent: lets go of it without acting
  // on it. Whatever it tracks belongs to the parent (unregistering or waking would act on the
  // parent's ranges, and reading its faults would steal them), and a lock of the parent's may be
  // held. The object is not used again.
  void abandon();
  bool user_mode_only() const { return user_mode_only_.load(std::memory_order_acquire); }

  int watch(uint64_t va, uint64_t size);
  // Also wakes threads blocked in the range: the kernel does that itself for missing-mode ranges
  // only, and a minor-mode waiter would otherwise sleep until the descriptor is closed.
  int unwatch(uint64_t va, uint64_t size);
  // The CPU's next access to [va, va+size) faults (the bytes stay in the physical memory).
  int revoke(uint64_t va, uint64_t size);
  // The CPU may access [va, va+size) again. Every thread blocked in the range is woken, whatever
  // the result; also after the range was unwatched or remapped in the meantime.
  int resolve(uint64_t va, uint64_t size);
  // Waits up to timeout_ms for a fault: 0 with *fault set, -ETIMEDOUT, or -errno. timeout_ms < 0
  // waits without limit. Several threads faulting on one page give several faults.
  int next_fault(int timeout_ms, CpuFault* fault);
  // The same for a batch: waits as next_fault() for the first fault, then takes every fault
  // already pending as well, up to `max`, in one read (UVM services faults in batches too). The
  // number of faults in out[0..n), or -ETIMEDOUT / -errno.
  int next_faults(int timeout_ms, CpuFault* out, size_t max);

  // Write tracking: uffd write-protection on shmem (Linux 5.19+), asked for at start() and used
  // when granted. A CPU write to a protected page blocks and is reported with write_protect set,
  // while reads go on unhindered.
  bool tracks_writes() const { return tracks_writes_.load(std::memory_order_acquire); }
  // -EOPNOTSUPP without write tracking.
  int protect_writes(uint64_t va, uint64_t size);
  // Lets writes in again and wakes the writers blocked in the range.
  int allow_writes(uint64_t va, uint64_t size);
  // As resolve(), but the pages come back write-protected (resolve() without write tracking):
  // maps without waking, protects, then wakes, so that no waiter can slip a write in between.
  int resolve_read_only(uint64_t va, uint64_t size);

 private:
  int fd() const { return fd_.load(std::memory_order_acquire); }
  // The rule's -errno for `step`, 0 without a gate or a rule.
  int injected(const char* step) const { return gate_ ? gate_->check(step).raw() : 0; }
  int resolve_unchecked(uint64_t va, uint64_t size);
  int protect_unchecked(uint64_t va, uint64_t size);
  int resolve_pages(int fd, uint64_t va, uint64_t end, uint64_t mode);

  const std::optional<dev::InjectionGate> gate_;
  std::mutex start_mu_;
  std::atomic<int> fd_{-1};
  std::atomic<bool> user_mode_only_{false};
  std::atomic<bool> tracks_writes_{false};
};

}  // namespace aclvmm::dev::emu
