// EmuDeviceMmu: DeviceMmu of the emulated NPU: its page table (page_table.h) fed by map and
// unmap, the rights of every location per mapping, and the CPU views those rights call for
// (cpu_view.h).
//
// A mapping holds one reference on its EmuPhysical (retain at map, drop at unmap), so memory
// released while mapped keeps its bytes and its charge until the unmap, as on hardware.
//
// Checks (the core has made them; emu checks what it needs to stay safe): a live id, whole
// granules of the memory's page type, offset + size inside the memory, an unmapped range inside
// the user address space (kInvalidArgument), an exact mapping for unmap and set_access.
//
// Threading: as DeviceMmu: no lock; calls on disjoint ranges run concurrently, calls on one range
// are serialized by the core; queries are lock-free.
#pragma once

#include "drivers/backend_listener.h"
#include "drivers/device_mmu.h"
#include "drivers/emu/device/cpu_view.h"
#include "drivers/emu/device/page_table.h"

namespace aclvmm::dev::emu {

class EmuDeviceMmu final : public DeviceMmu {
 public:
  // host_access_open: ACLVMM_HOST_ACCESS=open (EmulationOptions).
  EmuDeviceMmu(BackendListener& listener, bool host_access_open);
  // Whatever is still mapped is unmapped (CPU views included) and its references dropped.
  ~EmuDeviceMmu() override;

  Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
             InitialAccess initial) override;
  Result unmap(uint64_t va, uint64_t size) override;
  Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                    size_t* applied) override;
  Result access(uint64_t va, Location location, Access* out) const override;
  Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) override;
  Result query(uint64_t va, AddressInfo* out) const override;
  // The process's own pages are the host's: checked to be mapped, pinned with mlock when asked
  // (a refusal under RLIMIT_MEMLOCK is logged and the registration stands, unpinned). Nothing is
  // recorded here: a device reaches host memory through the copy engine's kHostMemory endpoints,
  // and which device may is the core's registration table.
  Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;

  // Blocks (blocks.h): [va, va+size) shows `object` from offset 0, its owner with read-write
  // access (a host block: the CPU, with its CPU view). The entry takes over the reference the
  // caller holds on `object` (on failure it stays the caller's). No granule rule: a block is
  // whole host pages from a 2 MiB aligned va, alone in its words. unmap() and set_access() do not
  // reach blocks; unmap_block() does, with the exact start, and drops the reference; *kind (if
  // given) gets the block's kind and *size its size, so that its range can go back to its window.
  Result map_block(uint64_t va, uint64_t size, EmuPhysical* object, AddressInfo::Kind kind,
                   uint32_t page_size);
  Result unmap_block(uint64_t va, AddressInfo::Kind* kind = nullptr, uint64_t* size = nullptr);

  // Mappings and blocks in the page table.
  size_t live_mappings() const { return table_.live(); }
  // What the copy engine translates through (copy_engine.h, D4).
  const EmuPageTable& page_table() const { return table_; }

 private:
  // The mapping (never a block) that is exactly [va, va+size), or nullptr.
  MmuEntry* exact(uint64_t va, uint64_t size) const;
  // The entry containing va (a block may end inside its last word), or nullptr.
  MmuEntry* containing(uint64_t va) const;
  // Checks the entry's words are free, makes its CPU view and publishes it (`retain`: with one
  // more reference on its memory); on failure deletes it and leaves nothing.
  Result install(MmuEntry* entry, bool retain);
  void forget(MmuEntry* entry);

  BackendListener& listener_;
  EmuPageTable table_;
  CpuView cpu_;
};

}  // namespace aclvmm::dev::emu
