// EmuDevices: DeviceManager of the emulated NPU: the devices the options describe
// (ACLVMM_DEVICE_COUNT, ACLVMM_SOC, ACLVMM_DEVICE_MEMORY, ACLVMM_SERVER_ID), which of them this
// process has opened, which peer links are enabled, and their memory as the CapacityLedger
// accounts it.
//
// Nothing is set up at open: an emulated device needs no per-process state beyond its bit, so
// open and close never block. Peer links are recorded one direction at a time; copies are
// checked against the core's masks (a software NPU's copy engine reaches every device), so the
// record is what can_access_peer answers and nothing more.
//
// Threading: lock-free (one atomic word per device), any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "drivers/device_backend.h"
#include "drivers/device_manager.h"

namespace aclvmm::dev::emu {

class CapacityLedger;

class EmuDevices final : public DeviceManager {
 public:
  // options.device_count in 1..kMaxDevices (EmuDeviceBackend checks it first).
  EmuDevices(const EmulationOptions& options, CapacityLedger& ledger, HostServices& host);

  int32_t device_count() const override { return count_; }
  Result properties(DeviceIndex device, DeviceProperties* out) const override;
  Result open(DeviceIndex device) override;
  Result close(DeviceIndex device) override;
  Result memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) override;
  Result enable_peer(DeviceIndex device, DeviceIndex peer) override;
  Result disable_peer(DeviceIndex device, DeviceIndex peer) override;
  bool can_access_peer(DeviceIndex device, DeviceIndex peer) const override;
  int32_t bare_tgid() const override;

 private:
  bool valid(DeviceIndex device) const { return device >= 0 && device < count_; }

  const int32_t count_;
  const std::string soc_;
  const uint64_t memory_;
  const int32_t server_id_;
  CapacityLedger& ledger_;
  HostServices& host_;
  std::atomic<uint64_t> opened_{0};            // bit d: device d is open
  std::atomic<uint64_t> peers_[kMaxDevices] = {};  // peers_[d] bit p: d reaches p's memory
};

}  // namespace aclvmm::dev::emu
