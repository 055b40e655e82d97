// The queues emu and the fake share (drivers/command_queues.h), beyond conformance C22-C26: the
// thread's creation is an injection step with nothing left behind when it fails; a host task
// that forks ends its queue's thread in the child without a completion there, while the parent's
// queue goes on; submissions from several threads each get one fence and one completion; a wait
// on a fence that cannot pass yet times out; cancel()'s fence arithmetic (the dropped fences pass
// with the running command, not before it; two cancels add up; an idle queue's fences stay).
#include "drivers/command_queues.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev {
namespace {

// An engine whose copies and fills do nothing: the queues are under test, not the bytes.
class NullEngine final : public CopyEngine {
 public:
  CopyOutcome copy(const CopyRequest&) override { return CopyOutcome{}; }
  CopyOutcome fill(const FillRequest&) override { return CopyOutcome{}; }
  Result create_queue(const QueueConfig&, QueueId*) override { return Result::from_errno(EINVAL); }
  void destroy_queue(QueueId) override {}
  void cancel(QueueId) override {}
  Result submit(QueueId, const Command&, Fence*) override { return Result::from_errno(EINVAL); }
  Result wait(QueueId, Fence, int) override { return Result::from_errno(EINVAL); }
  Fence completed(QueueId) const override { return 0; }
};

Command task(Result (*run)(void*), void (*done)(void*, const CopyOutcome&), void* context) {
  Command c;
  c.kind = CommandKind::kHostTask;
  c.task.run = run;
  c.completion = {done, context};
  return c;
}

class CommandQueuesTest : public ::testing::Test {
 protected:
  NullEngine engine_;
  testing::RecordingListener listener_;
  CommandQueues queues_{engine_, &listener_, steps::kEmuQueueThread};
};

TEST_F(CommandQueuesTest, AThreadThatCannotBeMadeLeavesNoQueue) {
  listener_.arm(steps::kEmuQueueThread, 1, EAGAIN);
  QueueId q;
  EXPECT_EQ(queues_.create(QueueConfig{}, &q), Result::from_errno(EAGAIN));
  EXPECT_FALSE(q);
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  EXPECT_TRUE(queues_.live(q));
  queues_.destroy(q);
  EXPECT_FALSE(queues_.live(q));
}

// What a forking task reports: the pipe the child would write to if a completion ran there.
struct ForkProbe {
  pid_t parent = 0;
  pid_t child = 0;
  int pipe_w = -1;
  std::atomic<int> completions{0};
};

TEST_F(CommandQueuesTest, AHostTaskThatForksEndsInTheChildWithoutACompletion) {
#if defined(__SANITIZE_THREAD__)
  // TSan's runtime faults in a child forked from a thread when that thread, its only one, ends.
  GTEST_SKIP() << "a child forked from a queue thread cannot end under ThreadSanitizer";
#endif
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ForkProbe probe;
  probe.parent = ::getpid();
  probe.pipe_w = fds[1];
  auto run = [](void* context) {
    auto* p = static_cast<ForkProbe*>(context);
    const pid_t pid = ::fork();
    if (pid > 0) p->child = pid;
    return Result::success();  // the child returns from here as well
  };
  auto done = [](void* context, const CopyOutcome&) {
    auto* p = static_cast<ForkProbe*>(context);
    if (::getpid() != p->parent) {
      const char c = 'x';
      (void)!::write(p->pipe_w, &c, 1);
      return;
    }
    p->completions.fetch_add(1);
  };
  Fence f = 0;
  ASSERT_TRUE(queues_.submit(q, task(run, done, &probe), &f).ok());
  ASSERT_TRUE(queues_.wait(q, f, -1).ok());
  ASSERT_GT(probe.child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(probe.child, &status, 0), probe.child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  ::close(fds[1]);
  char c;
  EXPECT_EQ(::read(fds[0], &c, 1), 0) << "a completion ran in the child";
  ::close(fds[0]);
  EXPECT_EQ(probe.completions.load(), 1);
  // The parent's queue goes on.
  ASSERT_TRUE(queues_.submit(q, task([](void*) { return Result::success(); }, done, &probe), &f)
                  .ok());
  ASSERT_TRUE(queues_.wait(q, f, -1).ok());
  EXPECT_EQ(probe.completions.load(), 2);
  queues_.destroy(q);
}

TEST_F(CommandQueuesTest, ConcurrencyFourThreadsSubmitEachCommandOnceWithItsOwnFence) {
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  constexpr int kThreads = 4, kEach = 500;
  std::atomic<int> ran{0}, completed{0};
  struct Counters {
    std::atomic<int>* ran;
    std::atomic<int>* completed;
  } counters{&ran, &completed};
  auto run = [](void* c) {
    static_cast<Counters*>(c)->ran->fetch_add(1);
    return Result::success();
  };
  auto done = [](void* c, const CopyOutcome&) { static_cast<Counters*>(c)->completed->fetch_add(1); };
  std::vector<std::vector<Fence>> fences(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Fence f = 0;
        if (queues_.submit(q, task(run, done, &counters), &f).ok()) fences[t].push_back(f);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<Fence> all;
  for (const auto& v : fences) {
    EXPECT_EQ(v.size(), static_cast<size_t>(kEach));
    for (size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1], v[i]) << "one thread's fences rise";
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), static_cast<Fence>(kThreads * kEach));
  ASSERT_TRUE(queues_.wait(q, kThreads * kEach, -1).ok());
  EXPECT_EQ(queues_.completed(q), static_cast<Fence>(kThreads * kEach));
  EXPECT_EQ(ran.load(), kThreads * kEach);
  EXPECT_EQ(completed.load(), kThreads * kEach);
  queues_.destroy(q);
}

TEST_F(CommandQueuesTest, AWaitForAFenceThatCannotPassYetTimesOut) {
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  std::atomic<bool> release{false};
  auto run = [](void* c) {
    while (!static_cast<std::atomic<bool>*>(c)->load()) std::this_thread::yield();
    return Result::success();
  };
  Fence f = 0;
  ASSERT_TRUE(queues_.submit(q, task(run, nullptr, &release), &f).ok());
  EXPECT_EQ(queues_.wait(q, f, 10).condition(), Condition::kTimedOut);
  EXPECT_EQ(queues_.completed(q), 0u);
  release.store(true);
  EXPECT_TRUE(queues_.wait(q, f, -1).ok());
  EXPECT_EQ(queues_.completed(q), 1u);
  queues_.destroy(q);
}

// cancel() (CopyEngine::cancel, beyond conformance C49): the fence arithmetic. A host task that
// blocks until released, and counters of what ran and how each command completed.
struct QueueCancelProbe {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> finished{0};
  // For QueueCancelGatedCompletion: the cancelled completion has begun / may end.
  std::atomic<bool> completion_entered{false};
  std::atomic<bool> completion_release{false};
};

template <typename Pred>
bool queue_cancel_poll(Pred done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

Result queue_cancel_block(void* c) {
  auto* p = static_cast<QueueCancelProbe*>(c);
  p->started.store(true);
  (void)queue_cancel_poll([p] { return p->release.load(); });
  return Result::success();
}

Result queue_cancel_count(void* c) {
  static_cast<QueueCancelProbe*>(c)->ran.fetch_add(1);
  return Result::success();
}

void queue_cancel_done(void* c, const CopyOutcome& outcome) {
  auto* p = static_cast<QueueCancelProbe*>(c);
  if (outcome.result.condition() == Condition::kCancelled) {
    p->cancelled.fetch_add(1);
  } else {
    p->finished.fetch_add(1);
  }
}

// A completion that, when cancelled, holds the cancelling thread until completion_release.
void queue_cancel_gated_done(void* c, const CopyOutcome& outcome) {
  auto* p = static_cast<QueueCancelProbe*>(c);
  if (outcome.result.condition() == Condition::kCancelled) {
    p->completion_entered.store(true);
    (void)queue_cancel_poll([p] { return p->completion_release.load(); });
  }
  queue_cancel_done(c, outcome);
}

// Two cancels while one command runs: the fences each drops pass together with the running
// command's, not before it (completed() stays 0 until it returns, then jumps over all of them);
// each cancel returns with every fence given before it passed; a command submitted after both
// runs and takes the next fence.
TEST_F(CommandQueuesTest, CancelledFencesPassWithTheRunningCommand) {
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  QueueCancelProbe probe;
  Fence f = 0;
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_block, queue_cancel_done, &probe), &f).ok());
  ASSERT_EQ(f, 1u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  }
  ASSERT_EQ(f, 4u);
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.started.load(); }));
  std::atomic<Fence> first_at_return{0}, second_at_return{0};
  std::thread first([&] {
    queues_.cancel(q);
    first_at_return.store(queues_.completed(q));
  });
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.cancelled.load() == 3; }));
  EXPECT_EQ(queues_.completed(q), 0u) << "cancelled fences passed before the running command";
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  }
  ASSERT_EQ(f, 6u);
  std::thread second([&] {
    queues_.cancel(q);
    second_at_return.store(queues_.completed(q));
  });
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.cancelled.load() == 5; }));
  EXPECT_EQ(queues_.completed(q), 0u);
  EXPECT_EQ(queues_.wait(q, 6, 10).condition(), Condition::kTimedOut);
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  EXPECT_EQ(f, 7u);
  probe.release.store(true);
  first.join();
  second.join();
  EXPECT_GE(first_at_return.load(), 4u);
  EXPECT_GE(second_at_return.load(), 6u);
  ASSERT_TRUE(queues_.wait(q, 7, -1).ok());
  EXPECT_EQ(queues_.completed(q), 7u) << "the fences did not add up";
  EXPECT_EQ(probe.ran.load(), 1);
  EXPECT_EQ(probe.cancelled.load(), 5);
  EXPECT_EQ(probe.finished.load(), 2);
  // And the count goes on from there.
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  EXPECT_EQ(f, 8u);
  ASSERT_TRUE(queues_.wait(q, 8, -1).ok());
  EXPECT_EQ(queues_.completed(q), 8u);
  queues_.destroy(q);
}

