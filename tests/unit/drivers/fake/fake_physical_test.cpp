// The fake's physical allocator (drivers/fake/fake_physical.h): ids it did not hand out, or that
// are dead, are counted violations answered kInvalidArgument, never a crash; ids are
// deterministic; capacity is exact.
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

PhysicalSpec on_device(DeviceIndex d, uint64_t size = 2 * kMiB) {
  return PhysicalSpec{Location::device(d), PageType::kHuge, MemType::kHbm, size};
}

class FakePhysicalTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok()); }
  PhysicalAllocator& physical() { return be_->physical(); }

  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
};

// Every operation that takes an id, given one that names nothing live.
TEST_F(FakePhysicalTest, DeadAndForgedIdsAreCountedViolations) {
  PhysicalId live, dead;
  ASSERT_TRUE(physical().create(on_device(0), &live).ok());
  ASSERT_TRUE(physical().create(on_device(0), &dead).ok());
  ASSERT_TRUE(physical().release(dead).ok());
  const PhysicalId bad_ids[] = {dead, PhysicalId{0}, PhysicalId{1}, PhysicalId{live.value + 1},
                                PhysicalId{live.value - 1}, PhysicalId{~0ull},
                                PhysicalId{reinterpret_cast<uint64_t>(&live)}};
  uint64_t expected = 0;
  for (PhysicalId id : bad_ids) {
    SCOPED_TRACE(id.value);
    PhysicalProperties props;
    uint32_t route = 0;
    uint8_t byte = 0;
    EXPECT_EQ(physical().release(id).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(physical().properties(id, &props).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(physical().set_map_route(id, 1).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(physical().map_route(id, &route).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(fake_->read_physical(id, 0, &byte, 1).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(fake_->write_physical(id, 0, &byte, 1).condition(), Condition::kInvalidArgument);
    expected += 6;
    EXPECT_EQ(fake_->violations(), expected);
  }
  EXPECT_NE(fake_->last_violation().find("not a live physical id"), std::string::npos);
  PhysicalProperties props;
  EXPECT_TRUE(physical().properties(live, &props).ok()) << "the live object is untouched";
  EXPECT_EQ(fake_->live_physical_objects(), 1u);
  ASSERT_TRUE(physical().release(live).ok());
  EXPECT_EQ(physical().release(live).condition(), Condition::kInvalidArgument) << "twice";
}

// Preconditions of create() the core must have checked are violations; what a contract answers
// (kOutOfMemory, kNotSupported) is not.
TEST_F(FakePhysicalTest, CreateCountsOnlyBrokenPreconditions) {
  struct Case {
    PhysicalSpec spec;
    Condition condition;
    bool violation;
  };
  const Case cases[] = {
      {on_device(2), Condition::kInvalidArgument, true},
      {on_device(0, 0), Condition::kInvalidArgument, true},
      {on_device(0, kMiB), Condition::kInvalidArgument, true},
      {{Location::device(0), PageType::kGiant, MemType::kHbm, 2 * kMiB}, Condition::kInvalidArgument, true},
      {{Location{Location::Kind::kHost, 1}, PageType::kHuge, MemType::kDdr, 2 * kMiB}, Condition::kInvalidArgument, true},
      {{Location::host_numa(2), PageType::kHuge, MemType::kDdr, 2 * kMiB}, Condition::kInvalidArgument, true},
      {{Location{Location::Kind::kNone, 0}, PageType::kHuge, MemType::kDdr, 2 * kMiB}, Condition::kInvalidArgument, true},
      {on_device(0, 66 * kMiB), Condition::kOutOfMemory, false},
      {{Location::host(), PageType::kHuge, MemType::kDdr, 258 * kMiB}, Condition::kOutOfMemory, false},
  };
  for (const Case& c : cases) {
    const uint64_t before = fake_->violations();
    PhysicalId id{77};
    EXPECT_EQ(physical().create(c.spec, &id).condition(), c.condition) << c.spec.size;
    EXPECT_EQ(id.value, 77u);
    EXPECT_EQ(fake_->violations(), before + (c.violation ? 1 : 0)) << c.spec.size;
  }
  EXPECT_TRUE(listener_.usage().empty()) << "nothing was charged";
}

TEST_F(FakePhysicalTest, HostNumaWithoutNodesIsNotSupportedNotAViolation) {
  FakeConfig config;
  config.numa_nodes = 0;
  std::unique_ptr<DeviceBackend> be;
  FakeBackend* fake = nullptr;
  ASSERT_TRUE(open_fake_backend(config, &listener_, &be, &fake).ok());
  EXPECT_FALSE(be->capabilities().host_numa);
  PhysicalId id;
  EXPECT_EQ(be->physical()
                .create({Location::host_numa(0), PageType::kHuge, MemType::kDdr, 2 * kMiB}, &id)
                .condition(),
            Condition::kNotSupported);
  EXPECT_EQ(fake->violations(), 0u);
}

// The same calls give the same ids, and an id is never handed out twice.
TEST_F(FakePhysicalTest, IdsAreDeterministicAndNeverReused) {
  auto sequence = [this](PhysicalAllocator& p) {
    std::vector<uint64_t> ids;
    PhysicalId a, b, c;
    EXPECT_TRUE(p.create(on_device(0), &a).ok());
    EXPECT_TRUE(p.create(on_device(1), &b).ok());
    EXPECT_TRUE(p.release(a).ok());
    EXPECT_TRUE(p.create(on_device(0), &c).ok());
    EXPECT_TRUE(p.release(b).ok());
    EXPECT_TRUE(p.release(c).ok());
    return std::vector<uint64_t>{a.value, b.value, c.value};
  };
  const std::vector<uint64_t> first = sequence(physical());
  std::unique_ptr<DeviceBackend> other;
  ASSERT_TRUE(open_fake_backend(config_, &listener_, &other).ok());
  EXPECT_EQ(sequence(other->physical()), first);
  EXPECT_EQ(first[0], FakePhysical::kFirstId);
  EXPECT_NE(first[2], first[0]) << "a released id stays dead";
}

TEST_F(FakePhysicalTest, UsageIsReportedExactlyPerLocation) {
  PhysicalId d1, host, numa;
  ASSERT_TRUE(physical().create(on_device(1, 4 * kMiB), &d1).ok());
  ASSERT_TRUE(physical().create({Location::host(), PageType::kNormal, MemType::kDdr, 2 * kMiB}, &host).ok());
  ASSERT_TRUE(physical().create({Location::host_numa(1), PageType::kHuge, MemType::kDdr, 6 * kMiB}, &numa).ok());
  EXPECT_EQ(listener_.usage_sum(1), static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(listener_.usage_sum(kNoDevice), static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(be_->host().memory_free(), 256 * kMiB - 8 * kMiB);
  MemoryInfo ddr;
  ASSERT_TRUE(be_->devices().memory_info(0, MemoryKind::kDdr, &ddr).ok());
  EXPECT_EQ(ddr.free, 256 * kMiB - 8 * kMiB);
  for (PhysicalId id : {d1, host, numa}) ASSERT_TRUE(physical().release(id).ok());
  EXPECT_EQ(listener_.usage_sum(1), 0);
  EXPECT_EQ(listener_.usage_sum(kNoDevice), 0);
  EXPECT_EQ(listener_.usage().size(), 6u);
  EXPECT_EQ(fake_->violations(), 0u);
}

}  // namespace
}  // namespace aclvmm::dev::fake
