// CoreListener: what the core answers a device backend (drivers/backend_listener.h): log lines
// into the CANN log, the failure-injection rules of the core's registry (runtime/injection.h),
// and the usage the backend reports.
//
// Injection: a backend asks by the current step names (dev.*, emu.*, host.*); a rule armed under
// a legacy drv.* name (ACLVMM_FAULTS, aclvmmInjectFault, the fault sweeps) fires at the step that
// does that work now (kLegacyStepNames), so both spellings keep working and count the same
// executions.
//
// Usage (D8, migration step 2b): the backend's capacity ledger is the authority; it refuses
// (kOutOfMemory, 207001 at the API) and reports every change through usage_changed. Each opened
// backend reports to its own DeviceUsage (open_device), which moves the pools of the runtime
// start that opened it (connect_pools: aclrtGetMemInfo's numbers and the statistics segment's
// counters) and the process's sums here (reported_usage). Managed pages are the backend's
// (step 6): its UnifiedMemory charges them to the same ledger, which reports them likewise.
//
// Threading: every method from any thread (backend threads included); injection takes the
// registry's leaf lock only while a rule is armed; nothing else locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "drivers/backend_listener.h"
#include "drivers/device_backend.h"
#include "runtime/config.h"
#include "vmm/physical.h"

namespace aclvmm {

class CoreListener final : public dev::BackendListener {
 public:
  void log(dev::Severity severity, const char* module, const char* message) noexcept override;
  void residency_event(const dev::ResidencyEvent& event) noexcept override;
  void usage_changed(dev::DeviceIndex device, int64_t delta_bytes) noexcept override;
  const std::atomic<bool>& injection_armed() const noexcept override;
  int injected(const char* step) noexcept override;

  // What the backend reports it holds on `device` (kNoDevice: the host).
  int64_t reported_usage(dev::DeviceIndex device) const;

 private:
  std::atomic<int64_t> usage_[dev::kMaxDevices + 1] = {};  // [kMaxDevices]: the host
};

// The process's listener: never destroyed, so it outlives every backend (also one a forked child
// abandons).
CoreListener& core_listener();

// The listener of one opened backend: usage moves that start's pools and the process's sums;
// everything else is core_listener()'s. Lives exactly as long as its backend.
class DeviceUsage final : public dev::BackendListener {
 public:
  void log(dev::Severity severity, const char* module, const char* message) noexcept override;
  void residency_event(const dev::ResidencyEvent& event) noexcept override;
  void usage_changed(dev::DeviceIndex device, int64_t delta_bytes) noexcept override;
  const std::atomic<bool>& injection_armed() const noexcept override;
  int injected(const char* step) noexcept override;

  // Once per location, before the start that opened the backend is published.
  void connect(dev::DeviceIndex device, std::shared_ptr<MemoryPool> pool);

 private:
  std::shared_ptr<MemoryPool> owned_[dev::kMaxDevices + 1];
  std::atomic<MemoryPool*> pools_[dev::kMaxDevices + 1] = {};
};

// Opens the configured backend ("emu") with the options of `config` (the SoC's memory size when
// ACLVMM_DEVICE_MEMORY is not set), behind the injection decorator, reporting to a DeviceUsage of
// its own.
StatusOr<std::shared_ptr<dev::DeviceBackend>> open_device(const Config& config);
// Makes `pools` (by physical device id) and `host` the mirrors of what `device` (from
// open_device) reports (its ledger is the authority, D8). A no-op for another backend.
void connect_pools(const std::shared_ptr<dev::DeviceBackend>& device,
                   const std::vector<std::shared_ptr<MemoryPool>>& pools,
                   const std::shared_ptr<MemoryPool>& host);

}  // namespace aclvmm
