// The lock-rank checker (base/lock_rank.h): locks taken in increasing rank are recorded and
// released; a lock taken out of order, a second lock of one rank, a lock taken twice, a release of
// a lock not held abort with a message naming both locks; try_lock may be out of order; the record
// is per thread and survives fork as the forking thread's. Violations are death tests: the checker
// aborts the process, as it does in the library. Without checking (a Release tree) only the
// layout and the no-op record are tested.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "base/lock_rank.h"
#include "base/read_mostly_mutex.h"

namespace aclvmm {
namespace {

using lock_rank::held_count;

// Three ranks far apart, and one between the first two.
using Outer = RankedMutex<LockRank::kRuntimeLifetime>;
using Middle = RankedMutex<LockRank::kRegionTree>;
using Inner = RankedMutex<LockRank::kLog>;
using Tree = RankedReadMostlyMutex<LockRank::kRegionMappings>;

class LockRankCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kLockRankCheck) GTEST_SKIP() << "built without ACLVMM_LOCK_RANK_CHECK";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST(LockRankLayout, RankedLocksHaveThePlainLayout) {
  EXPECT_EQ(sizeof(RankedMutex<LockRank::kStreamQueue>), sizeof(std::mutex));
  EXPECT_EQ(sizeof(RankedReadMostlyMutex<LockRank::kHandleTable>), sizeof(ReadMostlyMutex));
  EXPECT_EQ(alignof(RankedReadMostlyMutex<LockRank::kHandleTable>), alignof(ReadMostlyMutex));
  EXPECT_EQ(sizeof(ConditionVariable), sizeof(std::condition_variable));
  Outer a;
  std::lock_guard lock(a);
  EXPECT_EQ(held_count(), kLockRankCheck ? 1u : 0u);
}

TEST_F(LockRankCheck, IncreasingRanksAreRecordedAndReleasedInAnyOrder) {
  Outer a;
  Middle b;
  Inner c;
  a.lock();
  b.lock();
  c.lock();
  EXPECT_EQ(held_count(), 3u);
  b.unlock();  // not last in, first out: allowed
  EXPECT_EQ(held_count(), 2u);
  c.unlock();
  a.unlock();
  EXPECT_EQ(held_count(), 0u);
  // Released, the same locks can be taken again in the same order.
  std::lock_guard la(a);
  std::lock_guard lc(c);
  EXPECT_EQ(held_count(), 2u);
}

TEST_F(LockRankCheck, OutOfOrderAbortsNamingBothLocks) {
  Outer a;
  Inner c;
  EXPECT_DEATH(
      {
        std::lock_guard lc(c);
        std::lock_guard la(a);
      },
      "lock rank violation: this thread takes a lock out of order: Runtime::mu_ \\(runtime "
      "lifetime\\) \\[rank 1, .*exclusive\\] while holding log \\[rank [0-9]+, .*\\]");
}

TEST_F(LockRankCheck, OutOfOrderAgainstAnyHeldLockNotOnlyTheLast) {
  Middle b;
  Inner c;
  Tree t;  // ranks between b and c
  // The last lock taken is b (a try_lock, below c): t ranks above it but below c, still held.
  EXPECT_DEATH(
      {
        std::lock_guard lc(c);
        ASSERT_TRUE(b.try_lock());
        std::shared_lock r(t);
      },
      "takes a lock out of order: Region::mu .* while holding log");
}

TEST_F(LockRankCheck, TwoLocksOfOneRankAbort) {
  RankedMutex<LockRank::kStreamQueue> one, two;
  EXPECT_DEATH(
      {
        std::lock_guard l1(one);
        std::lock_guard l2(two);
      },
      "takes a second lock of the same rank: Stream::mu_ .* while holding Stream::mu_");
}

TEST_F(LockRankCheck, TakingAHeldLockAgainAborts) {
  Outer a;
  EXPECT_DEATH(
      {
        a.lock();
        a.lock();
      },
      "takes a lock it already holds: Runtime::mu_");
  Tree t;
  EXPECT_DEATH(
      {
        std::shared_lock r1(t);
        std::shared_lock r2(t);
      },
      "takes a lock it already holds: Region::mu .*shared\\] while holding Region::mu .*shared\\]");
  EXPECT_DEATH(
      {
        std::unique_lock w(t);
        std::shared_lock r(t);
      },
      "takes a lock it already holds: Region::mu .*shared\\] while holding Region::mu .*exclusive\\]");
}

TEST_F(LockRankCheck, TryLockMayBeOutOfOrderAndCountsAsHeld) {
  Outer a;
  Inner c;
  std::lock_guard lc(c);
  ASSERT_TRUE(a.try_lock());  // cannot wait, so it cannot deadlock
  EXPECT_EQ(held_count(), 2u);
  a.unlock();
  EXPECT_EQ(held_count(), 1u);
  Tree t;
  ASSERT_TRUE(t.try_lock_shared());
  EXPECT_EQ(held_count(), 2u);
  t.unlock_shared();
}

TEST_F(LockRankCheck, FailedTryLockRecordsNothing) {
  Inner c;
  std::atomic<bool> held{false}, done{false};
  std::thread owner([&] {
    std::lock_guard lock(c);
    held = true;
    while (!done) std::this_thread::yield();
  });
  while (!held) std::this_thread::yield();
  EXPECT_FALSE(c.try_lock());
  EXPECT_EQ(held_count(), 0u);
  Tree t;
  std::unique_lock w(t);
  std::thread reader([&] { EXPECT_FALSE(t.try_lock_shared()); EXPECT_EQ(held_count(), 0u); });
  reader.join();
  done = true;
  owner.join();
}

TEST_F(LockRankCheck, TryLockOfAHeldLockAborts) {
  Outer a;
  EXPECT_DEATH(
      {
        a.lock();
        (void)a.try_lock();
      },
      "tries a lock it already holds: Runtime::mu_");
}

TEST_F(LockRankCheck, ReleasingWhatTheThreadDoesNotHoldAborts) {
  Outer a;
  EXPECT_DEATH(a.unlock(), "releases a lock it does not hold: Runtime::mu_");
  Tree t;
  EXPECT_DEATH(
      {
        t.lock_shared();
        t.unlock();
      },
      "releases a lock in another mode than it took it: Region::mu .*exclusive\\] while holding "
      "Region::mu .*shared\\]");
}

TEST_F(LockRankCheck, AssertHeld) {
  Outer a;
  EXPECT_DEATH(a.assert_held(), "requires a lock it does not hold: Runtime::mu_");
  std::lock_guard la(a);
  a.assert_held();
}

TEST_F(LockRankCheck, TheMessageListsEveryHeldLock) {
  Outer a;
  Middle b;
  Inner c;
  EXPECT_DEATH(
      {
        std::lock_guard la(a);
        std::lock_guard lc(c);
        std::lock_guard lb(b);
      },
      "oldest first:\n    Runtime::mu_ .*\n    log .*\n");
}

TEST_F(LockRankCheck, ConditionVariableWaitKeepsTheRecord) {
  RankedMutex<LockRank::kStreamQueue> mu;
  ConditionVariable cv;
  bool ready = false;
  size_t seen_after_wait = 0;
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ready; });
    seen_after_wait = held_count();
  });
  {
    std::lock_guard lock(mu);
    ready = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_EQ(seen_after_wait, 1u);
  EXPECT_EQ(held_count(), 0u);
}

