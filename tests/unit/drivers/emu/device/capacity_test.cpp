// The emulated machine's capacity (drivers/emu/device/capacity.h): exact charges per location,
// refusals that charge nothing, every change reported, and no charge beyond the total however
// many threads race.
#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/emu/device/capacity.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

TEST(EmuCapacityTest, ChargesAreExactPerLocationAndReported) {
  testing::RecordingListener listener;
  CapacityLedger ledger(listener, 2, 8 * kMiB, 16 * kMiB);
  ASSERT_TRUE(ledger.charge(Location::device(1), 6 * kMiB).ok());
  EXPECT_EQ(ledger.used(Location::device(1)), 6 * kMiB);
  EXPECT_EQ(ledger.used(Location::device(0)), 0u);
  EXPECT_EQ(ledger.charge(Location::device(1), 4 * kMiB).condition(), Condition::kOutOfMemory);
  EXPECT_EQ(ledger.used(Location::device(1)), 6 * kMiB) << "a refusal charges nothing";
  ASSERT_TRUE(ledger.charge(Location::host(), 10 * kMiB).ok());
  ASSERT_TRUE(ledger.charge(Location::host_numa(3), 6 * kMiB).ok()) << "NUMA memory is the host's";
  EXPECT_EQ(ledger.charge(Location::host(), 1).condition(), Condition::kOutOfMemory);
  EXPECT_EQ(ledger.charge(Location::device(2), 1).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(ledger.charge(Location{Location::Kind::kNone, 0}, 1).condition(),
            Condition::kInvalidArgument);
  EXPECT_EQ(ledger.total(Location::device(2)), 0u);
  ledger.uncharge(Location::device(1), 6 * kMiB);
  ledger.uncharge(Location::host(), 16 * kMiB);
  EXPECT_EQ(ledger.used(Location::device(1)), 0u);
  EXPECT_EQ(ledger.used(Location::host()), 0u);
  const auto usage = listener.usage();
  ASSERT_EQ(usage.size(), 5u);
  EXPECT_EQ(usage[0].device, 1);
  EXPECT_EQ(usage[0].delta, static_cast<int64_t>(6 * kMiB));
  EXPECT_EQ(usage[2].device, kNoDevice);
  EXPECT_EQ(listener.usage_sum(1), 0);
  EXPECT_EQ(listener.usage_sum(kNoDevice), 0);
}

// Four threads charge 2 MiB and give it back, 20 000 times each, against room for three: the
// used bytes never exceed the total and every report balances.
TEST(EmuCapacityTest, ConcurrencyNeverOverchargesAndAlwaysBalances) {
  testing::RecordingListener listener;
  CapacityLedger ledger(listener, 1, 6 * kMiB, 0);
  std::atomic<uint64_t> refused{0}, over{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!ledger.charge(Location::device(0), 2 * kMiB).ok()) {
          refused.fetch_add(1);
          continue;
        }
        if (ledger.used(Location::device(0)) > 6 * kMiB) over.fetch_add(1);
        ledger.uncharge(Location::device(0), 2 * kMiB);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(over.load(), 0u);
  EXPECT_EQ(ledger.used(Location::device(0)), 0u);
  EXPECT_EQ(listener.usage_sum(0), 0);
  EXPECT_EQ(listener.usage().size(), 2 * (4 * 20000 - refused.load()));
}

}  // namespace
}  // namespace aclvmm::dev::emu
