// The fake's device MMU (drivers/fake/fake_mmu.h): every precondition of device_mmu.h a core could
// break is a counted violation answered kInvalidArgument (so a core unit test that ends with no
// violation proves the core checked first); the test's CPU reads through the page table with the
// HOST rights; a mapping holds its object.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kMapVa = 0x100000000000ull;

class FakeMmuTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok()); }
  PhysicalId create(Location where, uint64_t size = 4 * kMiB, PageType type = PageType::kHuge) {
    PhysicalId id;
    EXPECT_TRUE(be_->physical().create(PhysicalSpec{where, type, MemType::kHbm, size}, &id).ok());
    return id;
  }
  DeviceMmu& mmu() { return be_->mmu(); }

  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
};

TEST_F(FakeMmuTest, BrokenPreconditionsAreCountedViolations) {
  const PhysicalId mem = create(Location::device(0));
  ASSERT_TRUE(mmu().map(kMapVa, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  PhysicalId released = create(Location::device(0), 2 * kMiB);
  ASSERT_TRUE(be_->physical().release(released).ok());
  const AccessGrant to_nowhere{Location::device(config_.device_count), Access::kRead};
  size_t applied = 0;
  struct Case {
    const char* what;
    Result (*call)(DeviceMmu&, PhysicalId mem, PhysicalId dead, const AccessGrant* g, size_t* n);
  };
  const Case cases[] = {
      {"forged id",
       [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant*, size_t*) {
         return m.map(kMapVa + kGiB, 2 * kMiB, PhysicalId{12345}, 0, InitialAccess::kNone);
       }},
      {"released id",
       [](DeviceMmu& m, PhysicalId, PhysicalId dead, const AccessGrant*, size_t*) {
         return m.map(kMapVa + kGiB, 2 * kMiB, dead, 0, InitialAccess::kNone);
       }},
      {"partial granule",
       [](DeviceMmu& m, PhysicalId mem, PhysicalId, const AccessGrant*, size_t*) {
         return m.map(kMapVa + kGiB + 4096, 2 * kMiB, mem, 0, InitialAccess::kNone);
       }},
      {"past the memory",
       [](DeviceMmu& m, PhysicalId mem, PhysicalId, const AccessGrant*, size_t*) {
         return m.map(kMapVa + kGiB, 4 * kMiB, mem, 2 * kMiB, InitialAccess::kNone);
       }},
      {"overlap",
       [](DeviceMmu& m, PhysicalId mem, PhysicalId, const AccessGrant*, size_t*) {
         return m.map(kMapVa, 2 * kMiB, mem, 2 * kMiB, InitialAccess::kNone);
       }},
      {"unmap of part", [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant*,
                           size_t*) { return m.unmap(kMapVa, 4 * kMiB); }},
      {"unmap of nothing", [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant*,
                              size_t*) { return m.unmap(kMapVa + kGiB, 2 * kMiB); }},
      {"set_access off a mapping",
       [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant* g, size_t* n) {
         return m.set_access(kMapVa + kGiB, 2 * kMiB, g, 1, n);
       }},
      {"grant to no device", [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant* g,
                                size_t* n) { return m.set_access(kMapVa, 2 * kMiB, g, 1, n); }},
      {"peer of nothing", [](DeviceMmu& m, PhysicalId, PhysicalId, const AccessGrant*,
                             size_t*) { return m.grant_peer(kMapVa + kGiB, 2 * kMiB, 1); }},
  };
  uint64_t expected = fake_->violations();
  for (const Case& c : cases) {
    EXPECT_EQ(c.call(mmu(), mem, released, &to_nowhere, &applied).condition(),
              Condition::kInvalidArgument)
        << c.what;
    EXPECT_EQ(fake_->violations(), ++expected) << c.what;
  }
  EXPECT_EQ(fake_->live_mappings(), 1u) << "no refused call mapped anything";
  ASSERT_TRUE(mmu().unmap(kMapVa, 2 * kMiB).ok());
  ASSERT_TRUE(be_->physical().release(mem).ok());
  EXPECT_EQ(fake_->violations(), expected);
}

TEST_F(FakeMmuTest, TheTestCpuUsesTheHostRights) {
  const PhysicalId mem = create(Location::device(0), 2 * kMiB);
  ASSERT_TRUE(mmu().map(kMapVa, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  char bytes[4] = {1, 2, 3, 4};
  EXPECT_EQ(fake_->cpu_access(kMapVa + 8, bytes, 4, true).condition(), Condition::kBadAddress);
  const AccessGrant read{Location::host(), Access::kRead};
  size_t applied = 0;
  ASSERT_TRUE(mmu().set_access(kMapVa, 2 * kMiB, &read, 1, &applied).ok());
  EXPECT_EQ(applied, 1u);
  EXPECT_EQ(fake_->cpu_access(kMapVa + 8, bytes, 4, true).condition(), Condition::kBadAddress);
  ASSERT_TRUE(fake_->write_physical(mem, 8, bytes, 4).ok());
  char back[4] = {};
  ASSERT_TRUE(fake_->cpu_access(kMapVa + 8, back, 4, false).ok());
  EXPECT_EQ(0, std::memcmp(back, bytes, 4));
  EXPECT_EQ(fake_->cpu_access(kMapVa + 2 * kMiB - 2, back, 4, false).condition(),
            Condition::kBadAddress)
      << "past the mapping";
  ASSERT_TRUE(mmu().unmap(kMapVa, 2 * kMiB).ok());
  ASSERT_TRUE(be_->physical().release(mem).ok());
  EXPECT_EQ(fake_->violations(), 0u);
}

TEST_F(FakeMmuTest, AMappingHoldsItsObjectUntilUnmapOrTheEnd) {
  const PhysicalId mem = create(Location::device(0), 2 * kMiB);
  ASSERT_TRUE(mmu().map(kMapVa, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(mmu().map(kMapVa + kGiB, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(be_->physical().release(mem).ok());
  EXPECT_EQ(fake_->live_physical_objects(), 1u);
  PhysicalProperties props;
  EXPECT_EQ(be_->physical().properties(mem, &props).condition(), Condition::kInvalidArgument)
      << "the id is dead once released";
  EXPECT_EQ(fake_->violations(), 1u);
  ASSERT_TRUE(mmu().unmap(kMapVa, 2 * kMiB).ok());
  EXPECT_EQ(fake_->live_physical_objects(), 1u);
  ASSERT_TRUE(mmu().unmap(kMapVa + kGiB, 2 * kMiB).ok());
  EXPECT_EQ(fake_->live_physical_objects(), 0u);
  EXPECT_EQ(listener_.usage_sum(0), 0) << "the charge went with the last mapping";
  // Still mapped when the backend goes: the MMU lets go, nothing is left.
  create(Location::device(0), 2 * kMiB);
  const PhysicalId kept = create(Location::device(0), 2 * kMiB);
  ASSERT_TRUE(mmu().map(kMapVa, 2 * kMiB, kept, 0, InitialAccess::kNone).ok());
  be_.reset();
}

}  // namespace
}  // namespace aclvmm::dev::fake
