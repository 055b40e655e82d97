// The failure-injection decorator (docs/device-interface.md §6, D12): wraps any DeviceBackend so
// that each interface operation can be failed by a "dev.<unit>.<operation>" rule
// (injection_steps.h), the same way on emu, fake and hal; the core's rollback of every multi-step
// call is swept with it.
//
// How it learns the rules without knowing the core: through the BackendListener the backend was
// opened with. The core owns the rule registry (ACLVMM_FAULTS, aclvmmInjectFault, the legacy
// "drv.*" aliases resolved by current_step_name); its listener answers injection_armed() (one
// relaxed load per operation while nothing is armed) and injected(step), which counts one
// execution and returns the rule's errno when it fires. The decorator asks through InjectionGate
// (backend_listener.h), so drivers/ includes nothing of src/ (tests/layout).
//
// open_device_backend() always returns a wrapped backend; a test wraps a bare one itself.
// A fired rule returns Result::from_errno(code) without calling the wrapped unit: the backend is
// left as it was (conformance C46).
//
// Threading: as the wrapped backend; the decorator has no state of its own but the gate.
#pragma once

#include <memory>
#include <string>

#include "drivers/backend_listener.h"
#include "drivers/device_backend.h"
#include "drivers/injection/injecting_units.h"

namespace aclvmm::dev::injection {

class InjectingBackend final : public DeviceBackend {
 public:
  InjectingBackend(std::unique_ptr<DeviceBackend> inner, BackendListener& listener);

  // The wrapped backend (tests reach a backend's own hooks through it).
  DeviceBackend& inner() { return *inner_; }

  const char* name() const override { return inner_->name(); }
  const Capabilities& capabilities() const override { return inner_->capabilities(); }

  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  BlockAllocator& blocks() override { return blocks_; }
  DeviceMmu& mmu() override { return mmu_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  Sharing& sharing() override { return sharing_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }

  std::string describe(Result result) const override { return inner_->describe(result); }
  void visit_statistics(StatisticsVisitor& visitor) const override {
    inner_->visit_statistics(visitor);
  }

  void prepare_fork() override { inner_->prepare_fork(); }
  void after_fork_parent() override { inner_->after_fork_parent(); }
  void after_fork_child() override { inner_->after_fork_child(); }
  void release_inherited() override { inner_->release_inherited(); }

 private:
  const std::unique_ptr<DeviceBackend> inner_;
  InjectingDevices devices_;
  InjectingWindows windows_;
  InjectingPhysical physical_;
  InjectingBlocks blocks_;
  InjectingMmu mmu_;
  InjectingCopyEngine copy_engine_;
  InjectingSharing sharing_;
  InjectingUnified unified_;
  InjectingHost host_;
};

// Wraps `inner` (non-null). On failure (no memory: kOutOfMemory) `inner` is destroyed and *out
// is unchanged.
Result wrap_with_injection(std::unique_ptr<DeviceBackend> inner, BackendListener& listener,
                           std::unique_ptr<DeviceBackend>* out);

}  // namespace aclvmm::dev::injection
