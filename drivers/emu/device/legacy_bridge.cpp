#include "drivers/emu/device/legacy_bridge.h"

#include <cerrno>
#include <new>
#include <utility>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/device/windows.h"

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

Result EmuLegacyBridge::charge(Location location, uint64_t bytes) {
  return ledger_.charge(location, bytes);
}

void EmuLegacyBridge::uncharge(Location location, uint64_t bytes) {
  ledger_.uncharge(location, bytes);
}

Result EmuLegacyBridge::reserve_managed(uint64_t size, uint64_t* address) {
  if (address == nullptr || size == 0) return Result::from_errno(EINVAL);
  return windows_.place_managed(size, address);
}

void EmuLegacyBridge::release_managed(uint64_t address, uint64_t size) {
  windows_.free_managed(address, size);
}

}  // namespace aclvmm::dev::emu
