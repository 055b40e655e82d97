// Conformance of CopyEngine's queues (docs/device-interface.md §9, C19's queued half, C22-C26):
// commands run in submission order on the queue's thread, fences rise by one, every completion
// runs exactly once (kCancelled for what destroy_queue dropped), host tasks may submit to their
// own queue but not wait for it, a failed submit never completes, and a queue destroyed from its
// own task does not deadlock; C49: cancel() drops what had not started and waits for the running
// command, also from the queue's own task. A queued copy is translated when it runs (D4). C27
// (kPrefetch in queue order) waits for unified memory in the backend (step 6): until then the
// core queues a prefetch as a host task.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "conformance/harness.h"
#include "drivers/injection_steps.h"
#include "unit/testing/endpoints.h"
#include "unit/testing/one_shot_gate.h"

namespace aclvmm::conformance {
namespace {

using dev::Command;
using dev::CommandKind;
using dev::Condition;
using dev::CopyEndpoint;
using dev::CopyOutcome;
using dev::EndpointKind;
using dev::Fence;
using dev::kGiB;
using dev::kMiB;
using dev::Location;
using dev::QueueConfig;
using dev::QueueId;
using dev::Result;

constexpr uint64_t kQueueSize = 4 * kMiB;

// Waits give up after a minute, so that a broken backend fails the case instead of stalling.
class Gate {
 public:
  void open() { gate_.open(); }
  bool wait() { return gate_.wait_for(std::chrono::minutes(1)); }

 private:
  testing::OneShotGate gate_;
};

// What the completions of one command saw.
struct Record {
  std::atomic<int> calls{0};
  std::atomic<int32_t> result{1};  // Result::raw() of the last outcome
  CopyOutcome outcome;
  std::function<Result()> task;    // a host task's body
};

void record(void* context, const CopyOutcome& outcome) {
  auto* r = static_cast<Record*>(context);
  r->outcome = outcome;
  r->result.store(outcome.result.raw());
  r->calls.fetch_add(1);
}

Result run_task(void* context) { return static_cast<Record*>(context)->task(); }

Command host_task(Record* r) {
  Command c;
  c.kind = CommandKind::kHostTask;
  c.task.run = &run_task;
  c.completion = {&record, r};
  return c;
}

using testing::host;
using testing::mapped;

Command copy(CopyEndpoint dst, CopyEndpoint src, uint64_t n, Record* r) {
  Command c;
  c.kind = CommandKind::kCopy;
  c.copy = dev::CopyRequest{dst, src, n, dev::Executor{0, 0}};
  c.completion = {&record, r};
  return c;
}

class QueueConformance : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    va_ = harness().reserve_va(kGiB);
    ASSERT_NE(va_, 0u);
    mem_ = create(Location::device(0), 2 * kQueueSize);
    ASSERT_TRUE(
        be().mmu().map(va_, 2 * kQueueSize, mem_, 0, dev::InitialAccess::kOwnerReadWrite).ok());
    mapped_ = true;
  }
  void TearDown() override {
    if (backend_) {
      if (queue_) be().copy_engine().destroy_queue(queue_);
      if (mapped_) (void)be().mmu().unmap(va_, 2 * kQueueSize);
      if (mem_) (void)be().physical().release(mem_);
    }
    BackendTest::TearDown();
  }
  void make_queue(void (*start)(void*) = nullptr, void* context = nullptr) {
    QueueConfig config;
    config.device = 0;
    config.on_thread_start = start;
    config.context = context;
    ASSERT_TRUE(be().copy_engine().create_queue(config, &queue_).ok());
  }
  Fence submit(const Command& c) {
    Fence f = 0;
    EXPECT_TRUE(be().copy_engine().submit(queue_, c, &f).ok());
    return f;
  }
  void wait(Fence f) { EXPECT_TRUE(be().copy_engine().wait(queue_, f, -1).ok()); }

  uint64_t va_ = 0;
  dev::PhysicalId mem_;
  bool mapped_ = false;
  QueueId queue_;
};

