#include "drivers/emu/device/legacy_bridge.h"

#include <cerrno>
#include <new>
#include <utility>

#include "drivers/emu/device/physical_object.h"

namespace aclvmm::dev::emu {

std::shared_ptr<drv::PhysicalMemory> EmuLegacyBridge::memory(PhysicalId id) const {
  if (!id) return nullptr;
  return EmuPhysical::from_id(id)->shared_memory();
}

Result EmuLegacyBridge::adopt(const PhysicalProperties& properties,
                              std::shared_ptr<drv::PhysicalMemory> memory, PhysicalId* out) {
  if (out == nullptr || !memory) return Result::from_errno(EINVAL);
  PhysicalProperties props = properties;
  props.imported = true;
  // No ledger: the bytes are charged where they were created (the exporter's process).
  auto* object = new (std::nothrow) EmuPhysical(props, std::move(memory), nullptr);
  if (object == nullptr) return Result::from_errno(ENOMEM);
  *out = object->id();
  return Result::success();
}

}  // namespace aclvmm::dev::emu
