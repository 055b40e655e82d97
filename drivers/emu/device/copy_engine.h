// EmuCopyEngine: CopyEngine of the emulated NPU: the synchronous form (copy, fill) below, and
// the queues (CopyEngineBase: one host thread per queue, drivers/command_queues.h, the thread's
// creation the step emu.queue.thread), whose kCopy / kFill commands run this copy() / fill() on
// the queue's thread, so a queued copy is translated when it runs (D4).
//
// A copy translates its addresses when it executes (D4): each kMapped endpoint is looked up in
// the device page table (page_table.h) piece by piece, one MmuEntry at a time, so a range may
// run across mappings and blocks. The entry is found under a hazard slot (hazard.h: slot 0 for
// the source, 1 for the destination), the executor's rights are checked there (copy_rights.h),
// and the copy takes its own reference on the entry's EmuPhysical before it gives the slot
// back, so an unmap racing the copy can neither free the entry being read nor the memory being
// copied. Before it moves a byte, a copy walks its mapped sides whole the same way, so that a
// copy refused for an address or a right changes nothing (as the core's own translation did
// before step 3); the pieces are then translated again as they are moved. Bytes move through the object's memfd (MemfdMemory read / write / copy_to / fill).
// kHostMemory endpoints are process memory reached by the guarded host copy (host_copy.h): a bad
// pointer is -EFAULT, never a fault; the first address that cannot be reached is then found by
// probing the host range page by page (the failure path only). kManaged endpoints are managed
// memory (unified/emu_unified.h): before a byte moves, the unit applies its residency policy for
// the executor to the whole range (the destination first), so a refused migration (kBadAddress,
// kOutOfMemory: the device is full with nothing to evict) moves no byte; the bytes then move
// through the range's memfd, one piece per range, with the same steps as device memory (and
// emu.memfd.populate after a zero fill, which fault tracking needs).
//
// Failure injection: the engine checks the steps of the work it does, once per piece (one
// piece per page-table entry, or per pair of entries for a device-to-device copy), through the
// listener's gate: emu.memfd.read before a piece is read out of device memory, emu.memfd.write
// before one is written into it, emu.memfd.fill per filled piece, emu.host.copy / emu.host.fill
// when both sides are process memory. Those are the steps (drv.read, drv.write, drv.fill,
// drv.host_copy, drv.host_fill by their legacy names, injection_steps.h) the core's own copy
// path met once per segment before migration step 3, so rollback sweeps count the same
// executions. A fired step fails the copy with its errno, naming the side it was for.
//
// Results: kInvalidArgument (size 0, a kind out of range); kBadAddress (-EFAULT) for a range that
// is not fully mapped, wraps, or a host pointer the CPU cannot reach; kNotPermitted (-EACCES) for
// an executor without the right; each with the side and the first address.
//
// Threading: copy/fill from any thread, no lock.
#pragma once

#include <optional>

#include "drivers/backend_listener.h"
#include "drivers/emu/device/page_table.h"
#include "drivers/emu/unified/emu_unified.h"
#include "drivers/injection_steps.h"
#include "drivers/copy_engine_base.h"

namespace aclvmm::dev::emu {

class EmuCopyEngine final : public CopyEngineBase {
 public:
  // `listener` (may be null: no step is ever injected) must outlive the engine.
  // `unified` (may be null: kManaged endpoints are kNotSupported) must outlive the engine.
  explicit EmuCopyEngine(const EmuPageTable& table, BackendListener* listener = nullptr,
                         EmuUnified* unified = nullptr)
      : CopyEngineBase(listener, steps::kEmuQueueThread),
        table_(table),
        unified_(unified),
        gate_(listener ? std::optional<InjectionGate>(*listener) : std::nullopt) {
    prefetch_through(unified);
  }
  ~EmuCopyEngine() override { destroy_queues(); }

  CopyOutcome copy(const CopyRequest& request) override;
  CopyOutcome fill(const FillRequest& request) override;

 private:
  const EmuPageTable& table_;
  EmuUnified* const unified_;
  const std::optional<InjectionGate> gate_;  // empty: nothing is ever injected
};

}  // namespace aclvmm::dev::emu