// C19 (queued half): a copy queued before an unmap of its range is translated when it runs and
// fails there, naming its side and address.
TEST_P(QueueConformance, C19_ACopyQueuedBeforeAnUnmapFailsWhenItRuns) {
  make_queue();
  Gate release;
  Record blocker, copied;
  blocker.task = [&] { return release.wait() ? Result::success() : Result::from_errno(ETIMEDOUT); };
  std::vector<uint8_t> out(4096, 0);
  (void)submit(host_task(&blocker));
  const Fence f = submit(copy(host(out.data()), mapped(va_ + 8192), out.size(), &copied));
  ASSERT_TRUE(be().mmu().unmap(va_, 2 * kQueueSize).ok());
  mapped_ = false;
  release.open();
  wait(f);
  EXPECT_EQ(copied.calls.load(), 1);
  EXPECT_EQ(copied.outcome.result.condition(), harness().traits().copy_fault);
  // An engine that checks no ranges (hal: drvMemcpy, hal.md §3.11) names no side or address.
  if (!be().capabilities().copies_check_access) return;
  EXPECT_EQ(copied.outcome.failed_side, CopyOutcome::Side::kSource);
  EXPECT_EQ(copied.outcome.failed_address, va_ + 8192);
}

// C22: dependent copies run in order (host -> device -> device -> host); fences are 1, 2, 3, ...;
// completed() never falls and has reached a fence once wait() returns.
TEST_P(QueueConformance, C22_CommandsRunInOrderAndFencesRise) {
  make_queue();
  std::vector<uint8_t> in(kQueueSize), out(kQueueSize, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  Record r[3];
  std::atomic<bool> stop{false};
  std::atomic<bool> fell{false};
  std::thread watcher([&] {
    Fence last = 0;
    while (!stop.load()) {
      const Fence now = be().copy_engine().completed(queue_);
      if (now < last) fell.store(true);
      last = now;
    }
  });
  std::vector<Fence> fences;
  for (int round = 0; round < 20; ++round) {
    fences.push_back(submit(copy(mapped(va_), host(in.data()), kQueueSize, &r[0])));
    fences.push_back(submit(copy(mapped(va_ + kQueueSize), mapped(va_), kQueueSize, &r[1])));
    fences.push_back(submit(copy(host(out.data()), mapped(va_ + kQueueSize), kQueueSize, &r[2])));
    wait(fences.back());
    EXPECT_GE(be().copy_engine().completed(queue_), fences.back());
    ASSERT_EQ(out, in) << "round " << round;
    std::fill(out.begin(), out.end(), 0);
    in[round] ^= 0xff;
  }
  stop.store(true);
  watcher.join();
  EXPECT_FALSE(fell.load()) << "completed() fell";
  for (size_t i = 0; i < fences.size(); ++i) EXPECT_EQ(fences[i], i + 1);
  for (const Record& x : r) {
    EXPECT_EQ(x.calls.load(), 20);
    EXPECT_EQ(x.result.load(), 0);
  }
}

// C23: every completion runs exactly once; destroying a queue whose host task blocks drops what
// had not started (kCancelled, on the destroying thread before it waits), then waits for the
// task, whose completion is its own result.
TEST_P(QueueConformance, C23_DestroyCancelsWhatHadNotStartedAndWaitsForTheRunningCommand) {
  make_queue();
  Gate started, release;
  Record blocker;
  blocker.task = [&] {
    started.open();
    return release.wait() ? Result::success() : Result::from_errno(ETIMEDOUT);
  };
  constexpr int kPending = 8;
  Record later[kPending];
  std::vector<uint8_t> buf(4096, 1);
  (void)submit(host_task(&blocker));
  for (Record& r : later) (void)submit(copy(mapped(va_), host(buf.data()), buf.size(), &r));
  ASSERT_TRUE(started.wait());
  std::thread destroyer([&] { be().copy_engine().destroy_queue(queue_); });
  // The cancellations come first, so this wait ends before the task is released.
  for (int spins = 0; spins < 600000; ++spins) {
    int cancelled = 0;
    for (Record& r : later) cancelled += r.calls.load();
    if (cancelled == kPending) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(blocker.calls.load(), 0) << "the running task completes only when it returns";
  release.open();
  destroyer.join();
  queue_ = QueueId{};
  EXPECT_EQ(blocker.calls.load(), 1);
  EXPECT_EQ(blocker.result.load(), 0);
  for (Record& r : later) {
    EXPECT_EQ(r.calls.load(), 1);
    EXPECT_EQ(r.outcome.result.condition(), Condition::kCancelled);
  }
}

struct ThreadStart {
  std::atomic<int> calls{0};
  std::thread::id thread;
};

void on_start(void* context) {
  auto* s = static_cast<ThreadStart*>(context);
  s->thread = std::this_thread::get_id();
  s->calls.fetch_add(1);
}

// C24: on_thread_start runs once, first, on the queue's thread; a host task may submit to its own
// queue (the command runs after the task) but not wait for it (EDEADLK), and may wait for
// another queue.
TEST_P(QueueConformance, C24_AHostTaskSubmitsToItsOwnQueueButCannotWaitForIt) {
  ThreadStart start;
  make_queue(&on_start, &start);
  QueueId other;
  ASSERT_TRUE(be().copy_engine().create_queue(QueueConfig{1, nullptr, nullptr}, &other).ok());
  Record outer, inner, elsewhere;
  std::thread::id task_thread;
  int started_before = -1;
  bool inner_ran_during = true;
  int32_t own_wait = 0, other_wait = 1;
  inner.task = [] { return Result::success(); };
  elsewhere.task = [] { return Result::success(); };
  outer.task = [&] {
    task_thread = std::this_thread::get_id();
    started_before = start.calls.load();
    Fence f = 0, g = 0;
    if (!be().copy_engine().submit(queue_, host_task(&inner), &f).ok()) return Result::from_errno(EIO);
    own_wait = be().copy_engine().wait(queue_, f, -1).raw();
    if (!be().copy_engine().submit(other, host_task(&elsewhere), &g).ok()) return Result::from_errno(EIO);
    other_wait = be().copy_engine().wait(other, g, -1).raw();
    inner_ran_during = inner.calls.load() != 0;
    return Result::success();
  };
  (void)submit(host_task(&outer));
  wait(2);
  be().copy_engine().destroy_queue(other);
  EXPECT_EQ(start.calls.load(), 1);
  EXPECT_EQ(started_before, 1) << "on_thread_start runs before the first command";
  EXPECT_EQ(start.thread, task_thread);
  EXPECT_NE(task_thread, std::this_thread::get_id());
  EXPECT_EQ(own_wait, Result::from_errno(EDEADLK).raw());
  EXPECT_EQ(other_wait, 0);
  EXPECT_FALSE(inner_ran_during) << "a command the task submitted runs after the task";
  EXPECT_EQ(outer.calls.load(), 1);
  EXPECT_EQ(inner.calls.load(), 1);
  EXPECT_EQ(elsewhere.calls.load(), 1);
}

// C25: a submit refused (dev.queue.submit) queues nothing and never calls the completion; a
// command failed when it runs (dev.queue.execute) completes once with the rule's errno, without
// running, and the queue goes on.
TEST_P(QueueConformance, C25_AFailedSubmitNeverCompletes) {
  make_queue();
  Record refused, failed, ran;
  std::atomic<int> runs{0};
  refused.task = failed.task = ran.task = [&] {
    runs.fetch_add(1);
    return Result::success();
  };
  listener_.arm(dev::steps::kQueueSubmit, 1, ENOMEM);
  Fence f = 77;
  EXPECT_EQ(be().copy_engine().submit(queue_, host_task(&refused), &f),
            Result::from_errno(ENOMEM));
  listener_.arm(dev::steps::kQueueExecute, 1, EIO);
  const Fence first = submit(host_task(&failed));
  const Fence second = submit(host_task(&ran));
  EXPECT_EQ(first, 1u) << "the refused submit took no fence";
  wait(second);
  EXPECT_EQ(refused.calls.load(), 0);
  EXPECT_EQ(failed.calls.load(), 1);
  EXPECT_EQ(failed.result.load(), Result::from_errno(EIO).raw());
  EXPECT_EQ(ran.calls.load(), 1);
  EXPECT_EQ(ran.result.load(), 0);
  EXPECT_EQ(runs.load(), 1) << "only the last command ran";
}

// C26: a host task destroys its own queue (a task that ends the process does): it returns, its
// own completion still runs once, and what was queued behind it is cancelled.
TEST_P(QueueConformance, C26_DestroyingAQueueFromItsOwnTaskDoesNotDeadlock) {
  make_queue();
  Gate done, queued;
  Record self, behind;
  behind.task = [] { return Result::success(); };
  self.task = [&] {
    if (!queued.wait()) return Result::from_errno(ETIMEDOUT);  // `behind` is in the queue
    be().copy_engine().destroy_queue(queue_);
    return Result::success();
  };
  struct Both {
    Record* r;
    Gate* g;
  } both{&self, &done};
  Command c = host_task(&self);
  c.completion = {[](void* context, const CopyOutcome& o) {
                    auto* b = static_cast<Both*>(context);
                    record(b->r, o);
                    b->g->open();
                  },
                  &both};
  c.task.run = [](void* context) { return static_cast<Both*>(context)->r->task(); };
  (void)submit(c);
  (void)submit(host_task(&behind));
  queued.open();
  ASSERT_TRUE(done.wait()) << "the task's completion never ran";
  queue_ = QueueId{};
  EXPECT_EQ(self.calls.load(), 1);
  EXPECT_EQ(self.result.load(), 0);
  // `behind` was cancelled by the destroy, from the task's thread, before the completion above.
  EXPECT_EQ(behind.calls.load(), 1);
  EXPECT_EQ(behind.outcome.result.condition(), Condition::kCancelled);
}

// C49: cancel() (aclrtStreamAbort's device half). On an idle queue it changes nothing. Behind a
// blocked host task: every queued command completes once with kCancelled, on the cancelling
// thread, and never runs (no byte lands, no task body runs); the cancelled fences pass with the
// running task, not before it (completed() stays 0 while it runs); cancel returns only after the
// task finished, with every fence given before the call passed; a command submitted meanwhile and
// commands submitted afterwards run as usual.
TEST_P(QueueConformance, C49_CancelDropsWhatHadNotStartedAndWaitsForTheRunningCommand) {
  make_queue();
  // Idle: nothing to drop, no fence moves, the queue goes on.
  be().copy_engine().cancel(queue_);
  EXPECT_EQ(be().copy_engine().completed(queue_), 0u);
  Record first;
  first.task = [] { return Result::success(); };
  EXPECT_EQ(submit(host_task(&first)), 1u);
  wait(1);
  be().copy_engine().cancel(queue_);
  EXPECT_EQ(be().copy_engine().completed(queue_), 1u);
  EXPECT_EQ(first.calls.load(), 1);

  Gate started, release;
  std::atomic<bool> blocker_done{false};
  Record blocker;
  blocker.task = [&] {
    started.open();
    const bool released = release.wait();
    blocker_done.store(true);
    return released ? Result::success() : Result::from_errno(ETIMEDOUT);
  };
  constexpr int kBehind = 8;
  Record behind[kBehind];
  std::atomic<int> ran{0};
  std::vector<uint8_t> buf(4096, 0xab);
  EXPECT_EQ(submit(host_task(&blocker)), 2u);
  Fence last = 0;
  for (int i = 0; i < kBehind; ++i) {
    if (i % 2 == 0) {
      last = submit(copy(mapped(va_ + i * 4096), host(buf.data()), buf.size(), &behind[i]));
    } else {
      behind[i].task = [&] {
        ran.fetch_add(1);
        return Result::success();
      };
      last = submit(host_task(&behind[i]));
    }
  }
  EXPECT_EQ(last, 2u + kBehind);
  ASSERT_TRUE(started.wait());

  std::atomic<bool> returned{false};
  std::atomic<bool> blocker_done_at_return{false};
  std::atomic<Fence> completed_at_return{0};
  std::thread canceller([&] {
    be().copy_engine().cancel(queue_);
    blocker_done_at_return.store(blocker_done.load());
    completed_at_return.store(be().copy_engine().completed(queue_));
    returned.store(true);
  });
  // Within 10 s (a backend that drops nothing fails here rather than after a minute).
  for (int spins = 0; spins < 100000; ++spins) {
    int cancelled = 0;
    for (Record& r : behind) cancelled += r.calls.load();
    if (cancelled == kBehind) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (int i = 0; i < kBehind; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(behind[i].calls.load(), 1);
    EXPECT_EQ(behind[i].outcome.result.condition(), Condition::kCancelled);
  }
  // The task still runs: its fence and the cancelled ones behind it have not passed.
  EXPECT_EQ(blocker.calls.load(), 0);
  EXPECT_EQ(be().copy_engine().completed(queue_), 1u) << "cancelled fences passed before the running command";
  EXPECT_EQ(be().copy_engine().wait(queue_, last, 10).condition(), Condition::kTimedOut);
  EXPECT_FALSE(returned.load()) << "cancel returned while the task still ran";
  // Submitted during the cancel, after the drop: runs as usual, after the task.
  Record meanwhile;
  meanwhile.task = [] { return Result::success(); };
  const Fence during = submit(host_task(&meanwhile));
  EXPECT_EQ(during, last + 1);
  release.open();
  canceller.join();
  EXPECT_TRUE(blocker_done_at_return.load()) << "cancel returned before the running task finished";
  EXPECT_GE(completed_at_return.load(), last) << "a fence given before the cancel had not passed";
  wait(during);
  EXPECT_EQ(blocker.calls.load(), 1);
  EXPECT_EQ(blocker.result.load(), 0);
  EXPECT_EQ(meanwhile.calls.load(), 1);
  EXPECT_EQ(meanwhile.result.load(), 0);
  // Exactly once, and never run.
  for (Record& r : behind) EXPECT_EQ(r.calls.load(), 1);
  EXPECT_EQ(ran.load(), 0);
  std::vector<uint8_t> bytes(kBehind * 4096, 0xff);
  ASSERT_TRUE(harness().read_physical(mem_, 0, bytes.data(), bytes.size()).ok());
  EXPECT_EQ(bytes, std::vector<uint8_t>(bytes.size(), 0)) << "a cancelled copy ran";
  // The queue goes on.
  Record after;
  const Fence f = submit(copy(mapped(va_), host(buf.data()), buf.size(), &after));
  EXPECT_EQ(f, during + 1);
  wait(f);
  EXPECT_EQ(after.calls.load(), 1);
  EXPECT_EQ(after.result.load(), 0);
  ASSERT_TRUE(harness().read_physical(mem_, 0, bytes.data(), 4096).ok());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4096), buf);
  EXPECT_EQ(be().copy_engine().completed(queue_), f);
}

// C49 (own task): a host task cancels its own queue: the commands behind it complete once with
// kCancelled before cancel returns, never run, and cancel does not wait for the task itself; the
// fences pass when the task returns, and the queue goes on.
TEST_P(QueueConformance, C49_CancelFromTheQueuesOwnTaskDropsTheOthersWithoutDeadlock) {
  make_queue();
  Gate queued;
  constexpr int kBehind = 4;
  Record self, behind[kBehind];
  std::atomic<int> ran{0}, seen_cancelled{-1};
  std::atomic<bool> returned_in_task{false};
  for (Record& r : behind) {
    r.task = [&] {
      ran.fetch_add(1);
      return Result::success();
    };
  }
  self.task = [&] {
    if (!queued.wait()) return Result::from_errno(ETIMEDOUT);
    be().copy_engine().cancel(queue_);
    returned_in_task.store(true);
    int cancelled = 0;
    for (Record& r : behind) cancelled += r.calls.load();
    seen_cancelled.store(cancelled);
    return Result::success();
  };
  EXPECT_EQ(submit(host_task(&self)), 1u);
  Fence last = 0;
  for (Record& r : behind) last = submit(host_task(&r));
  queued.open();
  ASSERT_TRUE(be().copy_engine().wait(queue_, last, 60000).ok()) << "the fences never passed";
  EXPECT_TRUE(returned_in_task.load());
  EXPECT_EQ(seen_cancelled.load(), kBehind) << "cancel returned before completing the dropped commands";
  EXPECT_EQ(self.calls.load(), 1);
  EXPECT_EQ(self.result.load(), 0);
  for (Record& r : behind) {
    EXPECT_EQ(r.calls.load(), 1);
    EXPECT_EQ(r.outcome.result.condition(), Condition::kCancelled);
  }
  EXPECT_EQ(ran.load(), 0);
  Record after;
  after.task = [] { return Result::success(); };
  const Fence f = submit(host_task(&after));
  EXPECT_EQ(f, last + 1);
  wait(f);
  EXPECT_EQ(after.calls.load(), 1);
  EXPECT_EQ(be().copy_engine().completed(queue_), f);
}

ACLVMM_CONFORMANCE_SUITE(QueueConformance);

}  // namespace
}  // namespace aclvmm::conformance
