// FakeBlocks: BlockAllocator of the fake backend: a block is a physical object in a byte store
// (whole host pages, charged like any physical memory: kOutOfMemory when the machine is full)
// and an entry of the fake MMU at an address its windows give it (fake_windows.h: the general
// part for device blocks, host_pinned for host blocks), so the test's CPU (cpu_access) reaches a
// host block and not a device block. Every precondition is a counted violation: no such kind or
// device, no size, a free of anything but a block's address.
//
// The block owns its object's id (Block::memory stays live until free, so a test can read the
// bytes); free ends the entry and the id together.
#pragma once

#include "drivers/block_allocator.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_mmu.h"
#include "drivers/fake/fake_physical.h"
#include "drivers/fake/fake_windows.h"

namespace aclvmm::dev::fake {

class FakeBlocks final : public BlockAllocator {
 public:
  FakeBlocks(FakeMachine& machine, FakePhysical& physical, FakeMmu& mmu, FakeWindows& windows)
      : machine_(machine), physical_(physical), mmu_(mmu), windows_(windows) {}

  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;

 private:
  FakeMachine& machine_;
  FakePhysical& physical_;
  FakeMmu& mmu_;
  FakeWindows& windows_;
};

}  // namespace aclvmm::dev::fake
