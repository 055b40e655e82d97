// FakeDevices: DeviceManager of the fake backend: the configured devices, which are open, the
// peer links, memory from the machine's capacity. Ids out of range, closing a device that is not
// open and peer links to oneself are violations (fake_machine.h).
#pragma once

#include <cstdint>

#include "drivers/device_manager.h"
#include "drivers/fake/fake_machine.h"

namespace aclvmm::dev::fake {

class FakeDevices final : public DeviceManager {
 public:
  explicit FakeDevices(FakeMachine& machine) : machine_(machine) {}

  int32_t device_count() const override { return machine_.config().device_count; }
  Result properties(DeviceIndex device, DeviceProperties* out) const override;
  Result open(DeviceIndex device) override;
  Result close(DeviceIndex device) override;
  Result memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) override;
  Result enable_peer(DeviceIndex device, DeviceIndex peer) override;
  Result disable_peer(DeviceIndex device, DeviceIndex peer) override;
  bool can_access_peer(DeviceIndex device, DeviceIndex peer) const override;
  int32_t bare_tgid() const override { return machine_.config().pid; }

 private:
  Result set_peer(DeviceIndex device, DeviceIndex peer, bool enabled);

  FakeMachine& machine_;
  uint64_t opened_ = 0;               // bit d: device d is open
  uint64_t peers_[kMaxDevices] = {};  // peers_[d] bit p: d reaches p's memory
};

}  // namespace aclvmm::dev::fake
