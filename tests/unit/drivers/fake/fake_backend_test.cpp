// The fake backend as a whole (drivers/fake/fake_backend.h): its factory's checks, the
// capabilities of its units, failure injection through the shared decorator, its messages.
#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

TEST(FakeBackendTest, TheFactoryRefusesMachinesOutsideItsRanges) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  FakeConfig config;
  for (int32_t count : {0, -1, kMaxDevices + 1}) {
    config.device_count = count;
    EXPECT_EQ(open_fake_backend(config, &listener, &be).condition(), Condition::kInvalidArgument)
        << count;
  }
  config = FakeConfig{};
  config.numa_nodes = -1;
  EXPECT_EQ(open_fake_backend(config, &listener, &be).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(open_fake_backend(FakeConfig{}, nullptr, &be).condition(),
            Condition::kInvalidArgument);
  EXPECT_EQ(be, nullptr);
  config.numa_nodes = 0;
  config.device_count = kMaxDevices;
  ASSERT_TRUE(open_fake_backend(config, &listener, &be).ok());
  EXPECT_EQ(be->devices().device_count(), kMaxDevices);
}

TEST(FakeBackendTest, CapabilitiesClaimOnlyTheUnitsItHas) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  FakeConfig config;
  config.giant_pages = false;
  ASSERT_TRUE(open_fake_backend(config, &listener, &be).ok());
  const Capabilities& c = be->capabilities();
  EXPECT_EQ(c.giant_page, 0u);
  EXPECT_TRUE(c.map_routes);
  EXPECT_TRUE(c.host_numa);
  EXPECT_TRUE(c.sharing);  // step 5
  EXPECT_TRUE(c.fabric_sharing);
  EXPECT_TRUE(c.disable_validation);
  EXPECT_TRUE(c.managed_memory);  // step 6
  EXPECT_TRUE(c.managed_residency);
  EXPECT_TRUE(c.managed_write_tracking);
  EXPECT_FALSE(c.cpu_visible_device_memory);
  PhysicalId id;
  EXPECT_EQ(be->physical()
                .create({Location::device(0), PageType::kGiant, MemType::kHbm, kGiB}, &id)
                .condition(),
            Condition::kNotSupported);
}

TEST(FakeBackendTest, InterfaceStepsFailThroughTheDecorator) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  FakeBackend* fake = nullptr;
  ASSERT_TRUE(open_fake_backend(FakeConfig{}, &listener, &be, &fake).ok());
  listener.arm(steps::kPhysicalCreate, 1, ENOSPC);
  PhysicalId id;
  EXPECT_EQ(be->physical().create({Location::device(0), PageType::kHuge, MemType::kHbm, 2 * kMiB},
                                  &id),
            Result::from_errno(ENOSPC));
  EXPECT_EQ(fake->live_physical_objects(), 0u);
  EXPECT_TRUE(listener.usage().empty());
  EXPECT_EQ(fake->violations(), 0u);
}

TEST(FakeBackendTest, DescribeNamesTheFakeAndTheErrno) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  ASSERT_TRUE(open_fake_backend(FakeConfig{}, &listener, &be).ok());
  const std::string text = be->describe(Result::from_errno(EINVAL));
  EXPECT_EQ(text.rfind("fake: ", 0), 0u) << text;
  EXPECT_NE(text.find("(errno 22)"), std::string::npos) << text;
}

}  // namespace
}  // namespace aclvmm::dev::fake
