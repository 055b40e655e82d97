// The core's BackendListener (src/runtime/core_listener.*) as the fake backend's listener: the
// usage the fake's ledger reports moves the connected pools, their monitors' counters and the
// process's sums exactly (D8), only for the location reported; a refusal reports nothing; a
// legacy drv.* rule fires only at the step that does its work now (emu's), never at a dev.*
// step of another backend.
#include "runtime/core_listener.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <vector>

#include "drivers/injection_steps.h"
#include "runtime/injection.h"
#include "unit/testing/fake_device.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

dev::PhysicalSpec spec(dev::Location where, uint64_t bytes) {
  return dev::PhysicalSpec{where, dev::PageType::kHuge, dev::MemType::kHbm, bytes};
}

TEST(CoreListenerFakeTest, TheFakesUsageMovesOnlyTheConnectedPoolOfItsLocation) {
  DeviceUsage usage;
  std::atomic<uint64_t> counter0{0};
  auto pool0 = std::make_shared<MemoryPool>(64 * dev::kMiB, UsageMirror{nullptr, &counter0});
  auto host = std::make_shared<MemoryPool>(256 * dev::kMiB);
  usage.connect(0, pool0);
  usage.connect(dev::kNoDevice, host);
  const int64_t sum0 = core_listener().reported_usage(0);
  const int64_t sum1 = core_listener().reported_usage(1);
  const int64_t sum_host = core_listener().reported_usage(dev::kNoDevice);
  {
    testing::FakeDevice device({}, &usage);
    dev::PhysicalAllocator& physical = device.device()->physical();
    dev::PhysicalId on0, on1, on_host;
    ASSERT_TRUE(physical.create(spec(dev::Location::device(0), 6 * dev::kMiB), &on0).ok());
    ASSERT_TRUE(physical.create(spec(dev::Location::device(1), 2 * dev::kMiB), &on1).ok());
    ASSERT_TRUE(physical.create(spec(dev::Location::host(), 4 * dev::kMiB), &on_host).ok());
    EXPECT_EQ(pool0->used(), 6 * dev::kMiB);
    EXPECT_EQ(counter0.load(), 6 * dev::kMiB) << "the monitors' counter follows the pool";
    EXPECT_EQ(host->used(), 4 * dev::kMiB);
    EXPECT_EQ(core_listener().reported_usage(0) - sum0, static_cast<int64_t>(6 * dev::kMiB));
    EXPECT_EQ(core_listener().reported_usage(1) - sum1, static_cast<int64_t>(2 * dev::kMiB))
        << "an unconnected device still reaches the process's sums";
    EXPECT_EQ(core_listener().reported_usage(dev::kNoDevice) - sum_host,
              static_cast<int64_t>(4 * dev::kMiB));

    // The ledger refuses (64 MiB per device): nothing is reported, the pool stays.
    dev::PhysicalId too_big;
    EXPECT_EQ(physical.create(spec(dev::Location::device(0), 60 * dev::kMiB), &too_big).condition(),
              dev::Condition::kOutOfMemory);
    EXPECT_EQ(pool0->used(), 6 * dev::kMiB);

    ASSERT_TRUE(physical.release(on0).ok());
    ASSERT_TRUE(physical.release(on1).ok());
    ASSERT_TRUE(physical.release(on_host).ok());
    EXPECT_EQ(pool0->used(), 0u);
    EXPECT_EQ(counter0.load(), 0u);
    EXPECT_EQ(host->used(), 0u);
    EXPECT_EQ(core_listener().reported_usage(0), sum0);
    EXPECT_EQ(core_listener().reported_usage(1), sum1);
    EXPECT_EQ(core_listener().reported_usage(dev::kNoDevice), sum_host);
    device.expect_no_violations();
  }
}

TEST(CoreListenerFakeTest, ALegacyRuleFiresAtItsEmuStepNotAtTheFakesDeviceStep) {
  testing::FakeDevice device({}, &core_listener());
  injection_arm("drv.create_physical", 1, ENOMEM);  // emu's memfd creation
  dev::PhysicalId id;
  ASSERT_TRUE(device.device()->physical().create(spec(dev::Location::device(0), 2 * dev::kMiB), &id).ok())
      << "dev.phys.create is not the step a legacy name stands for";
  EXPECT_EQ(injection_remaining("drv.create_physical"), 1u);
  EXPECT_EQ(core_listener().injected(steps::kPhysicalCreate), 0);
  EXPECT_EQ(core_listener().injected(steps::kEmuMemfdCreate), ENOMEM);
  EXPECT_EQ(injection_remaining("drv.create_physical"), 0u);
  EXPECT_TRUE(device.device()->physical().release(id).ok());
  device.expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
