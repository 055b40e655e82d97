// BackendListener: the few things a backend tells the core, and the one it asks.
//
// The core owns observability (log lines in CANN's format, the managed-memory trace, the
// aclvmm-smi usage counters) and the failure-injection rules (ACLVMM_FAULTS, aclvmmInjectFault).
// Work that used to run in the core and now runs in a backend (the residency model, window
// placement, the share listener) still reports through the core, so the listener is handed to
// the backend at open and outlives it.
//
// Contract
// - Every method is noexcept, does not block, takes no lock a backend could hold, and never calls
//   back into the backend: backends call it from any thread, their own threads included (the
//   fault thread, the share listener, queue workers), with their own locks held.
// - log(): one line; `module` is CANN's module name ("DRV", "RUNTIME"). The text is copied.
// - residency_event(): one event of the managed-memory trace (docs/managed-memory.md §7); `what`
//   is a string literal ("cpu_fault", "to_device", "device_to_device", "to_host",
//   "eviction_to_host", "device_fault", "read_copy", "read_copy_invalidate").
// - usage_changed(): bytes charged (delta > 0) or returned on a device (or on the host with
//   kNoDevice), whoever made them: physical allocations, blocks, managed pages moving. The core
//   mirrors it into the statistics segment; the backend alone decides capacity.
// - injected(step): the failure-injection rule for a step (injection_steps.h) fires now: returns
//   the rule's code (a positive errno) or 0. Each call counts one execution of the step.
//   injection_armed() is true while any rule is armed; a backend reads it (one relaxed load)
//   before calling injected(), so an unarmed step costs no virtual call (InjectionGate below).
#pragma once

#include <atomic>
#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

enum class Severity : uint8_t { kDebug, kInfo, kWarning, kError };

struct ResidencyEvent {
  const char* what = "";
  uint64_t address = 0;           // the 2 MiB page
  DeviceIndex device = kNoDevice; // the device involved; kNoDevice for the host
};

class BackendListener {
 public:
  virtual ~BackendListener() = default;
  virtual void log(Severity severity, const char* module, const char* message) noexcept = 0;
  virtual void residency_event(const ResidencyEvent& event) noexcept = 0;
  virtual void usage_changed(DeviceIndex device, int64_t delta_bytes) noexcept = 0;
  virtual const std::atomic<bool>& injection_armed() const noexcept = 0;
  virtual int injected(const char* step) noexcept = 0;
};

// The check a backend makes at each injection point:
//   if (Result r = gate.check(steps::kEmuCpuMap); !r.ok()) return r;
class InjectionGate {
 public:
  explicit InjectionGate(BackendListener& listener)
      : listener_(&listener), armed_(&listener.injection_armed()) {}
  Result check(const char* step) const noexcept {
    if (!armed_->load(std::memory_order_relaxed)) return Result::success();
    const int code = listener_->injected(step);
    return code == 0 ? Result::success() : Result::from_errno(code);
  }

 private:
  BackendListener* listener_;
  const std::atomic<bool>* armed_;
};

}  // namespace aclvmm::dev
