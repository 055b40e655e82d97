// CoreListener: what the core answers a device backend (drivers/backend_listener.h): log lines
// into the CANN log, the failure-injection rules of the core's registry (runtime/injection.h),
// and the usage the backend reports.
//
// Injection: a backend asks by the current step names (dev.*, emu.*, host.*); a rule armed under
// a legacy drv.* name (ACLVMM_FAULTS, aclvmmInjectFault, the fault sweeps) fires at the step that
// does that work now (kLegacyStepNames), so both spellings keep working and count the same
// executions.
//
// Usage: in migration step 2 the core's MemoryPools stay the capacity authority (aclrtMalloc
// blocks are not the backend's yet, so only the pools see every charge) and feed the statistics
// mirrors themselves; usage_changed is summed per location here (what the backend holds), which
// tests compare with the pools, until the capacity step makes the ledger the authority and
// these deltas the mirrors' source.
//
// Threading: every method from any thread (backend threads included); injection takes the
// registry's leaf lock only while a rule is armed; nothing else locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "drivers/backend_listener.h"
#include "drivers/device_backend.h"
#include "runtime/config.h"

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

// Opens the configured backend ("emu") with the options of `config` (the SoC's memory size when
// ACLVMM_DEVICE_MEMORY is not set), behind the injection decorator, reporting to core_listener().
StatusOr<std::shared_ptr<dev::DeviceBackend>> open_device(const Config& config);

}  // namespace aclvmm
