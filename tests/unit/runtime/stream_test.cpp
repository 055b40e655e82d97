// Unit tests of Stream: ordered execution, first-error reporting, abort, workers, concurrent
// submission, calls from a task.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "runtime/stream.h"
#include "unit/testing/one_shot_gate.h"
#include "unit/testing/test_device.h"

namespace aclvmm {
namespace {

using Gate = testing::OneShotGate;

// The device backend whose queues the streams run on (emu, 8 devices), one for the whole file.
const std::shared_ptr<dev::DeviceBackend>& backend() {
  static const std::shared_ptr<dev::DeviceBackend> be = testing::open_test_device();
  return be;
}

// A stream with its worker running (creation only fails without threads or memory).
std::shared_ptr<Stream> make_stream(int device, uint64_t context) {
  auto s = Stream::create(backend(), device, context, nullptr);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : nullptr;
}

int threads_of_this_process() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(Stream, KeepsDeviceAndContext) {
  auto s = make_stream(3, 0xabcdef);
  EXPECT_EQ(s->device(), 3);
  EXPECT_EQ(s->context(), 0xabcdefu);
}

TEST(Stream, TasksRunInSubmissionOrder) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  std::mutex mu;
  std::vector<int> seq;
  constexpr int kTasks = 500;
  for (int i = 0; i < kTasks; ++i) {
    s.enqueue([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      seq.push_back(i);
      return Status::Ok();
    });
  }
  ASSERT_TRUE(s.synchronize().ok());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seq.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(seq[i], i);
}

TEST(Stream, SynchronizeWaitsForTheRunningTask) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  std::atomic<bool> done{false};
  s.enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
    return Status::Ok();
  });
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_TRUE(done.load());
}

TEST(Stream, SynchronizeOnAnIdleStreamIsOk) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  EXPECT_TRUE(s.synchronize().ok());
  EXPECT_TRUE(s.synchronize().ok());
}

TEST(Stream, SynchronizeReturnsTheFirstErrorAndClearsIt) {
  auto ps = make_stream(1, 2);
  Stream& s = *ps;
  std::vector<int> seq;
  std::mutex mu;
  auto record = [&](int i) {
    std::lock_guard<std::mutex> lock(mu);
    seq.push_back(i);
  };
  s.enqueue([&] { record(0); return Status::Ok(); });
  s.enqueue([&] { record(1); return Error(507899, "first"); });
  s.enqueue([&] { record(2); return Status::Ok(); });
  s.enqueue([&] { record(3); return Error(107000, "second"); });
  s.enqueue([&] { record(4); return Status::Ok(); });
  Status st = s.synchronize();
  EXPECT_EQ(st.code(), 507899);
  EXPECT_EQ(st.message(), "first");
  {
    std::lock_guard<std::mutex> lock(mu);
    // A failure does not stop the stream: later work still ran, in order.
    EXPECT_EQ(seq, (std::vector<int>{0, 1, 2, 3, 4}));
  }
  // Reported once.
  Status again = s.synchronize();
  EXPECT_TRUE(again.ok()) << again.code() << " " << again.message();

  // A new error after the clear is reported by the next synchronisation.
  s.enqueue([] { return Error(207001, "third"); });
  s.enqueue([] { return Error(100000, "fourth"); });
  st = s.synchronize();
  EXPECT_EQ(st.code(), 207001);
  EXPECT_EQ(st.message(), "third");
  EXPECT_TRUE(s.synchronize().ok());
}

TEST(Stream, AbortDropsPendingTasks) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  Gate started, release;
  std::atomic<int> first_done{0};
  std::atomic<int> later{0};
  s.enqueue([&] {
    started.open();
    release.wait();
    first_done = 1;
    return Status::Ok();
  });
  constexpr int kPending = 100;
  for (int i = 0; i < kPending; ++i) {
    s.enqueue([&] {
      ++later;
      return Status::Ok();
    });
  }
  started.wait();  // the first task is running and blocks; the rest are queued
  std::thread aborter([&] { s.abort(); });
  // abort() drops the queue and then waits for the running task: give it time to drop first.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.open();
  aborter.join();
  EXPECT_EQ(first_done.load(), 1);  // the running task completes
  EXPECT_EQ(later.load(), 0);       // nothing that had not started runs
  EXPECT_TRUE(s.synchronize().ok());  // nothing left to wait for
  EXPECT_EQ(later.load(), 0);
}

TEST(Stream, AbortOfAnIdleStreamReturnsAndIsRepeatable) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  s.abort();
  s.abort();
  EXPECT_TRUE(s.synchronize().ok());
}

