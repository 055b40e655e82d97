// EmuPhysical: one physical memory object of the emulated NPU, what a PhysicalId names (D3: the
// id is this object's address, trusted as the HAL trusts its handle pointers).
//
// The bytes are one sealed memfd (drivers/emu/os/memfd_memory.h), which the sharing protocol
// passes to an importing process. The object lives while anyone holds it: the handle (from
// create until PhysicalAllocator::release), each page-table entry that maps it and each copy
// running on it (retain/drop, D4). The last drop returns the capacity
// charge and closes the memfd: on hardware, too, HBM is free only when nothing maps it.
//
// Threading: retain/drop and the route from any thread (atomics); properties are constant.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "drivers/device_types.h"
#include "drivers/emu/os/physical_memory.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev::emu {

class CapacityLedger;

class EmuPhysical {
 public:
  // Holds one reference (the handle's). `ledger` was charged properties.size at
  // properties.location for this object; the last drop() gives it back.
  EmuPhysical(const PhysicalProperties& properties, std::shared_ptr<os::PhysicalMemory> memory,
              CapacityLedger* ledger)
      : properties_(properties), memory_(std::move(memory)), ledger_(ledger) {}
  EmuPhysical(const EmuPhysical&) = delete;
  EmuPhysical& operator=(const EmuPhysical&) = delete;

  // Only for ids this backend handed out and that are still held (D3).
  static EmuPhysical* from_id(PhysicalId id) { return reinterpret_cast<EmuPhysical*>(id.value); }
  PhysicalId id() const { return PhysicalId{reinterpret_cast<uint64_t>(this)}; }

  const PhysicalProperties& properties() const { return properties_; }
  // Whose memory a mapping of this object is (the location kOwnerReadWrite gives READWRITE and
  // the copy engine checks): its location, except for device memory imported onto another
  // device, which the importing device maps as its own (the core records the import's handle
  // on that device, as the vendor runtime does). Set before the object is handed out.
  Location mapping_owner() const { return mapping_owner_; }
  void set_importing_device(DeviceIndex device) {
    if (properties_.location.kind == Location::Kind::kDevice) mapping_owner_ = Location::device(device);
  }
  os::PhysicalMemory& memory() const { return *memory_; }
  const std::shared_ptr<os::PhysicalMemory>& shared_memory() const { return memory_; }

  uint32_t route() const { return route_.load(std::memory_order_relaxed); }
  void set_route(uint32_t route) { route_.store(route, std::memory_order_relaxed); }

  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // The last one frees the object: the caller's pointer is dead afterwards.
  void drop();

 private:
  friend class EmuPhysicalAllocator;  // its list of held handles (the links below)
  ~EmuPhysical() = default;

  const PhysicalProperties properties_;
  const std::shared_ptr<os::PhysicalMemory> memory_;
  CapacityLedger* const ledger_;
  Location mapping_owner_ = properties_.location;
  std::atomic<uint32_t> route_{0};
  std::atomic<uint32_t> refs_{1};
  // The allocator's list of handles not yet released (physical_allocator.h), under its lock.
  EmuPhysical* held_prev_ = nullptr;
  EmuPhysical* held_next_ = nullptr;
  bool held_ = false;
};

}  // namespace aclvmm::dev::emu
