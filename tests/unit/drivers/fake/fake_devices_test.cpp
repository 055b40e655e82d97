// The fake's devices (drivers/fake/fake_devices.h): configured facts, and the misuse a core must
// never commit counted as violations.
#include <memory>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

class FakeDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.device_count = 3;
    config_.soc = "Ascend910_9391";
    config_.server_id = 5;
    config_.pid = 31337;
    ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok());
  }
  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
};

TEST_F(FakeDevicesTest, PropertiesAreTheConfiguredMachine) {
  DeviceManager& devices = be_->devices();
  EXPECT_EQ(devices.device_count(), 3);
  DeviceProperties p;
  ASSERT_TRUE(devices.properties(2, &p).ok());
  EXPECT_EQ(p.soc_name, "Ascend910_9391");
  EXPECT_EQ(p.server_id, 5);
  EXPECT_EQ(p.physical_id, 2u);
  EXPECT_EQ(p.memory_total, config_.device_memory);
  EXPECT_EQ(devices.bare_tgid(), 31337);
  EXPECT_STREQ(be_->name(), "fake");
  EXPECT_EQ(fake_->violations(), 0u);
}

TEST_F(FakeDevicesTest, MisuseIsCountedButBusyIsAnAnswer) {
  DeviceManager& devices = be_->devices();
  ASSERT_TRUE(devices.open(1).ok());
  EXPECT_EQ(devices.open(1).condition(), Condition::kBusy);
  EXPECT_EQ(fake_->violations(), 0u) << "a second open is the contract's kBusy";
  struct Misuse {
    const char* what;
    Result (*call)(DeviceManager&);
  };
  const Misuse misuses[] = {
      {"open out of range", [](DeviceManager& d) { return d.open(3); }},
      {"close never opened", [](DeviceManager& d) { return d.close(0); }},
      {"close out of range", [](DeviceManager& d) { return d.close(-1); }},
      {"own peer", [](DeviceManager& d) { return d.enable_peer(2, 2); }},
      {"peer out of range", [](DeviceManager& d) { return d.disable_peer(0, 9); }},
      {"memory of no device", [](DeviceManager& d) {
         MemoryInfo info;
         return d.memory_info(7, MemoryKind::kHbm, &info);
       }},
      {"no such memory kind", [](DeviceManager& d) {
         MemoryInfo info;
         return d.memory_info(0, static_cast<MemoryKind>(9), &info);
       }},
  };
  uint64_t expected = 0;
  for (const Misuse& m : misuses) {
    EXPECT_EQ(m.call(devices).condition(), Condition::kInvalidArgument) << m.what;
    EXPECT_EQ(fake_->violations(), ++expected) << m.what;
  }
  EXPECT_TRUE(devices.close(1).ok());
}

}  // namespace
}  // namespace aclvmm::dev::fake