TEST(Stream, DestroyWithQueuedWorkDoesNotRunIt) {
  std::atomic<int> later{0};
  Gate started, release;
  std::shared_ptr<Stream> s = make_stream(0, 1);
  s->enqueue([&] {
    started.open();
    release.wait();
    return Status::Ok();
  });
  for (int i = 0; i < 10; ++i) {
    s->enqueue([&] {
      ++later;
      return Status::Ok();
    });
  }
  started.wait();
  std::thread destroyer([&] { s.reset(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.open();
  destroyer.join();
  EXPECT_EQ(later.load(), 0);
}

// The worker starts with the stream (so creation can report 207008) and ends with it.
TEST(StreamThread, EveryStreamHasOneWorkerUntilItGoes) {
  make_stream(0, 0).reset();  // a sanitizer's own helper thread starts with the first thread
  const int before = threads_of_this_process();
  {
    std::vector<std::shared_ptr<Stream>> streams;
    for (int i = 0; i < 200; ++i) streams.push_back(make_stream(i % 8, i));
    EXPECT_EQ(threads_of_this_process(), before + 200);
    for (auto& s : streams) ASSERT_TRUE(s->synchronize().ok());
  }
  EXPECT_EQ(threads_of_this_process(), before);
}

TEST(Stream, IdleStreamsStillRunWorkLater) {
  std::vector<std::shared_ptr<Stream>> streams;
  for (int i = 0; i < 16; ++i) streams.push_back(make_stream(0, i));
  std::atomic<int> ran{0};
  for (int i = 0; i < 16; i += 4) {
    streams[i]->enqueue([&] {
      ++ran;
      return Status::Ok();
    });
  }
  for (auto& s : streams) ASSERT_TRUE(s->synchronize().ok());
  EXPECT_EQ(ran.load(), 4);
}

// The worker setup runs on the worker thread, before the first task.
TEST(StreamThread, WorkerSetupRunsOnTheWorkerFirst) {
  std::atomic<int> setups{0};
  std::thread::id setup_thread, task_thread;
  auto s = Stream::create(backend(), 0, 1, [&] {
    setup_thread = std::this_thread::get_id();
    ++setups;
  });
  ASSERT_TRUE(s.ok());
  (*s)->enqueue([&] {
    task_thread = std::this_thread::get_id();
    return Status::Ok();
  });
  ASSERT_TRUE((*s)->synchronize().ok());
  EXPECT_EQ(setups.load(), 1);
  EXPECT_EQ(setup_thread, task_thread);
  EXPECT_NE(task_thread, std::this_thread::get_id());
}

// From a task, running() names the task's stream and every synchronisation is refused at once
// (107000, naming the stream), its own and another's; elsewhere running() is null.
TEST(StreamThread, SynchronizeFromATaskIsRefusedNotDeadlocked) {
  auto a = make_stream(0, 1);
  auto b = make_stream(0, 2);
  a->set_token(0xa11);
  const Stream* seen = reinterpret_cast<const Stream*>(1);
  Status own, other;
  a->enqueue([&] {
    seen = Stream::running();
    own = a->synchronize();
    other = b->synchronize();
    return Status::Ok();
  });
  ASSERT_TRUE(a->synchronize().ok());
  EXPECT_EQ(seen, a.get());
  EXPECT_EQ(Stream::running(), nullptr);
  EXPECT_EQ(own.code(), 107000);
  EXPECT_EQ(other.code(), 107000);
  EXPECT_NE(own.message().find("task running on stream 0xa11"), std::string::npos) << own.message();
  EXPECT_NE(own.message().find("wait for itself"), std::string::npos) << own.message();
}

// A task may queue more work on its own stream: it runs after the task, in order.
TEST(StreamThread, ATaskQueuesWorkOnItsOwnStream) {
  auto s = make_stream(0, 1);
  std::vector<int> seq;
  s->enqueue([&] {
    seq.push_back(1);
    s->enqueue([&] {
      seq.push_back(3);
      return Status::Ok();
    });
    seq.push_back(2);
    return Status::Ok();
  });
  ASSERT_TRUE(s->synchronize().ok());
  EXPECT_EQ(seq, (std::vector<int>{1, 2, 3}));
}

TEST(StreamConcurrency, FourThreadsEnqueueToOneStream) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<int> last_seen(kThreads, -1);  // touched only by the stream's worker
  std::atomic<int> total{0};
  std::atomic<int> order_violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        s.enqueue([&, t, i] {
          // Each thread's tasks run in the order that thread submitted them.
          if (last_seen[t] != i - 1) ++order_violations;
          last_seen[t] = i;
          ++total;
          return Status::Ok();
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(total.load(), kThreads * kPerThread);
  EXPECT_EQ(order_violations.load(), 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(last_seen[t], kPerThread - 1);
}

TEST(StreamConcurrency, SynchronizeFromSeveralThreadsReportsTheErrorOnce) {
  auto ps = make_stream(0, 1);
  Stream& s = *ps;
  Gate release;
  s.enqueue([&] {
    release.wait();
    return Error(507899, "device fault");
  });
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Status st = s.synchronize();
      if (!st.ok()) {
        EXPECT_EQ(st.code(), 507899);
        ++errors;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.open();
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 1);
}

}  // namespace
}  // namespace aclvmm
