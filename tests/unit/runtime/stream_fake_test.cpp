// Stream over the fake backend's command queues (docs/device-interface.md §8, label `fake`): the
// stream makes one queue, runs its worker set-up and tasks on the queue's thread in submission
// order, turns each refusal of the queue (creation, submission, execution), injected at a chosen
// call, into its documented code with nothing left behind, and never calls the fake on a queue
// that is not live (the fake counts that as a violation, so a stream that submitted after its
// abort or destroyed its queue twice fails here).
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "drivers/injection_steps.h"
#include "runtime/stream.h"
#include "unit/testing/fake_device.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

class StreamFakeTest : public ::testing::Test {
 protected:
  ~StreamFakeTest() override { device_.expect_no_violations(); }

  StatusOr<std::shared_ptr<Stream>> create(std::function<void()> setup = nullptr) {
    return Stream::create(device_.device(), 1, 0x77, std::move(setup));
  }
  std::shared_ptr<Stream> make() {
    StatusOr<std::shared_ptr<Stream>> s = create();
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *s : nullptr;
  }
  // A task that appends `i` to order_.
  Stream::Task append(int i) {
    return [this, i] {
      std::lock_guard lock(mu_);
      order_.push_back(i);
      return Status::Ok();
    };
  }
  std::vector<int> order() {
    std::lock_guard lock(mu_);
    return order_;
  }

  testing::FakeDevice device_;
  std::mutex mu_;
  std::vector<int> order_;
};

TEST_F(StreamFakeTest, TasksRunInOrderOnTheQueuesThreadAfterTheWorkerSetUp) {
  std::thread::id setup_thread, task_thread;
  std::vector<std::string> events;
  StatusOr<std::shared_ptr<Stream>> made = create([&] {
    setup_thread = std::this_thread::get_id();
    events.push_back("setup");
  });
  ASSERT_TRUE(made.ok()) << made.status().message();
  Stream& s = **made;
  s.enqueue([&] {
    task_thread = std::this_thread::get_id();
    events.push_back("task");
    EXPECT_EQ(Stream::running(), &s) << "a task knows its stream";
    return Status::Ok();
  });
  for (int i = 0; i < 100; ++i) s.enqueue(append(i));
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(events, (std::vector<std::string>{"setup", "task"}));
  EXPECT_EQ(setup_thread, task_thread);
  EXPECT_NE(task_thread, std::this_thread::get_id());
  std::vector<int> want(100);
  for (int i = 0; i < 100; ++i) want[i] = i;
  EXPECT_EQ(order(), want);
  EXPECT_EQ(Stream::running(), nullptr) << "not on a stream's thread";
}

// A queue the fake refuses to make: 207001 without memory, 207008 otherwise; the stream that
// failed leaves no queue (its destruction calls the fake on none), and the next one works.
TEST_F(StreamFakeTest, ARefusedQueueIsTheStreamsCreationCode) {
  const struct {
    int code;
    int acl;
  } cases[] = {{ENOMEM, ACL_ERROR_RT_MEMORY_ALLOCATION}, {EAGAIN, ACL_ERROR_RT_NO_STREAM_RESOURCE},
               {EIO, ACL_ERROR_RT_NO_STREAM_RESOURCE}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    device_.recorder().arm(steps::kQueueCreate, 1, c.code);
    StatusOr<std::shared_ptr<Stream>> refused = create();
    EXPECT_EQ(refused.status().code(), c.acl) << refused.status().message();
    std::shared_ptr<Stream> ok = make();
    ASSERT_TRUE(ok);
    ok->enqueue(append(1));
    EXPECT_TRUE(ok->synchronize().ok());
  }
  EXPECT_EQ(order(), (std::vector<int>{1, 1, 1}));
}

// A task the queue refuses to take is the stream's error at the next synchronisation (the
// asynchronous call has returned), with the code for why; the tasks around it still run, and the
// error is reported once.
TEST_F(StreamFakeTest, ARefusedSubmissionIsReportedByTheNextSynchronize) {
  const struct {
    int code;
    int acl;
  } cases[] = {{ENOMEM, ACL_ERROR_RT_MEMORY_ALLOCATION}, {EIO, ACL_ERROR_RT_DRV_INTERNAL_ERROR}};
  std::shared_ptr<Stream> s = make();
  ASSERT_TRUE(s);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    order_.clear();
    device_.recorder().arm(steps::kQueueSubmit, 2, c.code);
    s->enqueue(append(1));
    s->enqueue(append(2));  // refused
    s->enqueue(append(3));
    const Status st = s->synchronize();
    EXPECT_EQ(st.code(), c.acl) << st.message();
    EXPECT_EQ(order(), (std::vector<int>{1, 3}));
    EXPECT_TRUE(s->synchronize().ok()) << "reported once";
  }
}

// A task the queue fails without running it (dev.queue.execute), and a task that fails: the first
// failure is the stream's, later ones are dropped, and the queue goes on.
TEST_F(StreamFakeTest, TheFirstFailureIsTheStreamsAndTheQueueGoesOn) {
  std::shared_ptr<Stream> s = make();
  ASSERT_TRUE(s);
  device_.recorder().arm(steps::kQueueExecute, 2, EIO);
  s->enqueue(append(1));
  s->enqueue(append(2));  // failed by the queue: never runs
  s->enqueue([] { return Error(ACL_ERROR_RT_PARAM_INVALID, "the second failure"); });
  s->enqueue(append(4));
  Status st = s->synchronize();
  EXPECT_EQ(st.code(), ACL_ERROR_RT_DRV_INTERNAL_ERROR) << st.message();
  EXPECT_NE(st.message().find("could not be executed"), std::string::npos) << st.message();
  EXPECT_EQ(order(), (std::vector<int>{1, 4}));
  s->enqueue([] { return Error(ACL_ERROR_RT_PARAM_INVALID, "a task's own failure"); });
  st = s->synchronize();
  EXPECT_EQ(st.code(), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(st.message(), "a task's own failure");
}

// After abort() the stream's queue is gone: later work is dropped without a call on the dead
// queue, synchronize() returns at once, and a second abort (the destructor's) does nothing.
TEST_F(StreamFakeTest, AnAbortedStreamNeverCallsItsDeadQueue) {
  std::shared_ptr<Stream> s = make();
  ASSERT_TRUE(s);
  s->enqueue(append(1));
  ASSERT_TRUE(s->synchronize().ok());
  s->abort();
  s->enqueue(append(2));
  EXPECT_TRUE(s->synchronize().ok());
  s->abort();
  s.reset();
  EXPECT_EQ(order(), (std::vector<int>{1}));
}

// A synchronize from a task refuses at once (it would wait for itself), naming the stream.
TEST_F(StreamFakeTest, ASynchronizeFromATaskIsRefused) {
  std::shared_ptr<Stream> s = make();
  ASSERT_TRUE(s);
  s->set_token(0xabc);
  Status inner;
  s->enqueue([&] {
    inner = s->synchronize();
    return Status::Ok();
  });
  ASSERT_TRUE(s->synchronize().ok());
  EXPECT_EQ(inner.code(), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(inner.message().find("0xabc"), std::string::npos) << inner.message();
}

}  // namespace
}  // namespace aclvmm
