// EmuBlocks: BlockAllocator of the emulated NPU: an aclrtMalloc / aclrtMallocHost block is one
// EmuPhysical (a memfd of whole host pages, charged to the CapacityLedger like any physical
// memory, through the same emu.memfd.create step) and one entry of the device page table at
// the block's address (EmuDeviceMmu::map_block), so the device translates block addresses as
// it does mappings'. A host block's entry gives the CPU read-write access, which is its CPU view
// (emu.cpu.map); a device block is seen by the CPU only with ACLVMM_HOST_ACCESS=open, as before.
//
// Until step 7 the core places blocks in its windows (BlockRequest::address); emu checks what it
// needs to stay safe: a device that exists, a size, a 2 MiB aligned start whose words are free
// (kInvalidArgument).
//
// free() removes the entry (its CPU view first: if that cannot go, the block stays) and drops the
// object; the memfd lives on while the core's old copy paths still hold it (legacy_memory.h), the
// charge goes back now.
//
// Threading: as BlockAllocator; no lock (the page table's words are per block).
#pragma once

#include <cstdint>

#include "drivers/block_allocator.h"

namespace aclvmm::dev::emu {

class EmuDeviceMmu;
class EmuPhysicalAllocator;

class EmuBlocks final : public BlockAllocator {
 public:
  EmuBlocks(EmuPhysicalAllocator& physical, EmuDeviceMmu& mmu, int32_t device_count)
      : physical_(physical), mmu_(mmu), device_count_(device_count) {}

  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;

 private:
  EmuPhysicalAllocator& physical_;
  EmuDeviceMmu& mmu_;
  const int32_t device_count_;
};

}  // namespace aclvmm::dev::emu
