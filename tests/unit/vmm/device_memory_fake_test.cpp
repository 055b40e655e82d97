// DeviceMemory (src/vmm/device_memory.*) over the fake backend: an object held by an allocation is
// released exactly once, when the allocation goes or is reset, into the backend that made it even
// after everyone else let that backend go; take() over a held object releases the old one first;
// an injected dev.phys.release leaves the object the backend's and the holder empty.
// create() makes the object in the fake: the handle's location, types and size as asked, and
// each refusal of the fake (its ledger full, an injected failure) worded with the backend's
// reason and rolled back.
#include "vmm/device_memory.h"

#include <gtest/gtest.h>

#include <acl/error_codes/rt_error_codes.h>

#include <cerrno>
#include <memory>
#include <string>

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

// What vmm_physical checked and rounded before it asks for the object.
void describe_handle(PhysicalAllocation& phys, Side side, int device, uint64_t size) {
  phys.side = side;
  phys.device = device;
  phys.page_type = kHugePage;
  phys.mem_type = kHbm;
  phys.size = size;
}

TEST(DeviceMemoryFakeTest, CreateMakesTheHandlesObjectInTheBackend) {
  testing::FakeDevice device;
  PhysicalAllocation phys;
  describe_handle(phys, Side::kDevice, 1, kSize);
  dev::Condition refused = dev::Condition::kOk;
  const Status st = DeviceMemory::create(device.device(), phys, &refused);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(refused, dev::Condition::kOk);
  ASSERT_TRUE(phys.device_memory.id());
  dev::PhysicalProperties props;
  ASSERT_TRUE(device.device()->physical().properties(phys.device_memory.id(), &props).ok());
  EXPECT_EQ(props.location.kind, dev::Location::Kind::kDevice);
  EXPECT_EQ(props.location.id, 1);
  EXPECT_EQ(props.page_type, dev::PageType::kHuge);
  EXPECT_EQ(props.mem_type, dev::MemType::kHbm);
  EXPECT_EQ(props.size, kSize);
  EXPECT_EQ(device.recorder().usage_sum(1), static_cast<int64_t>(kSize));

  phys.device_memory.reset();
  EXPECT_EQ(device.fake().live_physical_objects(), 0u);
  EXPECT_EQ(device.recorder().usage_sum(1), 0);
  device.expect_no_violations();
}

TEST(DeviceMemoryFakeTest, EachRefusalOfTheBackendIsWordedAndLeavesNothing) {
  const struct {
    const char* what;
    Side side;
    uint64_t size;
    const char* step;  // armed to fail the create with EIO, or null
    int code;
    dev::Condition condition;
  } cases[] = {
      // FakeConfig: 64 MiB per device, 256 MiB of host memory.
      {"a device's ledger full", Side::kDevice, 66 * dev::kMiB, nullptr,
       ACL_ERROR_RT_MEMORY_ALLOCATION, dev::Condition::kOutOfMemory},
      {"the host's ledger full", Side::kHost, 258 * dev::kMiB, nullptr,
       ACL_ERROR_RT_MEMORY_ALLOCATION, dev::Condition::kOutOfMemory},
      {"an injected dev.phys.create", Side::kDevice, kSize, dev::steps::kPhysicalCreate,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, dev::Condition::kDeviceLost},
  };
  for (const auto& c : cases) {
    testing::FakeDevice device;
    if (c.step != nullptr) device.recorder().arm(c.step, 1, EIO);
    PhysicalAllocation phys;
    describe_handle(phys, c.side, 0, c.size);
    dev::Condition refused = dev::Condition::kOk;
    const Status st = DeviceMemory::create(device.device(), phys, &refused);
    EXPECT_EQ(st.code(), c.code) << c.what << ": " << st.message();
    const std::string words =
        "the backend could not create " + std::to_string(c.size) + " bytes of physical memory: ";
    EXPECT_EQ(st.message().rfind(words, 0), 0u) << c.what << ": " << st.message();
    EXPECT_GT(st.message().size(), words.size()) << c.what << ": the backend's reason follows";
    EXPECT_EQ(refused, c.condition) << c.what;
    EXPECT_FALSE(phys.device_memory.id()) << c.what;
    EXPECT_EQ(device.fake().live_physical_objects(), 0u) << c.what;
    EXPECT_EQ(device.recorder().usage_sum(c.side == Side::kHost ? dev::kNoDevice : 0), 0) << c.what;
    device.expect_no_violations();
  }
}

}  // namespace
}  // namespace aclvmm
