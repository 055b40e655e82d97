// ReadMostlyMutex (base/read_mostly_mutex.h): one reader count per slot, a writer flag that makes
// new readers stand back while the writer waits for the counts to drain. The tests prove exclusion
// and sharing with counters that the threads keep while they hold the lock, not with timing, and
// run more threads than there are slots (slots are then shared by several readers). The suite name
// matches the ThreadSanitizer stage ('Concurrency|Thread').
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/read_mostly_mutex.h"

namespace aclvmm {
namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 10;  // sanitizers run each lock operation 5-20x slower
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr int kScale = 10;
#else
constexpr int kScale = 1;
#endif
#else
constexpr int kScale = 1;
#endif

constexpr int kSlots = static_cast<int>(ReadMostlyMutex::kSlots);
constexpr auto kDeadline = std::chrono::seconds(10);  // only reached when the lock is broken

// Runs body(0) ... body(n - 1) on n fresh threads (fresh: each is dealt the next slot).
void run_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
}

// Spins until pred() holds or the deadline passes; returns pred().
bool wait_for(const std::function<bool()>& pred) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// n readers all hold the lock at the same moment: each waits inside its read section until every
// other reader is inside too. A lock that excluded readers from each other never gets there.
void expect_readers_share(int n) {
  ReadMostlyMutex mu;
  std::atomic<int> inside{0}, saw_all{0};
  run_threads(n, [&](int) {
    std::shared_lock<ReadMostlyMutex> lock(mu);
    inside.fetch_add(1);
    if (wait_for([&] { return inside.load() == n; })) saw_all.fetch_add(1);
  });
  EXPECT_EQ(saw_all.load(), n) << n << " readers did not hold the lock together";
}

TEST(ReadMostlyMutexConcurrency, ReadersOnEverySlotHoldItTogether) { expect_readers_share(kSlots); }

TEST(ReadMostlyMutexConcurrency, ThreeReadersPerSlotHoldItTogether) {
  expect_readers_share(3 * kSlots);
}

// Readers and writers on 3 x kSlots threads. Inside the lock a writer marks itself and checks that
// nobody else is inside; a reader checks that no writer is. Any overlap is counted.
TEST(ReadMostlyMutexConcurrency, WritersExcludeReadersAndWritersOnMoreThreadsThanSlots) {
  ReadMostlyMutex mu;
  std::atomic<int> readers{0}, writers{0}, overlaps{0};
  std::atomic<long> writes{0}, reads{0};
  long guarded = 0;  // a plain counter only writers change: lost updates would show
  const int threads = 3 * kSlots, iterations = 2000 / kScale;
  run_threads(threads, [&](int id) {
    for (int i = 0; i < iterations; ++i) {
      if ((i + id) % 4 == 0) {
        std::unique_lock<ReadMostlyMutex> lock(mu);
        if (writers.fetch_add(1) != 0 || readers.load() != 0) overlaps.fetch_add(1);
        ++guarded;
        writes.fetch_add(1);
        if (readers.load() != 0) overlaps.fetch_add(1);
        writers.fetch_sub(1);
      } else {
        std::shared_lock<ReadMostlyMutex> lock(mu);
        readers.fetch_add(1);
        if (writers.load() != 0) overlaps.fetch_add(1);
        const long seen = guarded;  // reading is allowed: no writer runs now (TSan checks it too)
        if (seen != writes.load()) overlaps.fetch_add(1);  // both change only under the writer lock
        reads.fetch_add(1);
        readers.fetch_sub(1);
      }
    }
  });
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(guarded, writes.load());
  EXPECT_EQ(writes.load() + reads.load(), static_cast<long>(threads) * iterations);
  EXPECT_GT(writes.load(), 0);
}

