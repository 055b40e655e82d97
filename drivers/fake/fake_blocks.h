// FakeBlocks: BlockAllocator of the fake backend: a block is a physical object in a byte store
// (whole host pages, charged like any physical memory: kOutOfMemory when the machine is full)
// and an entry of the fake MMU at the address the core placed it at (BlockRequest::address until
// step 7), so the test's CPU (cpu_access) reaches a host block and not a device block. Every
// precondition is a counted violation: no such kind or device, no size, an address that is not
// aligned or overlaps a mapping or block, a free of anything but a block's address.
//
// The block owns its object's id (Block::memory stays live until free, so a test can read the
// bytes); free ends the entry and the id together.
#pragma once

#include "drivers/block_allocator.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_mmu.h"
#include "drivers/fake/fake_physical.h"

namespace aclvmm::dev::fake {

class FakeBlocks final : public BlockAllocator {
 public:
  FakeBlocks(FakeMachine& machine, FakePhysical& physical, FakeMmu& mmu)
      : machine_(machine), physical_(physical), mmu_(mmu) {}

  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;

 private:
  FakeMachine& machine_;
  FakePhysical& physical_;
  FakeMmu& mmu_;
};

}  // namespace aclvmm::dev::fake
