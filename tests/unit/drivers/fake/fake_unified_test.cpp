// The fake's unified memory (drivers/fake/fake_unified.h): what the conformance suite cannot ask
// of every backend. Broken preconditions are counted violations answered kInvalidArgument; the
// contract's own refusals (no range there, a full window, a location the advice cannot take) are
// answers, not violations; placement is first fit, so the same calls give the same addresses;
// the backend's destruction gives back the device charges of what is left.
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kUnifiedPage = 2 * kMiB;  // the fake migrates managed memory in 2 MiB pages

class FakeUnifiedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.managed_window_size = 8 * kUnifiedPage;
    ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok());
  }
  UnifiedMemory& um() { return be_->unified_memory(); }

  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
};

TEST_F(FakeUnifiedTest, BrokenPreconditionsAreCountedViolations) {
  uint64_t base = 0;
  ASSERT_TRUE(um().allocate(kUnifiedPage, &base).ok());
  int32_t value = 0;
  struct Case {
    const char* what;
    Result result;
  };
  const Case cases[] = {
      {"a size of no whole pages", um().allocate(kUnifiedPage + 4096, &base)},
      {"a size of 0", um().allocate(0, &base)},
      {"a free of an interior address", um().free(base + 4096, FreeMode::kNormal)},
      {"an unknown advice",
       um().advise(base, kUnifiedPage, static_cast<ManagedAdvice>(6), Location{})},
      {"a device out of range", um().advise(base, kUnifiedPage, ManagedAdvice::kAccessedBy,
                                            Location::device(config_.device_count))},
      {"a prefetch to nowhere", um().prefetch(base, kUnifiedPage, Location{})},
      {"no result slot",
       um().attribute(ManagedAttribute::kReadMostly, base, kUnifiedPage, &value, 0)},
      {"an unknown attribute",
       um().attribute(static_cast<ManagedAttribute>(9), base, kUnifiedPage, &value, 1)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(c.result.condition(), Condition::kInvalidArgument);
  }
  EXPECT_EQ(fake_->violations(), sizeof cases / sizeof cases[0]) << "each one counted";
  EXPECT_TRUE(um().free(base, FreeMode::kNormal).ok());
}

TEST_F(FakeUnifiedTest, RefusalsOfTheContractAreNoViolations) {
  uint64_t base = 0;
  EXPECT_EQ(um().allocate(16 * kUnifiedPage, &base).condition(), Condition::kOutOfMemory)
      << "more than the window";
  ASSERT_TRUE(um().allocate(kUnifiedPage, &base).ok());
  EXPECT_EQ(um().advise(base + kUnifiedPage, kUnifiedPage, ManagedAdvice::kReadMostly, Location{})
                .condition(),
            Condition::kBadAddress);
  EXPECT_EQ(um().advise(base, kUnifiedPage, ManagedAdvice::kPreferredLocation,
                        Location::host_numa(config_.numa_nodes))
                .condition(),
            Condition::kInvalidArgument);
  uint8_t byte = 0;
  EXPECT_EQ(fake_->cpu_access(base + kUnifiedPage, &byte, 1, false).condition(),
            Condition::kBadAddress);
  EXPECT_EQ(fake_->violations(), 0u) << fake_->last_violation();
}

TEST_F(FakeUnifiedTest, PlacementIsFirstFitAndTheSameCallsGiveTheSameAddresses) {
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_TRUE(um().allocate(2 * kUnifiedPage, &a).ok());
  ASSERT_TRUE(um().allocate(kUnifiedPage, &b).ok());
  EXPECT_EQ(a, config_.managed_window);
  EXPECT_EQ(b, a + 2 * kUnifiedPage);
  ASSERT_TRUE(um().free(a, FreeMode::kNormal).ok());
  ASSERT_TRUE(um().allocate(kUnifiedPage, &c).ok());
  EXPECT_EQ(c, a) << "the first hole that fits";
}

// The unit's window is the windows' layout().managed, which the core reserves nothing else in:
// the whole of it and nothing more.
TEST_F(FakeUnifiedTest, TheWindowIsTheLayoutsManagedWindow) {
  const VaRange managed = be_->windows().layout().managed;
  EXPECT_EQ(managed.base, config_.managed_window);
  EXPECT_EQ(managed.size, 8 * kUnifiedPage);
  uint64_t all = 0, more = 0;
  ASSERT_TRUE(um().allocate(managed.size, &all).ok());
  EXPECT_EQ(all, managed.base);
  EXPECT_EQ(um().allocate(kUnifiedPage, &more).condition(), Condition::kOutOfMemory);
  ASSERT_TRUE(um().free(all, FreeMode::kNormal).ok());
  EXPECT_EQ(FakeConfig{}.managed_window_size, 3 * 1024 * kGiB) << "the vendor's 3 TiB by default";
  EXPECT_EQ(fake_->violations(), 0u);
}

TEST_F(FakeUnifiedTest, TrackingIsLearntAtTheFirstAllocation) {
  EXPECT_FALSE(um().tracking().residency);
  uint64_t base = 0;
  ASSERT_TRUE(um().allocate(kUnifiedPage, &base).ok());
  EXPECT_TRUE(um().tracking().residency);
  EXPECT_TRUE(um().tracking().cpu_writes);
}

TEST_F(FakeUnifiedTest, DestructionGivesBackTheChargesOfWhatIsLeft) {
  uint64_t base = 0;
  ASSERT_TRUE(um().allocate(2 * kUnifiedPage, &base).ok());
  ASSERT_TRUE(um().prefetch(base, 2 * kUnifiedPage, Location::device(1)).ok());
  EXPECT_EQ(listener_.usage_sum(1), static_cast<int64_t>(2 * kUnifiedPage));
  be_.reset();
  EXPECT_EQ(listener_.usage_sum(1), 0);
}

}  // namespace
}  // namespace aclvmm::dev::fake
