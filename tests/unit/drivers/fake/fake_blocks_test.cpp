// The fake's blocks (drivers/fake/fake_blocks.h): placed by the fake's windows; every
// precondition a core could break is a
// counted violation answered kInvalidArgument and leaves the machine as it was; a full machine
// is kOutOfMemory and no violation; the block's id stays live until free and dies with it.
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kVa = 0x100000000000ull;

BlockRequest device_block(uint64_t size, DeviceIndex device = 0) {
  BlockRequest r;
  r.kind = BlockKind::kDevice;
  r.device = device;
  r.size = size;
  r.page_type = PageType::kHuge;
  return r;
}

class FakeBlocksTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok()); }
  uint64_t device_used() {
    MemoryInfo info;
    EXPECT_TRUE(be_->devices().memory_info(0, MemoryKind::kHbm, &info).ok());
    return info.total - info.free;
  }

  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
};

TEST_F(FakeBlocksTest, BrokenPreconditionsAreCountedViolations) {
  Block taken;
  ASSERT_TRUE(be_->blocks().allocate(device_block(2 * kMiB), &taken).ok());
  const PhysicalId mem = [&] {
    PhysicalId id;
    EXPECT_TRUE(be_->physical()
                    .create(PhysicalSpec{Location::device(0), PageType::kHuge, MemType::kHbm,
                                         2 * kMiB}, &id)
                    .ok());
    return id;
  }();
  ASSERT_TRUE(be_->mmu().map(kVa + 4 * kMiB, 2 * kMiB, mem, 0, InitialAccess::kNone).ok());
  const uint64_t used = device_used();
  BlockRequest bad_kind = device_block(4096);
  bad_kind.kind = static_cast<BlockKind>(9);
  BlockRequest host_with_device = device_block(4096);
  host_with_device.kind = BlockKind::kHostPinned;
  struct Case {
    const char* what;
    BlockRequest request;
  };
  const Case cases[] = {
      {"no such kind", bad_kind},
      {"no such device", device_block(4096, config_.device_count)},
      {"no size", device_block(0)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const uint64_t before = fake_->violations();
    Block block;
    EXPECT_EQ(be_->blocks().allocate(c.request, &block), Result::from_errno(EINVAL));
    EXPECT_EQ(fake_->violations(), before + 1);
    EXPECT_EQ(device_used(), used);
    EXPECT_EQ(fake_->live_mappings(), 2u);
  }
  // A host block names no device: the device field is not looked at.
  Block host;
  ASSERT_TRUE(be_->blocks().allocate(host_with_device, &host).ok());
  ASSERT_TRUE(be_->blocks().free(host.address).ok());

  const uint64_t before = fake_->violations();
  EXPECT_EQ(be_->blocks().free(kVa + 4 * kMiB), Result::from_errno(EINVAL)) << "a mapping";
  EXPECT_EQ(be_->blocks().free(taken.address + 4096), Result::from_errno(EINVAL))
      << "inside a block";
  EXPECT_EQ(be_->mmu().unmap(taken.address, 2 * kMiB), Result::from_errno(EINVAL))
      << "unmap of a block";
  EXPECT_EQ(fake_->violations(), before + 3);
  EXPECT_EQ(fake_->live_mappings(), 2u);
  ASSERT_TRUE(be_->mmu().unmap(kVa + 4 * kMiB, 2 * kMiB).ok());
  ASSERT_TRUE(be_->physical().release(mem).ok());
  ASSERT_TRUE(be_->blocks().free(taken.address).ok());
}

TEST_F(FakeBlocksTest, AFullMachineIsOutOfMemoryAndTheIdLivesUntilFree) {
  Block all;
  ASSERT_TRUE(be_->blocks().allocate(device_block(config_.device_memory), &all).ok());
  Block more;
  EXPECT_EQ(be_->blocks().allocate(device_block(4096), &more).condition(),
            Condition::kOutOfMemory);
  EXPECT_EQ(fake_->violations(), 0u);
  const std::vector<uint8_t> bytes(100, 0x3c);
  ASSERT_TRUE(fake_->write_physical(all.memory, 4096, bytes.data(), bytes.size()).ok());
  std::vector<uint8_t> back(100);
  ASSERT_TRUE(fake_->read_physical(all.memory, 4096, back.data(), back.size()).ok());
  EXPECT_EQ(back, bytes);
  ASSERT_TRUE(be_->blocks().free(all.address).ok());
  EXPECT_EQ(fake_->live_physical_objects(), 0u);
  EXPECT_EQ(device_used(), 0u);
  EXPECT_EQ(fake_->read_physical(all.memory, 0, back.data(), 1), Result::from_errno(EINVAL))
      << "the block's id outlived it";
  EXPECT_EQ(fake_->violations(), 1u);
}

}  // namespace
}  // namespace aclvmm::dev::fake
