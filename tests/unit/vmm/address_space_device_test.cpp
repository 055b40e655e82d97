// AddressSpace programs the device backend's MMU (docs/device-interface.md §7, migration step 2):
// every VMM mapping, unmap, access change and peer grant reaches DeviceMmu, and a refusal of the
// device MMU leaves the core's records as they were.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>

#include "drivers/injection_steps.h"
#include "unit/testing/address_space_fixture.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

class AddressSpaceDeviceTest : public testing::AddressSpaceOverDevice {
 protected:
  std::shared_ptr<PhysicalAllocation> phys(Side side, int device = 0) {
    auto p = std::make_shared<PhysicalAllocation>();
    p->side = side;
    p->device = device;
    p->size = 2 * kMiB;
    testing::create_in(device_, *p);
    return p;
  }
  dev::DeviceMmu& mmu() { return device_->mmu(); }
};

TEST_F(AddressSpaceDeviceTest, MappingsReachTheDeviceMmu) {
  const uint64_t va = *as_->reserve(4 * kMiB, 0, false, "test");
  auto p = phys(Side::kDevice, 0);
  ASSERT_TRUE(as_->map(va, 2 * kMiB, 7, p, false).ok());
  dev::AddressInfo info;
  ASSERT_TRUE(mmu().query(va + 4096, &info).ok());
  EXPECT_EQ(info.memory, p->device_memory.id());
  EXPECT_EQ(info.range.base, va);
  dev::Access a = dev::Access::kNone;
  ASSERT_TRUE(mmu().access(va, dev::Location::device(0), &a).ok());
  EXPECT_EQ(a, dev::Access::kReadWrite);

  ASSERT_TRUE(as_->set_access(va, 2 * kMiB, {AccessChange{false, 1, 1}}, false).ok());
  ASSERT_TRUE(mmu().access(va, dev::Location::device(1), &a).ok());
  EXPECT_EQ(a, dev::Access::kRead);
  ASSERT_TRUE(as_->grant_peer(va, 2 * kMiB, 2).ok());
  ASSERT_TRUE(mmu().access(va, dev::Location::device(2), &a).ok());
  EXPECT_EQ(a, dev::Access::kReadWrite);

  ASSERT_TRUE(as_->unmap(va).ok());
  EXPECT_EQ(mmu().query(va, &info).condition(), dev::Condition::kNotFound);
}

TEST_F(AddressSpaceDeviceTest, ARefusalOfTheDeviceMmuRecordsNothing) {
  const uint64_t va = *as_->reserve(2 * kMiB, 0, false, "test");
  auto p = phys(Side::kDevice, 0);
  auto& rules = testing::test_device_listener();
  rules.arm(dev::steps::kMmuMap, 1, ENOMEM);
  const Status refused = as_->map(va, 2 * kMiB, 7, p, false);
  EXPECT_EQ(refused.code(), 207001);
  EXPECT_EQ(as_->mapping_count(), 0u);
  EXPECT_FALSE(as_->get_access(va, false, 0).ok()) << "nothing recorded";
  dev::AddressInfo info;
  EXPECT_EQ(mmu().query(va, &info).condition(), dev::Condition::kNotFound);

  ASSERT_TRUE(as_->map(va, 2 * kMiB, 7, p, false).ok());
  rules.arm(dev::steps::kMmuSetAccess, 1, EIO);
  EXPECT_FALSE(as_->set_access(va, 2 * kMiB, {AccessChange{true, 0, 3}}, false).ok());
  EXPECT_EQ(*as_->get_access(va, true, 0), 0) << "the record kept the old flags";
  rules.arm(dev::steps::kMmuUnmap, 1, EBUSY);
  EXPECT_FALSE(as_->unmap(va).ok());
  EXPECT_EQ(as_->mapping_count(), 1u) << "a mapping the MMU keeps stays recorded";
  ASSERT_TRUE(as_->unmap(va).ok());
}

}  // namespace
}  // namespace aclvmm
