// A core module's unit test over the fake backend (docs/device-interface.md §8, label `fake`):
// the fake opened as the runtime opens a backend (behind the injection decorator), reporting to a
// listener of the test's choice (a RecordingListener of its own by default, or the core's
// DeviceUsage/CoreListener when the test is about them), the bare FakeBackend for its hooks, and
// a DeviceDirectory over it for the modules that are handed one (vmm/device_directory.h).
//
// The core's modules make physical memory with DeviceMemory::create; a test that needs an
// allocation without the module that makes it gets one from make_allocation (the object made
// through the fake's PhysicalAllocator and given to the allocation with DeviceMemory::take, as an
// import does).
//
// Every test ends with the fake's violations() at 0 (expect_no_violations): a precondition the
// core failed to check fails the test instead of passing silently.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <utility>

#include "drivers/fake/fake_backend.h"
#include "drivers/fake/fake_world.h"
#include "unit/testing/recording_listener.h"
#include "vmm/device_directory.h"
#include "vmm/physical.h"

namespace aclvmm::testing {

class FakeDevice final : public DeviceDirectory {
 public:
  // `listener` (if given) outlives this; otherwise the backend reports to recorder().
  explicit FakeDevice(dev::fake::FakeConfig config = {}, dev::BackendListener* listener = nullptr)
      : config_(std::move(config)) {
    std::unique_ptr<dev::DeviceBackend> opened;
    const dev::Result r = dev::fake::open_fake_backend(
        config_, listener != nullptr ? listener : &recorder_, &opened, &fake_);
    EXPECT_TRUE(r.ok()) << r.raw();
    backend_ = std::shared_ptr<dev::DeviceBackend>(std::move(opened));
  }
  // The backend goes with this unless an allocation still holds it (its listener must not):
  // tests release their allocations first.
  ~FakeDevice() {
    if (backend_) {
      EXPECT_EQ(backend_.use_count(), 1) << "an allocation outlives the test";
    }
  }

  const dev::fake::FakeConfig& config() const { return config_; }
  dev::fake::FakeBackend& fake() { return *fake_; }
  RecordingListener& recorder() { return recorder_; }
  // The backend is this "process" exiting (FakeWorld): its exports vanish.
  void exit_process() { backend_.reset(); }

  // A PhysicalAllocation holding a new object of `bytes` at `where` (huge pages, HBM), as the
  // core's records describe one; null (and a failed expectation) if the fake refused.
  std::shared_ptr<PhysicalAllocation> make_allocation(dev::Location where, uint64_t bytes) {
    dev::PhysicalId id;
    const dev::Result r = backend_->physical().create(
        dev::PhysicalSpec{where, dev::PageType::kHuge, dev::MemType::kHbm, bytes}, &id);
    EXPECT_TRUE(r.ok()) << backend_->describe(r);
    if (!r.ok()) return nullptr;
    auto phys = std::make_shared<PhysicalAllocation>();
    phys->side = where.kind == dev::Location::Kind::kDevice ? Side::kDevice : Side::kHost;
    phys->device = where.kind == dev::Location::Kind::kDevice ? where.id : 0;
    phys->size = bytes;
    phys->device_memory.take(backend_, id);
    return phys;
  }

  void expect_no_violations() {
    if (fake_ != nullptr && backend_) {
      EXPECT_EQ(fake_->violations(), 0u) << fake_->last_violation();
    }
  }

  // ---- DeviceDirectory
  std::shared_ptr<MemoryPool> pool(int) const override { return nullptr; }
  int user_device(int physical_id) const override { return physical_id; }
  bool host_numa() const override { return config_.numa_nodes > 0; }
  int device_count() const override { return config_.device_count; }
  const std::shared_ptr<dev::DeviceBackend>& device() const override { return backend_; }
  void enable_peer_pair(int a, int b) override { peer_pairs_.insert({a, b}); }
  const std::set<std::pair<int, int>>& peer_pairs() const { return peer_pairs_; }

 private:
  const dev::fake::FakeConfig config_;
  RecordingListener recorder_;  // before backend_: outlives it
  dev::fake::FakeBackend* fake_ = nullptr;
  std::shared_ptr<dev::DeviceBackend> backend_;
  std::set<std::pair<int, int>> peer_pairs_;
};

// Two "processes" of one FakeWorld: the config of the first with the world set, and of a second
// one (pid + 1), started after it.
inline std::pair<dev::fake::FakeConfig, dev::fake::FakeConfig> fake_process_pair() {
  dev::fake::FakeConfig first;
  first.world = std::make_shared<dev::fake::FakeWorld>();
  dev::fake::FakeConfig second = first;
  second.pid = first.pid + 1;
  return {first, second};
}

}  // namespace aclvmm::testing
