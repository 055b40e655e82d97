// EmuLegacyBridge: emu's LegacyMemory (drivers/legacy_memory.h, transitional until step 9): the
// memfd behind an EmuPhysical for the core's old copy, export and managed paths, and adopted
// memory (an import's descriptor) as an uncharged EmuPhysical the device MMU can map, and the
// core's managed pages charged to the CapacityLedger and their ranges placed in the managed
// window (until step 6).
#pragma once

#include "drivers/legacy_memory.h"

namespace aclvmm::dev::emu {

class CapacityLedger;
class EmuWindows;

class EmuLegacyBridge final : public LegacyMemory {
 public:
  EmuLegacyBridge(CapacityLedger& ledger, EmuWindows& windows) : ledger_(ledger), windows_(windows) {}

  std::shared_ptr<drv::PhysicalMemory> memory(PhysicalId id) const override;
  Result adopt(const PhysicalProperties& properties, std::shared_ptr<drv::PhysicalMemory> memory,
               PhysicalId* out) override;
  Result charge(Location location, uint64_t bytes) override;
  void uncharge(Location location, uint64_t bytes) override;
  Result reserve_managed(uint64_t size, uint64_t* address) override;
  void release_managed(uint64_t address, uint64_t size) override;

 private:
  CapacityLedger& ledger_;
  EmuWindows& windows_;
};

}  // namespace aclvmm::dev::emu
