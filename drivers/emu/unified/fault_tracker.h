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
#include <cstdint>
#include <mutex>
#include <optional>

#include "drivers/backend_listener.h"
#include "drivers/driver.h"

namespace aclvmm::drv::emu {

// Every method is thread-safe. Before start() succeeds, the others return -EBADF.
// Ranges must be page-aligned and non-empty (-EINVAL).
class UffdFaultTracker final : public FaultTracker {
 public:
  UffdFaultTracker() = default;
  explicit UffdFaultTracker(dev::BackendListener& listener) : gate_(std::in_place, listener) {}
  // Closing the descriptor unregisters every watched range and wakes every blocked thread.
  ~UffdFaultTracker() override;
  UffdFaultTracker(const UffdFaultTracker&) = delete;
  UffdFaultTracker& operator=(const UffdFaultTracker&) = delete;

  // -EOPNOTSUPP when the kernel cannot report minor faults on shmem.
  int start() override;
  bool started() const override { return fd_.load(std::memory_order_acquire) >= 0; }
  void stop() override;
  void abandon() override;
  bool user_mode_only() const { return user_mode_only_.load(std::memory_order_acquire); }

  int watch(uint64_t va, uint64_t size) override;
  // Also wakes threads blocked in the range: the kernel does that itself for missing-mode ranges
  // only, and a minor-mode waiter would otherwise sleep until the descriptor is closed.
  int unwatch(uint64_t va, uint64_t size) override;
  int revoke(uint64_t va, uint64_t size) override;
  // Every thread blocked in the range is woken, whatever the result; also after the range was
  // unwatched or remapped in the meantime.
  int resolve(uint64_t va, uint64_t size) override;
  // timeout_ms < 0 waits without limit. Several threads faulting on one page give several faults.
  int next_fault(int timeout_ms, CpuFault* fault) override;

  // uffd write-protection on shmem (Linux 5.19+), asked for at start() and used when granted.
  bool tracks_writes() const override { return tracks_writes_.load(std::memory_order_acquire); }
  int protect_writes(uint64_t va, uint64_t size) override;
  int allow_writes(uint64_t va, uint64_t size) override;
  // Maps without waking, protects, then wakes: no waiter can slip a write in between.
  int resolve_read_only(uint64_t va, uint64_t size) override;

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

}  // namespace aclvmm::drv::emu
