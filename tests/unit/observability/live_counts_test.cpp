// Live counts (src/observability/live_counts.*): a count goes to the installed segment's counter
// of its kind and nowhere else, nothing happens without a target, and a cleared target receives
// nothing more.
#include "observability/live_counts.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

namespace aclvmm {
namespace {

// A stand-in for a mapped segment's live counters, with a guard on each side.
struct LiveCountTarget {
  std::atomic<uint64_t> before{0};
  std::atomic<uint64_t> live[smi::kLiveCounts] = {};
  std::atomic<uint64_t> after{0};
};

TEST(LiveCountsTest, EachKindGoesToItsOwnCounterOfTheInstalledTarget) {
  LiveCountTarget c;
  publish_live_count(LiveCount::kIpcKeys, 9);  // no target yet: nothing to write, no crash
  set_live_count_target(c.live);
  publish_live_count(LiveCount::kIpcKeys, 1);
  publish_live_count(LiveCount::kIpcImports, 2);
  publish_live_count(LiveCount::kHostRegistrations, 3);
  publish_live_count(LiveCount::kBinaries, 4);
  EXPECT_EQ(c.live[0].load(), 1u);
  EXPECT_EQ(c.live[1].load(), 2u);
  EXPECT_EQ(c.live[2].load(), 3u);
  EXPECT_EQ(c.live[3].load(), 4u);
  publish_live_count(LiveCount::kIpcImports, 0);  // a value, not a delta
  EXPECT_EQ(c.live[1].load(), 0u);
  publish_live_count(static_cast<LiveCount>(smi::kLiveCounts), 5);  // no such kind: ignored
  EXPECT_EQ(c.before.load(), 0u);
  EXPECT_EQ(c.after.load(), 0u);

  set_live_count_target(nullptr);
  publish_live_count(LiveCount::kBinaries, 7);
  EXPECT_EQ(c.live[3].load(), 4u);
}

}  // namespace
}  // namespace aclvmm