// While a writer holds the lock, readers on every slot block in lock_shared (none gets in until
// the writer leaves), and all of them get in afterwards.
TEST(ReadMostlyMutexConcurrency, WriterBlocksReadersOnEverySlot) {
  ReadMostlyMutex mu;
  std::atomic<int> waiting{0}, entered{0};
  std::atomic<bool> writer_done{false};
  std::atomic<int> early{0};
  mu.lock();
  std::vector<std::thread> readers;
  for (int i = 0; i < 2 * kSlots; ++i) {
    readers.emplace_back([&] {
      waiting.fetch_add(1);
      mu.lock_shared();
      if (!writer_done.load()) early.fetch_add(1);
      entered.fetch_add(1);
      mu.unlock_shared();
    });
  }
  ASSERT_TRUE(wait_for([&] { return waiting.load() == 2 * kSlots; }));
  // Give the readers time to reach lock_shared; a broken lock lets them in during this window.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(entered.load(), 0);
  writer_done.store(true);
  mu.unlock();
  for (auto& t : readers) t.join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(entered.load(), 2 * kSlots);
}

// A writer that finds a reader inside spins, then sleeps; the reader's unlock wakes it. Likewise a
// writer behind another writer. Each waiter is held long past the spin, so it sleeps; a lost
// wake-up would leave it asleep and the test at its deadline.
TEST(ReadMostlyMutexConcurrency, SleepingWritersWakeWhenReadersAndWritersLeave) {
  ReadMostlyMutex mu;
  std::atomic<int> stage{0};
  std::atomic<bool> writer_in{false};
  std::thread reader([&] {
    mu.lock_shared();
    stage.store(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_FALSE(writer_in.load()) << "a writer got in beside a reader";
    mu.unlock_shared();
  });
  ASSERT_TRUE(wait_for([&] { return stage.load() == 1; }));
  std::thread writer([&] {
    mu.lock();  // sleeps until the reader leaves
    writer_in.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    writer_in.store(false);
    mu.unlock();
  });
  ASSERT_TRUE(wait_for([&] { return writer_in.load(); }));
  std::thread second_writer([&] {
    mu.lock();  // sleeps until the first writer leaves
    EXPECT_FALSE(writer_in.load()) << "two writers inside";
    stage.store(2);
    mu.unlock();
  });
  ASSERT_TRUE(wait_for([&] { return stage.load() == 2; }));
  reader.join();
  writer.join();
  second_writer.join();
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

// Readers that stood back for a writer and went to sleep all get in when it leaves, while more
// writers keep coming: none is left asleep, and no reader is ever inside with a writer.
TEST(ReadMostlyMutexConcurrency, ReadersAndWritersAlternatingUnderSleepsLoseNoWakeUp) {
  ReadMostlyMutex mu;
  std::atomic<int> readers{0}, writers{0}, overlaps{0};
  const int threads = 2 * kSlots, rounds = 200 / kScale;
  run_threads(threads, [&](int id) {
    for (int i = 0; i < rounds; ++i) {
      if (id % 4 == 0) {
        std::unique_lock<ReadMostlyMutex> lock(mu);
        if (writers.fetch_add(1) != 0 || readers.load() != 0) overlaps.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // readers sleep meanwhile
        writers.fetch_sub(1);
      } else {
        std::shared_lock<ReadMostlyMutex> lock(mu);
        readers.fetch_add(1);
        if (writers.load() != 0) overlaps.fetch_add(1);
        readers.fetch_sub(1);
      }
    }
  });
  EXPECT_EQ(overlaps.load(), 0);
}

// try_lock / try_lock_shared never block and report what they got.
TEST(ReadMostlyMutexConcurrency, TryLockOnAFreeLockSucceedsAndExcludes) {
  ReadMostlyMutex mu;
  ASSERT_TRUE(mu.try_lock());
  std::atomic<int> shared_ok{0}, unique_ok{0};
  run_threads(2 * kSlots, [&](int) {  // every slot, twice
    if (mu.try_lock_shared()) {
      shared_ok.fetch_add(1);
      mu.unlock_shared();
    }
    if (mu.try_lock()) {
      unique_ok.fetch_add(1);
      mu.unlock();
    }
  });
  EXPECT_EQ(shared_ok.load(), 0);
  EXPECT_EQ(unique_ok.load(), 0);
  mu.unlock();
  // Free again: shared on every slot, then exclusive.
  run_threads(2 * kSlots, [&](int) {
    if (mu.try_lock_shared()) {
      shared_ok.fetch_add(1);
      mu.unlock_shared();
    }
  });
  EXPECT_EQ(shared_ok.load(), 2 * kSlots);
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

// A reader on slot s makes try_lock fail after it took slots 0..s-1; those must be given back, or
// later readers on them would block forever. One reader per slot in turn (fresh threads are dealt
// consecutive slots), so the failure happens at every position, including the last.
TEST(ReadMostlyMutexConcurrency, FailedTryLockGivesBackTheSlotsItTook) {
  ReadMostlyMutex mu;
  for (int round = 0; round < kSlots + 1; ++round) {
    std::atomic<bool> holding{false}, release{false};
    std::thread reader([&] {
      mu.lock_shared();
      holding.store(true);
      while (!release.load()) std::this_thread::yield();
      mu.unlock_shared();
    });
    ASSERT_TRUE(wait_for([&] { return holding.load(); }));
    EXPECT_FALSE(mu.try_lock()) << "round " << round;
    // Every slot admits a reader now (try_lock_shared fails only on a slot held exclusively).
    std::atomic<int> admitted{0};
    run_threads(kSlots, [&](int) {
      if (mu.try_lock_shared()) {
        admitted.fetch_add(1);
        mu.unlock_shared();
      }
    });
    EXPECT_EQ(admitted.load(), kSlots) << "round " << round << ": a failed try_lock kept a slot";
    release.store(true);
    reader.join();
    EXPECT_TRUE(mu.try_lock()) << "round " << round;
    mu.unlock();
  }
}

// The standard lock wrappers work with it (SharedMutex requirements), try_to_lock included.
TEST(ReadMostlyMutexConcurrency, StandardWrappers) {
  ReadMostlyMutex mu;
  {
    std::unique_lock<ReadMostlyMutex> w(mu, std::try_to_lock);
    ASSERT_TRUE(w.owns_lock());
    std::thread([&] {
      std::shared_lock<ReadMostlyMutex> r(mu, std::try_to_lock);
      EXPECT_FALSE(r.owns_lock());
      std::unique_lock<ReadMostlyMutex> w2(mu, std::try_to_lock);
      EXPECT_FALSE(w2.owns_lock());
    }).join();
    w.unlock();
    EXPECT_FALSE(w.owns_lock());
    std::shared_lock<ReadMostlyMutex> r(mu);
    EXPECT_TRUE(r.owns_lock());
    std::thread([&] {
      std::shared_lock<ReadMostlyMutex> r2(mu, std::try_to_lock);
      EXPECT_TRUE(r2.owns_lock());  // readers share
      std::unique_lock<ReadMostlyMutex> w2(mu, std::try_to_lock);
      EXPECT_FALSE(w2.owns_lock());  // a writer waits for them
    }).join();
  }
  // Released by the destructors: a writer gets it now.
  std::lock_guard<ReadMostlyMutex> g(mu);
  std::thread([&] { EXPECT_FALSE(mu.try_lock_shared()); }).join();
}

// Each slot is a whole cache line: readers on different slots never write the same line.
TEST(ReadMostlyMutexConcurrency, SlotsDoNotShareACacheLine) {
  EXPECT_GE(sizeof(ReadMostlyMutex), ReadMostlyMutex::kSlots * 64);
  EXPECT_EQ(alignof(ReadMostlyMutex) % 64, 0u);
}

}  // namespace
}  // namespace aclvmm
