// FakeBackend: the deterministic in-memory backend (docs/device-interface.md §8), with which the
// core's modules get unit tests that need no kernel, and which the conformance suite holds to
// the same contracts as emu.
//
// Migration steps 1–3 give it the units emu has: devices (fake_devices.h), physical memory in
// byte stores (fake_physical.h), host services (fake_host.h), the device MMU (fake_mmu.h, step
// 2), blocks (fake_blocks.h, step 2b), copies and queues (fake_copy_engine.h, steps 3 and 4),
// sharing between the "processes" of a FakeWorld (fake_sharing.h, step 5), managed memory
// (fake_unified.h, step 6), the windows as numbers (fake_windows.h, step 7); the other units
// answer kNotSupported (unsupported_units.h) until their steps. Everything a contract asks the
// core to guarantee is checked and counted (violations(), fake_machine.h). No system call but
// malloc, and no threads but one per queue (drivers/command_queues.h; commands run in
// submission order, deterministic).
//
// open_fake_backend() is the factory the tests use: the backend behind the same injection
// decorator as every backend (drivers/injection/), so "dev.*" rules reach it, and the bare
// FakeBackend for the test's own hooks. The fake is not in open_device_backend(): it is a test
// library, never part of libascendcl.so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "drivers/device_backend.h"
#include "drivers/fake/fake_blocks.h"
#include "drivers/fake/fake_copy_engine.h"
#include "drivers/fake/fake_devices.h"
#include "drivers/fake/fake_host.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_mmu.h"
#include "drivers/fake/fake_physical.h"
#include "drivers/fake/fake_sharing.h"
#include "drivers/fake/fake_unified.h"
#include "drivers/fake/fake_windows.h"
#include "drivers/unsupported_units.h"

namespace aclvmm::dev::fake {

class FakeBackend final : public PartialBackend {
 public:
  FakeBackend(const FakeConfig& config, BackendListener& listener);

  const char* name() const override { return "fake"; }
  const Capabilities& capabilities() const override { return capabilities_; }

  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  DeviceMmu& mmu() override { return mmu_; }
  Sharing& sharing() override { return sharing_; }
  BlockAllocator& blocks() override { return blocks_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }

  std::string describe(Result result) const override;
  void visit_statistics(StatisticsVisitor& visitor) const override;
  // No fork: the fake is one object in one process (the fork hooks do nothing; conformance's
  // fork cases skip it).

  // ---- the test's hooks
  uint64_t violations() const { return machine_.violations(); }
  std::string last_violation() const { return machine_.last_violation(); }
  // The bytes of a physical object, as the CPU would see them through a mapping.
  Result read_physical(PhysicalId memory, uint64_t offset, void* dst, size_t n) const {
    return physical_.read(memory, offset, dst, n);
  }
  Result write_physical(PhysicalId memory, uint64_t offset, const void* src, size_t n) {
    return physical_.write(memory, offset, src, n);
  }
  size_t live_physical_objects() const { return physical_.live_objects(); }
  // The test's CPU touching va (fake_mmu.h; fake_unified.h in the managed window, where it does
  // what a CPU fault would): kBadAddress where a real CPU would fault.
  Result cpu_access(uint64_t va, void* buffer, size_t n, bool write) {
    return unified_.in_window(va) ? unified_.cpu_access(va, buffer, n, write)
                                  : mmu_.cpu_access(va, buffer, n, write);
  }
  size_t live_mappings() const { return mmu_.live_mappings(); }
  size_t live_ranges() const { return windows_.live_ranges(); }
  bool segment_published(const std::string& path) const { return host_.published(path); }

 private:
  FakeMachine machine_;
  Capabilities capabilities_;
  FakeDevices devices_;
  FakePhysical physical_;
  FakeHost host_;
  FakeSharing sharing_;  // after physical_: ends exports as objects are released
  FakeMmu mmu_;  // after physical_: its destructor lets go of what is still mapped
  FakeWindows windows_;
  FakeBlocks blocks_;
  FakeUnified unified_;
  FakeCopyEngine copy_engine_;
};

// A fake behind the injection decorator in *out; *bare (if given) is the FakeBackend inside, valid
// as long as *out. kInvalidArgument for a config outside its ranges (device_count 1..kMaxDevices,
// numa_nodes >= 0) or a null listener.
Result open_fake_backend(const FakeConfig& config, BackendListener* listener,
                         std::unique_ptr<DeviceBackend>* out, FakeBackend** bare = nullptr);

}  // namespace aclvmm::dev::fake
