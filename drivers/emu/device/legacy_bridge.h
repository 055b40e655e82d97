// EmuLegacyBridge: emu's LegacyMemory (drivers/legacy_memory.h, transitional until step 9): the
// memfd behind an EmuPhysical for the core's old export path, and adopted memory (an import's
// descriptor) as an uncharged EmuPhysical the device MMU can map.
#pragma once

#include "drivers/legacy_memory.h"

namespace aclvmm::dev::emu {

class EmuLegacyBridge final : public LegacyMemory {
 public:
  EmuLegacyBridge() = default;

  std::shared_ptr<drv::PhysicalMemory> memory(PhysicalId id) const override;
  Result adopt(const PhysicalProperties& properties, std::shared_ptr<drv::PhysicalMemory> memory,
               PhysicalId* out) override;
};

}  // namespace aclvmm::dev::emu
