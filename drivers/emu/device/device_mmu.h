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

  size_t live_mappings() const { return table_.live(); }

 private:
  // The entry that is exactly [va, va+size), or nullptr.
  MmuEntry* exact(uint64_t va, uint64_t size) const;
  void forget(MmuEntry* entry);

  EmuPageTable table_;
  CpuView cpu_;
};

}  // namespace aclvmm::dev::emu
