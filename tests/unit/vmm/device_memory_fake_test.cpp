// DeviceMemory (src/vmm/device_memory.*) over the fake backend: an object held by an allocation is
// released exactly once, when the allocation goes or is reset, into the backend that made it even
// after everyone else let that backend go; take() over a held object releases the old one first;
// an injected dev.phys.release leaves the object the backend's and the holder empty.
// create() and adopt() need the backend's transitional LegacyMemory bridge (issue 14 steps 2–5),
// which the fake does not have: they refuse with the internal error and touch nothing.
#include "vmm/device_memory.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_device.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

constexpr uint64_t kSize = 4 * dev::kMiB;

dev::PhysicalId new_object(testing::FakeDevice& device, uint64_t bytes = kSize) {
  dev::PhysicalId id;
  EXPECT_TRUE(device.device()
                  ->physical()
                  .create({dev::Location::device(0), dev::PageType::kHuge, dev::MemType::kHbm, bytes},
                          &id)
                  .ok());
  return id;
}

TEST(DeviceMemoryFakeTest, AHeldObjectIsReleasedOnceWhenItsHolderGoes) {
  testing::FakeDevice device;
  {
    DeviceMemory held;
    EXPECT_FALSE(held.id());
    held.take(device.device(), new_object(device));
    EXPECT_TRUE(held.id());
    EXPECT_EQ(device.fake().live_physical_objects(), 1u);
    EXPECT_EQ(device.recorder().usage_sum(0), static_cast<int64_t>(kSize));
  }
  EXPECT_EQ(device.fake().live_physical_objects(), 0u);
  EXPECT_EQ(device.recorder().usage_sum(0), 0);

  DeviceMemory reset;
  reset.take(device.device(), new_object(device));
  reset.reset();
  EXPECT_FALSE(reset.id());
  reset.reset();  // nothing held: nothing released twice
  EXPECT_EQ(device.fake().live_physical_objects(), 0u);
  EXPECT_EQ(device.recorder().usage().size(), 4u) << "two charges, two releases";
  device.expect_no_violations();
}

TEST(DeviceMemoryFakeTest, TakingAnotherObjectReleasesTheOneHeld) {
  testing::FakeDevice device;
  DeviceMemory held;
  held.take(device.device(), new_object(device, 2 * dev::kMiB));
  const dev::PhysicalId second = new_object(device, 6 * dev::kMiB);
  held.take(device.device(), second);
  EXPECT_EQ(held.id().value, second.value);
  EXPECT_EQ(device.fake().live_physical_objects(), 1u);
  EXPECT_EQ(device.recorder().usage_sum(0), static_cast<int64_t>(6 * dev::kMiB));
  held.reset();
  EXPECT_EQ(device.recorder().usage_sum(0), 0);
  device.expect_no_violations();
}

TEST(DeviceMemoryFakeTest, MemoryOutlivingItsRuntimeIsReleasedIntoItsOwnBackend) {
  testing::FakeDevice device;
  dev::fake::FakeBackend& fake = device.fake();
  PhysicalAllocation phys;
  phys.device_memory.take(device.device(), new_object(device));
  device.exit_process();  // the runtime lets its backend go (a restart); the handle still lives
  EXPECT_EQ(fake.live_physical_objects(), 1u) << "kept alive by the allocation";
  phys.device_memory.reset();  // the last reference: released, then the backend goes
  EXPECT_EQ(device.recorder().usage_sum(0), 0) << "the charge came back to the same ledger";
}

TEST(DeviceMemoryFakeTest, AFailedReleaseLeavesTheObjectToTheBackend) {
  testing::FakeDevice device;
  DeviceMemory held;
  held.take(device.device(), new_object(device));
  device.recorder().arm(dev::steps::kPhysicalRelease, 1, EIO);
  held.reset();
  EXPECT_FALSE(held.id()) << "the holder lets go either way";
  EXPECT_EQ(device.fake().live_physical_objects(), 1u) << "leaked in the backend, not freed twice";
  EXPECT_EQ(device.recorder().usage_sum(0), static_cast<int64_t>(kSize));
  device.expect_no_violations();
}

TEST(DeviceMemoryFakeTest, CreateAndAdoptRefuseABackendWithoutTheLegacyBridge) {
  testing::FakeDevice device;
  std::unique_ptr<drv::Backend> old = drv::create_backend("emu");
  ASSERT_TRUE(old);
  PhysicalAllocation phys;
  phys.size = kSize;
  dev::Condition refused = dev::Condition::kOk;
  const Status created = DeviceMemory::create(device.device(), *old, phys, &refused);
  EXPECT_EQ(created.code(), kAclInternalError);
  EXPECT_NE(created.message().find("gives no access to its memory"), std::string::npos)
      << created.message();
  EXPECT_EQ(refused, dev::Condition::kOk) << "not a refusal of the backend";
  const Status adopted = DeviceMemory::adopt(device.device(), phys);
  EXPECT_EQ(adopted.code(), kAclInternalError);
  EXPECT_FALSE(phys.device_memory.id());
  EXPECT_FALSE(phys.memory);
  EXPECT_EQ(device.fake().live_physical_objects(), 0u);
  EXPECT_TRUE(device.recorder().usage().empty());
  device.expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
