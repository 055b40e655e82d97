// open_device_backend() (drivers/device_registry.cpp): the names it knows, its refusals, and
// that what it returns is always behind the injection decorator.
#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "drivers/device_backend.h"
#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev {
namespace {

BackendOptions emu_options() {
  BackendOptions o;
  o.emulation.device_count = 2;
  o.emulation.device_memory = 64 * kMiB;
  return o;
}

TEST(DeviceRegistryTest, OnlyKnownNamesOpenAndOnlyWithAListener) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  EXPECT_EQ(open_device_backend("nope", emu_options(), &listener, &be).condition(),
            Condition::kNotFound);
  EXPECT_EQ(open_device_backend("fake", emu_options(), &listener, &be).condition(),
            Condition::kNotFound)
      << "the fake is a test library, not part of the runtime";
  EXPECT_EQ(open_device_backend("emu", emu_options(), nullptr, &be).condition(),
            Condition::kInvalidArgument);
  BackendOptions no_memory = emu_options();
  no_memory.emulation.device_memory = 0;
  EXPECT_EQ(open_device_backend("emu", no_memory, &listener, &be).condition(),
            Condition::kInvalidArgument);
  EXPECT_EQ(be, nullptr);
  ASSERT_TRUE(open_device_backend("emu", emu_options(), &listener, &be).ok());
  EXPECT_STREQ(be->name(), "emu");
}

TEST(DeviceRegistryTest, TheBackendIsBehindTheInjectionDecorator) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  ASSERT_TRUE(open_device_backend("emu", emu_options(), &listener, &be).ok());
  listener.arm(steps::kDeviceOpen, 1, ENODEV);
  EXPECT_EQ(be->devices().open(0), Result::from_errno(ENODEV));
  EXPECT_TRUE(be->devices().open(0).ok()) << "the failed open opened nothing";
}

}  // namespace
}  // namespace aclvmm::dev
