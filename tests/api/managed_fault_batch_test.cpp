// Managed memory: the fault thread reads the faults pending together as one batch and serves
// them under one hold of its lock (issue 19; UVM services faults in batches, Allen & Ge, SC21).
// The "managed" statistics show the batches: cpu_faults (faults read), fault_batches (reads),
// fault_batch_max and the batches by size (1, 2-3, 4-7, 8-15, 16+). Which faults happen to be
// pending together is up to the scheduler; that a pending set comes out of one read is shown
// deterministically by the fault tracker's unit test (PendingFaultsComeOutOfOneRead).
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

class ManagedFaultBatchTest : public ManagedTest {};

struct BatchCounters {
  long long faults = 0, batches = 0, max = 0;
  long long by_size[5] = {};
};
BatchCounters batch_counters() {
  const Json j = stats();
  BatchCounters b;
  b.faults = stat_int(j, "managed.cpu_faults");
  b.batches = stat_int(j, "managed.fault_batches");
  b.max = stat_int(j, "managed.fault_batch_max");
  const char* names[5] = {"managed.fault_batches_of_1", "managed.fault_batches_of_2_3",
                          "managed.fault_batches_of_4_7", "managed.fault_batches_of_8_15",
                          "managed.fault_batches_of_16_plus"};
  for (int i = 0; i < 5; ++i) b.by_size[i] = stat_int(j, names[i]);
  return b;
}

// One round: 16 threads read 16 device-resident pages at once: 16 host faults, each read by the
// fault thread exactly once; the batches account for every fault (each size class bounds its
// batches' faults), and the bytes are the device's. The number of batches of the round.
long long fault_round(char* p, int round) {
  constexpr int kPages = 16;
  const char value = static_cast<char>(0x60 + round);
  std::memset(p, value, kPages * k2M);
  aclrtStream s = nullptr;
  EXPECT_EQ(aclrtCreateStream(&s), kOk);
  EXPECT_EQ(aclrtMemManagedPrefetchAsync(p, kPages * k2M, kDev0, 0, s), kOk);  // all to device 0
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  const BatchCounters before = batch_counters();
  EXPECT_GE(before.faults, 0) << "the statistics have no managed.cpu_faults";
  ManagedDelta d;
  std::atomic<bool> go{false};
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPages; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) {
      }
      if (reinterpret_cast<volatile char*>(p)[i * k2M + 100] == value) ++right;
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(right.load(), kPages);
  d.expect(kPages, 0, 0, kPages, "one fault and one migration back per page");

  const BatchCounters after = batch_counters();
  const long long faults = after.faults - before.faults;
  const long long batches = after.batches - before.batches;
  EXPECT_EQ(faults, kPages) << "each thread's fault read once";
  EXPECT_GE(batches, 1);
  EXPECT_LE(batches, faults);
  long long by_size = 0, least = 0, most = 0;
  const long long lo[5] = {1, 2, 4, 8, 16}, hi[5] = {1, 3, 7, 15, 32};
  for (int i = 0; i < 5; ++i) {
    const long long n = after.by_size[i] - before.by_size[i];
    EXPECT_GE(n, 0);
    by_size += n;
    least += n * lo[i];
    most += n * hi[i];
  }
  EXPECT_EQ(by_size, batches) << "every batch has its size class";
  EXPECT_LE(least, faults);
  EXPECT_GE(most, faults);
  EXPECT_GE(after.max, 1);
  std::printf("round %d: 16 concurrent faults in %lld batch(es), largest so far %lld\n", round,
              batches, after.max);
  return batches;
}

// Up to five rounds: in one of them at least, faults pending together share a batch (a fault
// thread that read one fault at a time would show 16 batches every round).
TEST_F(ManagedFaultBatchTest, ConcurrentFaultsAreReadInBatchesTheStatisticsShow) {
  char* p = managed(16 * k2M);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  bool shared = false;
  for (int round = 0; round < 5 && !shared && !HasFailure(); ++round) {
    shared = fault_round(p, round) < 16;
  }
  EXPECT_TRUE(shared) << "no two faults were ever served in one batch";
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A CPU fault gives its thread its own 4 KiB first and then the rest of the 2 MiB page: reading
// the whole page afterwards faults no more (one fault read, one migration).
TEST_F(ManagedFaultBatchTest, OneFaultGivesBackTheWholePage) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  std::memset(p, 0x3d, k2M);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, k2M, kDev0, 0, s), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  ASSERT_EQ(aclrtDestroyStream(s), kOk);
  const BatchCounters before = batch_counters();
  ManagedDelta d;
  EXPECT_EQ(reinterpret_cast<volatile char*>(p)[k2M / 2 + 7], 0x3d);  // the fault, mid-page
  EXPECT_TRUE(all_bytes(std::string(p, k2M), 0x3d));  // every other 4 KiB of the page
  d.expect(1, 0, 0, 1, "one fault brings the page back");
  EXPECT_EQ(batch_counters().faults - before.faults, 1) << "the rest of the page faulted again";
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
