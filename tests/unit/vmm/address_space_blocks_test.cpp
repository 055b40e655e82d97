// AddressSpace's aclrtMalloc / aclrtMallocHost blocks come from the device backend
// (BlockAllocator, docs/device-interface.md D10, migration step 2b): one allocate per block,
// placed in the core's window, one free when it goes; a refusal of either leaves the core's
// records and its window as they were.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "drivers/injection_steps.h"
#include "unit/testing/address_space_fixture.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

class AddressSpaceBlocksTest : public testing::AddressSpaceOverDevice {
 protected:
  // The core's record of a block, as vmm_malloc makes it: no memory until the block gives it.
  static std::shared_ptr<PhysicalAllocation> record(Side side, int device, uint64_t size) {
    auto p = std::make_shared<PhysicalAllocation>();
    p->side = side;
    p->device = device;
    p->mem_type = side == Side::kDevice ? kHbm : kDdr;
    p->size = size;
    return p;
  }
  dev::AddressInfo::Kind kind_at(uint64_t va) {
    dev::AddressInfo info;
    return device_->mmu().query(va, &info).ok() ? info.kind : dev::AddressInfo::Kind::kUnmapped;
  }
};

TEST_F(AddressSpaceBlocksTest, BlocksAreTheDevicesAndGoBackToIt) {
  auto d = record(Side::kDevice, 3, 4 * kMiB);
  auto dva = testing::add_device_block(*as_, 4 * kMiB, 4 * kMiB - 64, 2 * kMiB, 3, d);
  ASSERT_TRUE(dva.ok()) << dva.status().message();
  dev::AddressInfo info;
  ASSERT_TRUE(device_->mmu().query(*dva + 3 * kMiB, &info).ok());
  EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kDeviceBlock);
  EXPECT_EQ(info.owner, dev::Location::device(3));
  EXPECT_EQ(info.range.size, 4 * kMiB);
  EXPECT_EQ(info.page_size, 2 * kMiB);
  // The block's own bytes are the device's object's.
  dev::emu::os::PhysicalMemory& bytes = testing::bytes_at(*device_, *dva);
  ASSERT_EQ(bytes.size(), 4 * kMiB);
  const char byte = 0x4e;
  ASSERT_EQ(bytes.write(4 * kMiB - 1, &byte, 1), 0);
  char back = 0;
  ASSERT_EQ(bytes.read(4 * kMiB - 1, &back, 1), 0);
  EXPECT_EQ(back, byte);

  auto h = record(Side::kHost, 0, 64 * 1024);
  auto hva = testing::add_host_block(*as_, 64 * 1024, 60 * 1024, h);
  ASSERT_TRUE(hva.ok()) << hva.status().message();
  EXPECT_EQ(kind_at(*hva), dev::AddressInfo::Kind::kHostBlock);
  std::memset(reinterpret_cast<void*>(*hva), 0x21, 64 * 1024);  // CPU memory
  ASSERT_EQ(testing::bytes_at(*device_, *hva).read(64 * 1024 - 1, &back, 1), 0);
  EXPECT_EQ(back, 0x21);

  ASSERT_TRUE(as_->remove_allocation(*dva, RegionKind::kDeviceMalloc).ok());
  ASSERT_TRUE(as_->remove_allocation(*hva, RegionKind::kHostPinned).ok());
  EXPECT_EQ(kind_at(*dva), dev::AddressInfo::Kind::kUnmapped);
  EXPECT_EQ(kind_at(*hva), dev::AddressInfo::Kind::kUnmapped);
}

TEST_F(AddressSpaceBlocksTest, ARefusedBlockRecordsNothingAndGivesItsRangeBack) {
  auto& rules = testing::test_device_listener();
  // Where the next block goes: the same place once a refused one has given its range back.
  auto first = testing::add_device_block(*as_, 2 * kMiB, 2 * kMiB, 2 * kMiB, 0,
                                         record(Side::kDevice, 0, 2 * kMiB));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(as_->remove_allocation(*first, RegionKind::kDeviceMalloc).ok());
  for (const char* step : {dev::steps::kBlockAllocate, dev::steps::kEmuMemfdCreate}) {
    SCOPED_TRACE(step);
    rules.arm(step, 1, ENOMEM);
    auto refused = testing::add_device_block(*as_, 2 * kMiB, 2 * kMiB, 2 * kMiB, 0,
                                             record(Side::kDevice, 0, 2 * kMiB));
    rules.arm(step, 0, 0);
    EXPECT_EQ(refused.status().code(), ACL_ERROR_RT_MEMORY_ALLOCATION);
    EXPECT_EQ(as_->region_count(RegionKind::kDeviceMalloc), 0u);
    EXPECT_FALSE(as_->pointer_info(*first, 4096).ok()) << "a refused block was recorded";
  }
  rules.arm(dev::steps::kEmuCpuMap, 1, EPERM);
  auto host = testing::add_host_block(*as_, 4096, 4096, record(Side::kHost, 0, 4096));
  rules.arm(dev::steps::kEmuCpuMap, 0, 0);
  EXPECT_EQ(host.status().code(), ACL_ERROR_RT_NO_PERMISSION);
  EXPECT_EQ(as_->region_count(RegionKind::kHostPinned), 0u);
  auto again = testing::add_device_block(*as_, 2 * kMiB, 2 * kMiB, 2 * kMiB, 0,
                                         record(Side::kDevice, 0, 2 * kMiB));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first) << "a refused block kept its range";
  ASSERT_TRUE(as_->remove_allocation(*again, RegionKind::kDeviceMalloc).ok());
}

TEST_F(AddressSpaceBlocksTest, AFreeTheDeviceRefusesKeepsTheBlock) {
  auto& rules = testing::test_device_listener();
  auto h = record(Side::kHost, 0, 8192);
  auto va = testing::add_host_block(*as_, 8192, 8192, h);
  ASSERT_TRUE(va.ok());
  for (const char* step : {dev::steps::kBlockFree, dev::steps::kEmuCpuUnmap}) {
    SCOPED_TRACE(step);
    rules.arm(step, 1, EBUSY);
    EXPECT_FALSE(as_->remove_allocation(*va, RegionKind::kHostPinned).ok());
    rules.arm(step, 0, 0);
    EXPECT_EQ(as_->region_count(RegionKind::kHostPinned), 1u);
    EXPECT_EQ(kind_at(*va), dev::AddressInfo::Kind::kHostBlock);
    reinterpret_cast<volatile char*>(*va)[100] = 1;  // still CPU memory
  }
  ASSERT_TRUE(as_->remove_allocation(*va, RegionKind::kHostPinned).ok());
}

TEST_F(AddressSpaceBlocksTest, ClearGivesEveryBlockBack) {
  auto va = testing::add_device_block(*as_, 4096, 100, 4096, 1, record(Side::kDevice, 1, 4096));
  ASSERT_TRUE(va.ok());
  EXPECT_EQ(kind_at(*va), dev::AddressInfo::Kind::kDeviceBlock);
  const auto left = as_->clear();
  EXPECT_EQ(left.size(), 1u);
  EXPECT_EQ(kind_at(*va), dev::AddressInfo::Kind::kUnmapped);
}

}  // namespace
}  // namespace aclvmm
