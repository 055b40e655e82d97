// BlockAllocator: memory that comes with its address in one call: aclrtMalloc blocks of device
// memory and aclrtMallocHost blocks of CPU-visible host memory (halMemAlloc / halMemFree with the
// flag words of hal.md §3.12).
//
// On hardware such a block is not "a reservation plus a physical handle plus a mapping": the
// driver keeps it as one record and reports it differently to pointer queries, so the interface
// has it as its own operation instead of letting the core compose it (hal.md §6.2 rule 6: call
// what the vendor runtime calls). A software backend may build it from its own windows, physical
// objects and page table.
//
// Contract
// - allocate(): `size` as the core computed it (the ACL layer's 32-byte padding applied; no
//   rounding beyond that). The core maps the malloc policy onto page and memory type and makes
//   the huge-then-normal retry itself (two calls), as the vendor runtime does.
//   Result: the block's address (device blocks in WindowLayout::device_general, host blocks in
//   host_pinned; 2 MiB aligned, device blocks 1 GiB aligned from 1 GiB on), the span it occupies,
//   the page size queries report, and the physical object behind it (a PhysicalId; 0 when the
//   backend has none to offer). The owning device (kDevice) has read-write access; a host block is read-write for the
//   CPU and reachable by every device through the host. Charged like PhysicalAllocator::create;
//   kOutOfMemory when full, and for a size no window could hold (one that would wrap when
//   rounded up to its alignment: the core's 207001, as when the core placed blocks).
//   The backend places the block (step 7 took the windows out of the core): emu and fake take
//   its span from their windows (device blocks from WindowLayout::device_general, host blocks
//   from host_pinned); hal's driver places it itself.
// - free(): a block address exactly as returned. The block's physical object (if any) dies with
//   it; the core has stopped every copy naming it (it pins blocks as it pins mappings).
//
// Threading: any thread, concurrently. Lifetime: blocks live until free (or the backend's end).
#pragma once

#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

enum class BlockKind : uint8_t { kDevice, kHostPinned };

struct BlockRequest {
  BlockKind kind = BlockKind::kDevice;
  DeviceIndex device = kNoDevice;  // kDevice: the owner
  uint64_t size = 0;
  PageType page_type = PageType::kHuge;
  MemType mem_type = MemType::kHbm;  // kP2p*: MEM_ADVISE_P2P
};

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;       // usable bytes (as requested)
  uint64_t span = 0;       // virtual range taken from the window
  uint32_t page_size = 0;  // what pointer queries report for it
  PhysicalId memory;       // its bytes, offset 0 = address
};

class BlockAllocator {
 public:
  virtual ~BlockAllocator() = default;
  virtual Result allocate(const BlockRequest& request, Block* out) = 0;
  virtual Result free(uint64_t address) = 0;
};

}  // namespace aclvmm::dev
