// emu's UnifiedMemory (drivers/emu/unified/emu_unified.h) beyond conformance C37-C43: the copy
// engine's kManaged endpoints migrate pages for the executing device before a byte moves (and a
// migration the device has no room for moves none), a zero fill asks emu.memfd.populate after
// the hole is punched, the fault tracker's steps go through the listener's gate (a refused start
// leaves the pages on the host), and the "managed" statistics are the unit's counters.
#include "drivers/emu/unified/emu_unified.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "drivers/emu/device/emu_device_backend.h"
#include "unit/testing/endpoints.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kPage = kManagedPage;

using testing::host;
using testing::managed;

class Counters final : public StatisticsVisitor {
 public:
  void counter(const char* group, const char* name, uint64_t value) override {
    if (std::string(group) == "managed") values[name] = value;
  }
  void flag(const char* group, const char* name, bool value) override {
    if (std::string(group) == "managed") values[name] = value ? 1 : 0;
  }
  std::map<std::string, uint64_t> values;
};

class EmuUnifiedTest : public ::testing::Test {
 protected:
  void open(uint64_t device_memory = 64 * kMiB) {
    BackendOptions o;
    o.emulation.device_count = 2;
    o.emulation.device_memory = device_memory;
    ASSERT_TRUE(EmuDeviceBackend::open(o, listener_, &be_).ok());
  }
  void TearDown() override {
    if (base_ != 0) {
      EXPECT_TRUE(be_->unified_memory().free(base_, FreeMode::kNormal).ok());
    }
  }
  uint64_t used(DeviceIndex d) {
    MemoryInfo info;
    EXPECT_TRUE(be_->devices().memory_info(d, MemoryKind::kHbm, &info).ok());
    return info.total - info.free;
  }
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    for (const ResidencyEvent& e : listener_.residency_events()) {
      out.push_back(std::string(e.what) + "@" + std::to_string(e.device));
    }
    return out;
  }
  uint64_t stat(const char* name) {
    Counters c;
    be_->visit_statistics(c);
    return c.values[name];
  }

  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  uint64_t base_ = 0;
};

TEST_F(EmuUnifiedTest, ManagedEndpointsMigrateForTheExecutorBeforeTheBytesMove) {
  open();
  ASSERT_TRUE(be_->unified_memory().allocate(2 * kPage, &base_).ok());
  if (!be_->unified_memory().tracking().residency) GTEST_SKIP() << "no fault tracking here";
  const std::vector<uint8_t> pattern(8192, 0x5a);
  const CopyOutcome in = be_->copy_engine().copy(
      CopyRequest{managed(base_ + kPage + 4096), host(pattern.data()), pattern.size(), Executor{1, 0}});
  ASSERT_TRUE(in.result.ok());
  EXPECT_EQ(events(), (std::vector<std::string>{"device_fault@1", "to_device@1"}))
      << "only the page written, to the executing device";
  EXPECT_EQ(used(1), kPage);
  EXPECT_EQ(used(0), 0u);
  EXPECT_EQ(stat("device_faults"), 1u);
  EXPECT_EQ(stat("bytes_to_device"), kPage);
  // Read back by the device that holds it: no migration; by the host side (no executor): in
  // place, nothing moves either.
  std::vector<uint8_t> back(pattern.size());
  ASSERT_TRUE(be_->copy_engine()
                  .copy(CopyRequest{host(back.data()), managed(base_ + kPage + 4096), back.size(),
                                    Executor{1, 0}})
                  .result.ok());
  EXPECT_EQ(back, pattern);
  std::fill(back.begin(), back.end(), 0);
  ASSERT_TRUE(be_->copy_engine()
                  .copy(CopyRequest{host(back.data()), managed(base_ + kPage + 4096), back.size(),
                                    Executor{kNoDevice, 0}})
                  .result.ok());
  EXPECT_EQ(back, pattern);
  EXPECT_EQ(events().size(), 2u);
  EXPECT_EQ(stat("device_faults"), 1u);
}

TEST_F(EmuUnifiedTest, AMigrationWithoutRoomMovesNoByte) {
  open(2 * kMiB);
  // The device's only page is taken by device memory: nothing of the unit's to evict.
  PhysicalId held;
  ASSERT_TRUE(be_->physical()
                  .create(PhysicalSpec{Location::device(0), PageType::kHuge, MemType::kHbm, 2 * kMiB},
                          &held)
                  .ok());
  ASSERT_TRUE(be_->unified_memory().allocate(kPage, &base_).ok());
  const bool residency = be_->unified_memory().tracking().residency;
  const std::vector<uint8_t> pattern(4096, 0x77);
  const CopyOutcome out = be_->copy_engine().copy(
      CopyRequest{managed(base_), host(pattern.data()), pattern.size(), Executor{0, 0}});
  if (residency) {
    EXPECT_EQ(out.result.condition(), Condition::kOutOfMemory);
    EXPECT_EQ(out.failed_side, CopyOutcome::Side::kDestination);
    std::vector<uint8_t> back(pattern.size(), 1);
    ASSERT_TRUE(be_->copy_engine()
                    .copy(CopyRequest{host(back.data()), managed(base_), back.size(),
                                      Executor{kNoDevice, 0}})
                    .result.ok());
    EXPECT_EQ(back, std::vector<uint8_t>(pattern.size(), 0)) << "nothing was written";
  } else {
    EXPECT_TRUE(out.result.ok()) << "without residency the device reaches the page in place";
  }
  EXPECT_TRUE(be_->physical().release(held).ok());
}

TEST_F(EmuUnifiedTest, AZeroFillPopulatesThePagesAgain) {
  open();
  ASSERT_TRUE(be_->unified_memory().allocate(kPage, &base_).ok());
  listener_.arm("emu.memfd.populate", 1, ENOMEM);
  const CopyOutcome out =
      be_->copy_engine().fill(FillRequest{managed(base_), 0, kPage, Executor{kNoDevice, 0}});
  EXPECT_EQ(out.result.condition(), Condition::kOutOfMemory) << "the step after the hole";
  EXPECT_FALSE(listener_.armed("emu.memfd.populate"));
  EXPECT_TRUE(be_->copy_engine()
                  .fill(FillRequest{managed(base_), 0x11, kPage, Executor{kNoDevice, 0}})
                  .result.ok())
      << "a fill of another value punches nothing";
}

TEST_F(EmuUnifiedTest, FaultTrackingStepsGoThroughTheListenersGate) {
  open();
  listener_.arm("emu.cpu_fault.start", 1, EPERM);
  ASSERT_TRUE(be_->unified_memory().allocate(kPage, &base_).ok())
      << "tracking that cannot start leaves managed memory on the host";
  EXPECT_FALSE(listener_.armed("emu.cpu_fault.start"));
  EXPECT_FALSE(be_->unified_memory().tracking().residency);
  EXPECT_EQ(stat("fault_tracking"), 0u);
  ASSERT_TRUE(be_->unified_memory().prefetch(base_, kPage, Location::device(0)).ok());
  EXPECT_EQ(used(0), 0u) << "nothing migrates without tracking";
  EXPECT_EQ(stat("prefetch_bytes"), 0u);
}

}  // namespace
}  // namespace aclvmm::dev::emu