// Each thread has its own record: what one holds does not constrain another.
TEST_F(LockRankCheck, ThreadsHaveTheirOwnRecord) {
  Outer a;
  Inner c;
  std::atomic<bool> holding{false}, done{false};
  std::thread high([&] {
    std::lock_guard lc(c);
    holding = true;
    while (!done) std::this_thread::yield();
    EXPECT_EQ(held_count(), 1u);
  });
  while (!holding) std::this_thread::yield();
  EXPECT_EQ(held_count(), 0u);
  {
    std::lock_guard la(a);  // below c, which only the other thread holds
    EXPECT_EQ(held_count(), 1u);
  }
  done = true;
  high.join();
}

// fork: the child's one thread has the forking thread's record (what the prepare handlers took,
// which the child handlers release), not the locks other threads held.
TEST_F(LockRankCheck, ForkChildHasTheForkingThreadsRecord) {
  Outer a;
  Middle b;
  Inner c;
  std::atomic<bool> holding{false}, done{false};
  std::thread other([&] {
    std::lock_guard lc(c);
    holding = true;
    while (!done) std::this_thread::yield();
  });
  while (!holding) std::this_thread::yield();
  a.lock();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    if (held_count() != 1) code = 1;
    b.lock();  // above a, below c: c is not this thread's
    if (held_count() != 2) code = 2;
    b.unlock();
    a.unlock();  // the inherited lock is released by the child's copy of the locker
    if (held_count() != 0) code = 3;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

  // And the inherited record is enforced in the child: a lock below one it inherited aborts.
  a.unlock();
  b.lock();
  const pid_t violator = fork();
  ASSERT_GE(violator, 0);
  if (violator == 0) {
    a.lock();  // below b, which the child inherited as held
    _exit(0);
  }
  ASSERT_EQ(waitpid(violator, &status, 0), violator);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << "status " << status;
  b.unlock();
  done = true;
  other.join();
}

}  // namespace
}  // namespace aclvmm
