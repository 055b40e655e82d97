// FakeRuntime: vmm::Vmm, memops::MemoryOps and ManagedMemory over the fake backend, with the
// pieces a Runtime holds (the address space, the physical-handle table, the share service,
// managed memory) and a StandInRuntime for what the operations ask the runtime, attached as a
// runtime start attaches them (runtime.cpp start_locked): the address space to the device
// backend, managed memory to its layout's managed window, and the pools as mirrors of the
// backend's ledger (D8; connect_pools does that for emu's DeviceUsage, PoolMirror here).
//
// The fake reports to a PoolMirror, which moves the stand-in's pools and records everything in
// a RecordingListener (recorder()), where a test arms its dev.* steps. The destructor gives
// everything back (handles, regions, managed ranges) before the fake goes, and checks that the
// fake then holds nothing: no object, mapping or range outlives the core's records.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "base/handle_table.h"
#include "unit/testing/fake_device.h"
#include "unit/testing/recording_listener.h"
#include "unit/testing/stand_in_runtime.h"
#include "vmm/address_space.h"
#include "vmm/managed.h"
#include "vmm/memory_ops.h"
#include "vmm/physical.h"
#include "vmm/share.h"
#include "vmm/vmm.h"

namespace aclvmm::testing {

// An address as the core's messages write it, for the tests that expect those messages.
inline std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Usage reports move the stand-in's pools (as DeviceUsage moves a start's); everything is also
// the recorder's, which answers the injection questions.
class PoolMirror final : public dev::BackendListener {
 public:
  PoolMirror(StandInRuntime& rt, RecordingListener& recorder) : rt_(rt), recorder_(recorder) {}
  void log(dev::Severity s, const char* module, const char* message) noexcept override {
    recorder_.log(s, module, message);
  }
  void residency_event(const dev::ResidencyEvent& event) noexcept override {
    recorder_.residency_event(event);
  }
  void usage_changed(dev::DeviceIndex device, int64_t delta) noexcept override {
    recorder_.usage_changed(device, delta);
    MemoryPool* pool = device == dev::kNoDevice ? rt_.host.get() : rt_.pool(device).get();
    if (pool != nullptr) pool->mirror(delta);
  }
  const std::atomic<bool>& injection_armed() const noexcept override {
    return recorder_.injection_armed();
  }
  int injected(const char* step) noexcept override { return recorder_.injected(step); }

 private:
  StandInRuntime& rt_;
  RecordingListener& recorder_;
};

class FakeRuntime {
 public:
  explicit FakeRuntime(dev::fake::FakeConfig config = {})
      : device_(std::move(config), &mirror_) {
    rt.numa = device_.config().numa_nodes > 0;
    rt.host = std::make_shared<MemoryPool>(device_.config().host_memory);
    rt.device_backend = device_.device();
    space.attach_device(device_.device());
    managed.attach(device_.device()->windows().layout().managed);
  }
  ~FakeRuntime() {
    (void)managed.release_all();
    (void)space.clear();
    for (const auto& [token, phys] : physical.snapshot()) (void)physical.remove(token);
    EXPECT_EQ(fake().live_physical_objects(), 0u) << "an object outlived the core's records";
    EXPECT_EQ(fake().live_mappings(), 0u) << "a mapping outlived the core's records";
    EXPECT_EQ(fake().live_ranges(), 0u) << "a range outlived the core's records";
    EXPECT_EQ(rt.pools[0]->used() + rt.pools[1]->used() + rt.host->used(), 0u)
        << "the pools still mirror a charge";
    device_.expect_no_violations();
    rt.device_backend.reset();  // the FakeDevice checks that it holds the last reference
  }

  FakeDevice& device() { return device_; }
  dev::fake::FakeBackend& fake() { return device_.fake(); }
  RecordingListener& recorder() { return recorder_; }
  const dev::WindowLayout& layout() { return device_.device()->windows().layout(); }

  StandInRuntime rt;

 private:
  RecordingListener recorder_;  // before the fake: outlives it
  PoolMirror mirror_{rt, recorder_};
  FakeDevice device_;

 public:
  AddressSpace space;
  HandleTable<PhysicalAllocation> physical{0x7a11};
  // Like the runtime's, never destroyed (its fork handling refers to it for the process's life).
  ShareService& sharing = *new ShareService();
  ManagedMemory managed{rt};
  vmm::Vmm vmm{rt, space, physical, sharing, managed};
  memops::MemoryOps ops{rt, space, managed};
};

}  // namespace aclvmm::testing
