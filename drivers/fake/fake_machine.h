// FakeMachine: what the fake backend's units share: the configured machine, one lock, the
// capacity per device and host, and the count of contract violations (docs/device-interface.md
// §8).
//
// Violations: every precondition a contract states that the core must meet (a live id, a device
// in range, a size in whole granules, ...) is checked; a violation answers kInvalidArgument and
// is counted, so a core unit test that ends with violations() == 0 proves the core checked first.
// Defined answers of a contract (kBusy for a second open, kOutOfMemory, kNotSupported for what
// the capabilities rule out, kNotFound for an unknown route) are not violations.
//
// Determinism: no clock, no randomness, no system call but malloc; ids count up from fixed
// values, so the same calls give the same answers in every run.
//
// Threading: every unit takes mutex() for the whole operation; usage_changed is reported with it
// held (the listener takes no lock a backend could hold, backend_listener.h).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drivers/backend_listener.h"
#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev::fake {

class FakeWorld;

struct FakeConfig {
  std::string soc = "Ascend910B1";
  int32_t device_count = 2;              // 1..kMaxDevices
  uint64_t device_memory = 64 * kMiB;    // small: a test exhausts it in a few calls
  uint64_t host_memory = 256 * kMiB;     // HostServices::memory_total and the host's capacity
  int32_t server_id = -1;                // DeviceProperties::server_id (-1: no FABRIC)
  int32_t numa_nodes = 2;                // 0: a host without NUMA
  int32_t current_numa_node = 0;
  uint64_t page_size = 4096;
  bool giant_pages = true;               // PageType::kGiant offered (1 GiB granule)
  int32_t pid = 4242;                    // this "process": bare_tgid, segment owners
  uint32_t uid = 1000;
  uint64_t start_time = 1;               // its logical start time
  std::vector<std::string> segment_dirs = {"/fake/smi"};  // where segments can be created
  // Managed memory (fake_unified.h): the managed window of the fake's windows layout (the
  // vendor's, behavior.md §4; a test may shrink it to fill it), and what tracking() reports.
  uint64_t managed_window = 0x90000000000;
  uint64_t managed_window_size = 3 * 1024 * kGiB;  // 3 TiB
  bool managed_residency = true;         // false: a machine that refuses fault tracking
  bool managed_write_tracking = true;    // CPU writes to READ_MOSTLY pages are caught
  // The "processes" sharing memory with this one (fake_world.h); null: a world of its own.
  std::shared_ptr<FakeWorld> world;
};

class FakeMachine {
 public:
  FakeMachine(const FakeConfig& config, BackendListener& listener);
  FakeMachine(const FakeMachine&) = delete;
  FakeMachine& operator=(const FakeMachine&) = delete;

  std::mutex& mutex() const { return mu_; }
  const FakeConfig& config() const { return config_; }
  BackendListener& listener() const { return listener_; }

  bool valid_device(DeviceIndex device) const {
    return device >= 0 && device < config_.device_count;
  }

  // Under mutex(): counts a violation of `what` and answers kInvalidArgument.
  Result violation(const char* what);
  uint64_t violations() const;
  std::string last_violation() const;

  // Under mutex(). As emu's CapacityLedger: kDevice charges that device, kHost/kHostNuma the
  // host; kOutOfMemory when it does not fit. The location has been checked.
  Result charge(Location location, uint64_t bytes);
  void uncharge(Location location, uint64_t bytes);
  uint64_t total(Location location) const;
  uint64_t used(Location location) const;

 private:
  const uint64_t* used_slot(Location location) const;
  uint64_t* used_slot(Location location);

  const FakeConfig config_;
  BackendListener& listener_;
  mutable std::mutex mu_;
  uint64_t violations_ = 0;
  std::string last_violation_;
  uint64_t device_used_[kMaxDevices] = {};
  uint64_t host_used_ = 0;
};

}  // namespace aclvmm::dev::fake
