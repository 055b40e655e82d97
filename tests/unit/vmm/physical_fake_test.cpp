// MemoryPool (src/vmm/physical.h), the core's mirror of one location's usage: without an
// authority (unit tests' stand-ins) it keeps its own count and refuses past its total; with one,
// charges go there and only its answers count; and fed by the fake's ledger through the core's
// DeviceUsage, it follows exactly what the fake reports, monitors' counter included, whatever
// the fake refuses.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "base/units.h"
#include "runtime/core_listener.h"
#include "unit/testing/fake_device.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

TEST(PhysicalFakeTest, APoolWithoutAuthorityCountsAndRefusesPastItsTotal) {
  std::atomic<uint64_t> counter{0};
  MemoryPool pool(8 * kMiB, UsageMirror{nullptr, &counter});
  const struct {
    bool charge;  // else uncharge
    uint64_t bytes;
    bool accepted;
    uint64_t used_after;
  } steps[] = {
      {true, 5 * kMiB, true, 5 * kMiB},  {true, 4 * kMiB, false, 5 * kMiB},
      {true, 3 * kMiB, true, 8 * kMiB},  {true, 1, false, 8 * kMiB},
      {false, 8 * kMiB, true, 0},        {true, 8 * kMiB, true, 8 * kMiB},
      {false, 8 * kMiB, true, 0},
  };
  int i = 0;
  for (const auto& s : steps) {
    if (s.charge) {
      EXPECT_EQ(pool.charge(s.bytes), s.accepted) << "step " << i;
    } else {
      pool.uncharge(s.bytes);
    }
    EXPECT_EQ(pool.used(), s.used_after) << "step " << i;
    EXPECT_EQ(counter.load(), s.used_after) << "step " << i << ": the monitors' counter";
    ++i;
  }
  EXPECT_EQ(pool.total(), 8 * kMiB);
}

// An authority that accepts what fits in its own budget and remembers what it was asked.
class BudgetAuthority final : public CapacityAuthority {
 public:
  explicit BudgetAuthority(uint64_t budget) : left_(budget) {}
  bool charge(uint64_t bytes) override {
    asked_.push_back(static_cast<int64_t>(bytes));
    if (bytes > left_) return false;
    left_ -= bytes;
    return true;
  }
  void uncharge(uint64_t bytes) override {
    asked_.push_back(-static_cast<int64_t>(bytes));
    left_ += bytes;
  }
  std::vector<int64_t> asked_;
  uint64_t left_;
};

TEST(PhysicalFakeTest, WithAnAuthorityOnlyItsAnswerAndItsReportsCount) {
  MemoryPool pool(64 * kMiB);
  auto authority = std::make_shared<BudgetAuthority>(4 * kMiB);
  pool.attach(authority);
  EXPECT_TRUE(pool.charge(3 * kMiB));
  EXPECT_FALSE(pool.charge(2 * kMiB)) << "the authority refuses although the pool's total is larger";
  pool.uncharge(3 * kMiB);
  EXPECT_EQ(authority->asked_, (std::vector<int64_t>{3 * kMiB, 2 * kMiB, -3 * int64_t{kMiB}}));
  EXPECT_EQ(pool.used(), 0u) << "the pool moves only with the backend's reports (mirror)";
  pool.mirror(3 * kMiB);
  EXPECT_EQ(pool.used(), 3 * kMiB);
  pool.mirror(-3 * int64_t{kMiB});
  EXPECT_EQ(pool.used(), 0u);
}

TEST(PhysicalFakeTest, APoolFedByTheFakesLedgerFollowsEveryReport) {
  DeviceUsage usage;
  std::atomic<uint64_t> counter{0};
  auto pool = std::make_shared<MemoryPool>(64 * kMiB, UsageMirror{nullptr, &counter});
  usage.connect(1, pool);
  testing::FakeDevice device({}, &usage);
  dev::PhysicalAllocator& physical = device.device()->physical();
  std::vector<dev::PhysicalId> held;
  // Fill device 1 (64 MiB) in 6 MiB objects until the fake refuses: the pool ends at what the
  // fake holds, never more.
  for (;;) {
    dev::PhysicalId id;
    const dev::Result r = physical.create(
        {dev::Location::device(1), dev::PageType::kHuge, dev::MemType::kHbm, 6 * kMiB}, &id);
    if (!r.ok()) {
      EXPECT_EQ(r.condition(), dev::Condition::kOutOfMemory);
      break;
    }
    held.push_back(id);
    ASSERT_LE(held.size(), 11u);
  }
  EXPECT_EQ(held.size(), 10u);
  EXPECT_EQ(pool->used(), 60 * kMiB);
  EXPECT_EQ(counter.load(), 60 * kMiB);
  dev::MemoryInfo info;
  ASSERT_TRUE(device.device()->devices().memory_info(1, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.total - info.free, pool->used()) << "the pool and the device agree";
  for (dev::PhysicalId id : held) ASSERT_TRUE(physical.release(id).ok());
  EXPECT_EQ(pool->used(), 0u);
  EXPECT_EQ(counter.load(), 0u);
  device.expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
