// CapacityLedger: the emulated machine's memory, per device and for the host (D8): what
// PhysicalAllocator::create (and in later steps blocks and managed pages) charge, what refuses
// with kOutOfMemory when a location is full, and what DeviceManager::memory_info reports.
//
// Every charge and uncharge is reported through BackendListener::usage_changed (device, or
// kNoDevice for the host), so the core's statistics mirror what the backend decides. Until
// migration step 2 the core still charges its own pools and does not listen: this ledger is the
// backend's own, tested by the conformance suite, not yet the authority.
//
// Threading: lock-free (one compare-and-swap per charge), any thread; no lock to hand over at
// fork (a forked child's charges are the parent's numbers, as its memory is).
#pragma once

#include <atomic>
#include <cstdint>

#include "drivers/backend_listener.h"
#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev::emu {

class CapacityLedger {
 public:
  // device_count in 1..kMaxDevices (EmuDeviceBackend checks the options first).
  CapacityLedger(BackendListener& listener, int32_t device_count, uint64_t device_bytes,
                 uint64_t host_bytes);
  CapacityLedger(const CapacityLedger&) = delete;
  CapacityLedger& operator=(const CapacityLedger&) = delete;

  // Charges `bytes` where `location` lives: kDevice to that device, kHost and kHostNuma to the
  // host. kOutOfMemory when it does not fit (nothing charged), kInvalidArgument for a location
  // that names no device.
  Result charge(Location location, uint64_t bytes);
  // Gives back what charge() took for the same location.
  void uncharge(Location location, uint64_t bytes);

  // 0 for a location that names no device.
  uint64_t total(Location location) const;
  uint64_t used(Location location) const;

 private:
  struct Pool {
    uint64_t total = 0;
    std::atomic<uint64_t> used{0};
  };
  Pool* pool(Location location);
  const Pool* pool(Location location) const;
  static DeviceIndex reported_device(Location location);

  BackendListener& listener_;
  const int32_t device_count_;
  Pool devices_[kMaxDevices];
  Pool host_;
};

}  // namespace aclvmm::dev::emu
