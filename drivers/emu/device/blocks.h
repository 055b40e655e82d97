// EmuBlocks: BlockAllocator of the emulated NPU: an aclrtMalloc / aclrtMallocHost block is one
// EmuPhysical (a memfd of whole host pages, charged to the CapacityLedger like any physical
// memory, through the same emu.memfd.create step) and one entry of the device page table at
// the block's address (EmuDeviceMmu::map_block), so the device translates block addresses as
// it does mappings'. A host block's entry gives the CPU read-write access, which is its CPU view
// (emu.cpu.map); a device block is seen by the CPU only with ACLVMM_HOST_ACCESS=open, as before.
//
// The block's range comes from the windows (windows.h, step 7): device blocks from the general
// part of the device window, host blocks from host_pinned, 2 MiB aligned (device blocks of 1 GiB
// or more 1 GiB aligned), the span a multiple of that alignment; kOutOfMemory when the window
// is full. A device that does not exist or a size of 0 is kInvalidArgument.
//
// free() removes the entry (its CPU view first: if that cannot go, the block stays), gives the
// range back to its window and drops the object; the memfd lives on while a copy still running
// on it holds the object (retain/drop, D4), the charge goes back now.
//
// Destruction frees every block still allocated (device_backend.h "Destruction", C48): the
// windows are the process's and outlive the backend, so a block the core left would otherwise
// keep its range out of every later backend's reach.
//
// Threading: as BlockAllocator; no lock of its own (the page table's words are per block; the
// windows' free lists have theirs).
#pragma once

#include <cstdint>

#include "drivers/block_allocator.h"

namespace aclvmm::dev::emu {

class EmuDeviceMmu;
class EmuPhysicalAllocator;
class EmuWindows;

class EmuBlocks final : public BlockAllocator {
 public:
  EmuBlocks(EmuPhysicalAllocator& physical, EmuDeviceMmu& mmu, EmuWindows& windows,
            int32_t device_count)
      : physical_(physical), mmu_(mmu), windows_(windows), device_count_(device_count) {}
  ~EmuBlocks() override;

  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;

 private:
  EmuPhysicalAllocator& physical_;
  EmuDeviceMmu& mmu_;
  EmuWindows& windows_;
  const int32_t device_count_;
};

}  // namespace aclvmm::dev::emu
