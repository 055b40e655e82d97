// FakeWindows: AddressWindows of the fake backend: the vendor's windows (behavior.md §4) as
// numbers, nothing mapped (there is no address space to claim), never moved. Reservations and
// blocks take first-fit ranges from the same free-range allocator emu uses
// (drivers/ranges/va_allocator.h): device reservations and device blocks from the general part,
// host blocks from host_pinned; kNoUc ranges exactly at their fixed address inside no_uc, each
// recorded on its own. Every range handed out is recorded, so that release() checks what the
// contract asks the core to guarantee (a range exactly as reserved; a counted violation
// otherwise, fake_machine.h), as does reserve() (a size, a power-of-two alignment, a no-UC
// address inside no_uc).
//
// Threading: under the machine's mutex, like every fake unit (blocks call the *_locked forms
// with it held).
#pragma once

#include <cstdint>
#include <map>

#include "drivers/address_windows.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/ranges/va_allocator.h"

namespace aclvmm::dev::fake {

class FakeWindows final : public AddressWindows {
 public:
  explicit FakeWindows(FakeMachine& machine);

  const WindowLayout& layout() const override { return layout_; }
  Result reserve(const ReserveRequest& request, uint64_t* address) override;
  Result release(uint64_t address, uint64_t size) override;

  // Blocks (fake_blocks.cpp), under the machine's mutex: `span` bytes at `align` from
  // host_pinned (host) or the general part; kOutOfMemory when full. free_block_locked gives back
  // the range a block's address names.
  Result place_block_locked(bool host, uint64_t span, uint64_t align, uint64_t* address);
  void free_block_locked(uint64_t address);

  // Live reservations and blocks (the test's hook).
  size_t live_ranges() const;

 private:
  enum class Kind : uint8_t { kReservation, kNoUc, kDeviceBlock, kHostBlock };
  struct Range {
    uint64_t size = 0;
    Kind kind = Kind::kReservation;
  };

  FakeMachine& machine_;
  WindowLayout layout_;
  VaAllocator general_, host_;
  std::map<uint64_t, Range> ranges_;  // base -> every range handed out
};

}  // namespace aclvmm::dev::fake