// cancel() of an idle queue (nothing queued, nothing running) returns at once and moves no fence.
TEST_F(CommandQueuesTest, CancelOfAnIdleQueueMovesNoFence) {
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  QueueCancelProbe probe;
  queues_.cancel(q);
  EXPECT_EQ(queues_.completed(q), 0u);
  Fence f = 0;
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  ASSERT_TRUE(queues_.wait(q, f, -1).ok());
  queues_.cancel(q);
  queues_.cancel(q);
  EXPECT_EQ(queues_.completed(q), 1u);
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_done, &probe), &f).ok());
  EXPECT_EQ(f, 2u);
  ASSERT_TRUE(queues_.wait(q, f, -1).ok());
  EXPECT_EQ(probe.ran.load(), 2);
  EXPECT_EQ(probe.finished.load(), 2);
  EXPECT_EQ(probe.cancelled.load(), 0);
  queues_.destroy(q);
}

// command_queues.h: "a wait() that returns has seen every completion up to its fence". A
// cancelled command's fence must not pass while its (kCancelled) completion still runs on the
// cancelling thread, even when the command ahead of it finishes meanwhile.
TEST_F(CommandQueuesTest, ACancelledFencePassesOnlyAfterItsCompletion) {
  QueueId q;
  ASSERT_TRUE(queues_.create(QueueConfig{}, &q).ok());
  QueueCancelProbe probe;
  Fence f = 0;
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_block, queue_cancel_done, &probe), &f).ok());
  ASSERT_TRUE(queues_.submit(q, task(queue_cancel_count, queue_cancel_gated_done, &probe), &f).ok());
  ASSERT_EQ(f, 2u);
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.started.load(); }));
  std::thread canceller([&] { queues_.cancel(q); });
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.completion_entered.load(); }));
  probe.release.store(true);  // the running command ends while the completion of fence 2 runs
  ASSERT_TRUE(queue_cancel_poll([&] { return probe.finished.load() == 1; }));
  EXPECT_EQ(queues_.wait(q, 2, 100).condition(), Condition::kTimedOut)
      << "fence 2 passed while its completion had not returned";
  EXPECT_EQ(probe.cancelled.load(), 0);
  probe.completion_release.store(true);
  canceller.join();
  EXPECT_TRUE(queues_.wait(q, 2, -1).ok());
  EXPECT_EQ(probe.cancelled.load(), 1);
  EXPECT_EQ(probe.ran.load(), 0);
  queues_.destroy(q);
}

}  // namespace
}  // namespace aclvmm::dev
