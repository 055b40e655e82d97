// AddressWindows: the device's virtual address windows (behavior.md §4) and the reservations
// carved out of them (halMemAddressReserve / halMemAddressFree).
//
// The backend knows where the windows are: at the vendor's addresses on hardware (the HAL maps
// them at the first device open), and for emu wherever the process's address space lets it place
// them, smaller under ThreadSanitizer, elsewhere under AddressSanitizer. The core no longer
// hard-codes an address; it reads layout() once and keeps only its bookkeeping (the region tree,
// the pointer index), so every range the core records comes from reserve() or from a block or
// managed allocation of this backend.
//
// Contract
// - layout() is valid from DeviceBackend::open until destruction and never changes; the core
//   copies it (the windows are on every translation's path, so no virtual call there).
// - reserve(): a new range inside the device window (kind kDevice: its general part) or, for
//   kNoUc, exactly at fixed_address inside the no-UC range. Preconditions the core has checked
//   (its 107000 answers): size > 0 and a multiple of Capabilities::map_granule; alignment a power
//   of two >= the granule; fixed_address 0 or aligned as behavior.md §2 requires; kNoUc with a
//   fixed address and a 1 GiB multiple. `size` is the span behavior.md §2 gives (2 MiB at least,
//   whole GiB above 512 MiB) and `alignment` the base alignment that rule implies: a software
//   backend honours it; the hal backend passes alignment 0, as the HAL requires, whose own rule
//   yields the same base. Results: kOutOfMemory when no free range is large enough
//   (207001); kBusy when fixed_address is taken (507899: today's "already reserved"); nothing is
//   reserved on failure. The range is inaccessible to the CPU and to every device until mapped.
// - release(): a range exactly as reserve() returned it, with nothing mapped in it any more (the
//   core refuses to release a reservation with mappings). kBusy when the driver still uses it.
// - A forked child inherits the parent's windows in its address space; DeviceBackend's fork hooks
//   give them back (ForkHooks::release_inherited), never this group.
//
// Threading: reserve and release are called under the core's region-tree writer lock, so a
// backend needs no lock of its own for its free-range allocator (emu's VaAllocator moved
// unchanged into drivers/ranges/, keeping `reserve + release` at its cost; emu still takes one
// uncontended lock, because every backend of a process shares its windows). layout() is
// read-only.
// Lifetime: owned by the DeviceBackend; the windows stay claimed for the backend's life.
#pragma once

#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

struct WindowLayout {
  VaRange host_pinned;     // BlockAllocator kHostPinned blocks (aclrtMallocHost)
  VaRange managed;         // UnifiedMemory allocations (aclrtMemAllocManaged)
  VaRange device;          // every device address (aclrtMalloc blocks, reservations)
  VaRange device_general;  // the part of `device` that reservations and blocks come from
  VaRange no_uc;           // where kNoUc reservations may be placed, each claimed on its own
  bool moved = false;      // some window is not at the vendor's address, or smaller (logged once)
};

enum class ReserveKind : uint8_t { kDevice, kNoUc };

struct ReserveRequest {
  ReserveKind kind = ReserveKind::kDevice;
  uint64_t size = 0;
  uint64_t alignment = 0;
  uint64_t fixed_address = 0;  // 0: anywhere
  PageType page_type = PageType::kHuge;  // the flags argument's page type (hal: 0 or 1)
};

class AddressWindows {
 public:
  virtual ~AddressWindows() = default;
  virtual const WindowLayout& layout() const = 0;
  virtual Result reserve(const ReserveRequest& request, uint64_t* address) = 0;
  virtual Result release(uint64_t address, uint64_t size) = 0;
};

}  // namespace aclvmm::dev
