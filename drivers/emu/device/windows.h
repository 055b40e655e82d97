// EmuWindows: AddressWindows of the emulated NPU (address_windows.h; emulation.md §3). The
// windows are placeholders in the process's address space (drivers/emu/os/placeholders.h: PROT_NONE,
// unbacked), claimed once per process by the first backend that opens and kept for the
// process's life, as the vendor's HAL keeps them from the first device open: every later backend
// of the process (a runtime restart opens a new one while the old one may still be alive,
// kept by memory an application holds) sees the same layout and hands out ranges from the same
// free lists. So a restart finds its windows where they were, and two backends of one process
// never hand out the same range.
//
// Placement (moved from the core's AddressSpace::claim_windows): the vendor's addresses (host
// pinned 1 TiB at 0x70000000000, managed 3 TiB at 0x90000000000, device 8 TiB at
// 0x100000000000 whose general part starts at 0x12C000000000; no-UC reservations in
// [0x180000000000, 0x800000000000)). Where an address is taken (AddressSanitizer's shadow) the
// kernel places the window (GiB aligned). ThreadSanitizer confines a program to a few TiB and
// aborts even when asked for the vendor's addresses: there the windows are 1/64 of the size and
// always placed by the kernel. A window that cannot be had (ENOMEM) is halved down to 64 GiB.
// Any of these sets WindowLayout::moved and logs one warning per window. A window that cannot be
// claimed at all gives back the ones claimed before it (a later open tries again from scratch).
// Steps: emu.window.claim (each window), emu.window.claim_fixed (a no-UC reservation),
// emu.window.release (giving a no-UC reservation back).
//
// Ranges: reserve(kDevice) and blocks (blocks.cpp) take first-fit ranges of the general part
// (device blocks) or of host_pinned (host blocks); managed ranges (emu's UnifiedMemory) from
// the managed window; kNoUc claims a placeholder of its own at the fixed address. release()
// of a no-UC range gives its placeholder back (kept, and the Result returned, when that fails).
//
// Fork: a child inherits the windows and everything mapped in them. release_inherited() (on the
// abandoned backend, before the child's new backend opens) gives back the no-UC placeholders and
// the windows, and with them every mapping inside, and remembers where the windows were; the
// first open in the child does the same itself when no backend was there to be called (the
// record is marked inherited in the child). The next claim then puts them there first, so an address of the parent's means the same window in the
// child even where the kernel had placed them (under a sanitizer a second placement need not land
// in the same spot).
//
// Threading: one process-wide mutex around the free lists and the claims (the core serialises
// its own calls, address_windows.h, but several backends of a process share them); it is held
// across fork (prepare_fork .. after_fork_*, called through dev::prepare_fork_process() by the
// core's handler whether or not a backend is open) so that a child finds the record whole. The listener
// is called under it (a leaf: log and injection rules), never the other way round.
#pragma once

#include <cstdint>

#include "drivers/address_windows.h"
#include "drivers/backend_listener.h"

namespace aclvmm::dev::emu {

class EmuWindows final : public AddressWindows {
 public:
  explicit EmuWindows(BackendListener& listener) : listener_(listener), gate_(listener) {}

  // At the backend's open: the process's windows, claimed now if no backend has them. A claim
  // refused by the kernel or by a rule: its errno, and nothing stays claimed.
  Result open();

  const WindowLayout& layout() const override { return layout_; }
  Result reserve(const ReserveRequest& request, uint64_t* address) override;
  Result release(uint64_t address, uint64_t size) override;

  // Blocks: `span` bytes at `align` from host_pinned (host) or the general part; kOutOfMemory
  // when none is free. free_block gives a range back exactly as placed.
  Result place_block(bool host, uint64_t span, uint64_t align, uint64_t* address);
  void free_block(bool host, uint64_t address, uint64_t span);
  // Managed ranges (unified/emu_unified.h places them): page-aligned first fit.
  Result place_managed(uint64_t size, uint64_t* address);
  void free_managed(uint64_t address, uint64_t size);

  // The process-wide lock across fork, and the child's release (see above).
  static void prepare_fork();
  static void after_fork_parent();
  static void after_fork_child();
  static void release_inherited();

 private:
  BackendListener& listener_;
  InjectionGate gate_;
  WindowLayout layout_;
};

}  // namespace aclvmm::dev::emu
