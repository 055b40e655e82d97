// aclrtStreamAbort (runtime-extra.md §2, §10): the checks in the spec's order with their exact
// codes (one table row per check, products switched with ACLVMM_SOC), and the effect on a stream
// whose kernel is running while work is queued behind it: the running kernel finishes (the call
// waits for it), the queued work never runs (its bytes never land, its counter stays, its failure
// is never reported), threads waiting in a synchronisation of the stream or of the device return
// 107023, and afterwards the stream is empty, has no pending error and runs new work.
//
// The kernels wait on flags the test owns. Where the test must know that another thread is
// blocked inside a call (a synchroniser waiting, the abort waiting for the running kernel), it
// reads the thread's state from /proc (sleeping in a futex) instead of sleeping.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/hold_then_write.h"
#include "api/test_env.h"
#include "api/test_util.h"
#include "unit/testing/product_families.h"

using namespace aclvmm_test;

namespace {

constexpr aclError kAborted = ACL_ERROR_RT_STREAM_ABORT;          // 107023
constexpr aclError kOtherContext = ACL_ERROR_RT_STREAM_CONTEXT;   // 107003

void abort_count_kernel(aclvmmKernelContext*, void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

// A kernel that writes 64 bytes at the device address `p` (fails when it is unmapped).
void abort_write_kernel(aclvmmKernelContext* ctx, void* p) {
  const char buf[64] = {9};
  (void)aclvmmKernelWrite(ctx, p, buf, sizeof buf);
}

template <typename Pred>
bool abort_poll(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

pid_t abort_gettid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Whether thread `tid` of this process sleeps in a futex wait (a condition variable or a mutex):
// its state is S and, where the kernel shows it, its wait channel is a futex one.
bool abort_thread_sleeps_in_futex(pid_t tid) {
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  std::ifstream stat(dir + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  if (line[paren + 2] != 'S') return false;
  std::ifstream wchan(dir + "/wchan");
  std::string channel;
  std::getline(wchan, channel);
  if (channel.empty() || channel == "0") return true;  // hidden: the state has to do
  return channel.find("futex") != std::string::npos;
}

// Until thread `tid` sleeps in a futex on two polls in a row (a short contended lock does not
// count), or `finished` is set (the call returned instead of blocking). False after 5 s.
bool abort_until_blocked(const std::atomic<pid_t>& tid, const std::atomic<bool>& finished) {
  if (!abort_poll([&] { return tid.load() != 0 || finished.load(); })) return false;
  int in_a_row = 0;
  return abort_poll([&] {
    if (finished.load()) return true;
    in_a_row = abort_thread_sleeps_in_futex(tid.load()) ? in_a_row + 1 : 0;
    if (in_a_row < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return in_a_row >= 2;
  });
}

// `call` on a new thread, which has no current context.
aclError abort_on_bare_thread(const std::function<aclError()>& call) {
  aclError rc = -1;
  std::thread([&] { rc = call(); }).join();
  return rc;
}

// A thread running `call` after aclrtSetDevice(0) (the device's default context, as the test's
// thread has), publishing its tid first and its result and `finished` when the call returns.
class AbortCaller {
 public:
  explicit AbortCaller(std::function<aclError()> call)
      : thread_([this, call = std::move(call)] {
          const aclError set = aclrtSetDevice(0);
          tid_.store(abort_gettid());
          rc_.store(set == kOk ? call() : set);
          finished_.store(true);
        }) {}
  ~AbortCaller() { join(); }
  AbortCaller(const AbortCaller&) = delete;
  AbortCaller& operator=(const AbortCaller&) = delete;
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  bool blocked() const { return abort_until_blocked(tid_, finished_); }
  bool finished() const { return finished_.load(); }
  aclError rc() const { return rc_.load(); }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> finished_{false};
  std::atomic<aclError> rc_{-1};
  std::thread thread_;
};

// AllocTest plus an unmapped reservation and kernel holds, released at TearDown (the holds
// first, so that no stream is left waiting for a flag).
class StreamAbortTest : public AllocTest {
 protected:
  void TearDown() override {
    for (HoldThenWrite& h : holds_) h.release.store(true);
    if (hole_ != nullptr) {
      EXPECT_EQ(aclrtReleaseMemAddress(hole_), kOk);
    }
    AllocTest::TearDown();
  }
  char* hole() {
    if (hole_ == nullptr) hole_ = reserve(k2M);
    return static_cast<char*>(hole_);
  }
  HoldThenWrite& hold(size_t i) { return holds_[i]; }

 private:
  void* hole_ = nullptr;
  HoldThenWrite holds_[2];
};

using StreamAbortThread = StreamAbortTest;

aclrtStream abort_new_stream() {
  aclrtStream s = nullptr;
  EXPECT_EQ(aclrtCreateStream(&s), kOk);
  return s;
}

// aclrtStreamAbort(s) on a stream made in a second context while the first one is current.
aclError abort_other_contexts_stream() {
  aclrtContext primary = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&primary), kOk);
  aclrtContext other = nullptr;
  EXPECT_EQ(aclrtCreateContext(&other, 0), kOk);  // current now
  aclrtStream s = abort_new_stream();
  EXPECT_EQ(aclrtSetCurrentContext(primary), kOk);
  const aclError rc = aclrtStreamAbort(s);
  EXPECT_EQ(aclrtDestroyContext(other), kOk);
  return rc;
}

struct AbortMisuseRow {
  const char* name;
  const char* soc;  // nullptr: the default product (A2)
  std::function<aclError()> call;
  aclError want;
};

// §2 checks in order, one row per check; the rows after the first of a check show that it comes
// before the later ones. Then the families: 950, A3, A2 abort an idle stream (0), EDGE, INF and
// TRAIN refuse (207000).
TEST_F(StreamAbortTest, ChecksInOrder) {
  int forged_storage = 0;
  aclrtStream forged = &forged_storage;
  const char* const kEdge = aclvmm::testing::kFamilySoc[3];
  const AbortMisuseRow rows[] = {
      // 2. not a live stream
      {"forged", nullptr, [&] { return aclrtStreamAbort(forged); }, kBadHandle},
      {"destroyed", nullptr,
       [] {
         aclrtStream s = abort_new_stream();
         EXPECT_EQ(aclrtDestroyStream(s), kOk);
         return aclrtStreamAbort(s);
       },
       kBadHandle},
      {"forged without a context", nullptr,
       [&] { return abort_on_bare_thread([&] { return aclrtStreamAbort(forged); }); }, kBadHandle},
      {"forged on EDGE", kEdge, [&] { return aclrtStreamAbort(forged); }, kBadHandle},
      // 3. NULL without a context
      {"NULL without a context", nullptr,
       [] { return abort_on_bare_thread([] { return aclrtStreamAbort(nullptr); }); }, kRtParam},
      {"NULL without a context on EDGE", kEdge,
       [] { return abort_on_bare_thread([] { return aclrtStreamAbort(nullptr); }); }, kRtParam},
      // 4. no context; another context's stream
      {"live stream without a context", nullptr,
       [] {
         aclrtStream s = abort_new_stream();
         const aclError rc = abort_on_bare_thread([&] { return aclrtStreamAbort(s); });
         EXPECT_EQ(aclrtDestroyStream(s), kOk);
         return rc;
       },
       kNoContext},
      {"live stream without a context on EDGE", kEdge,
       [] {
         aclrtStream s = abort_new_stream();
         const aclError rc = abort_on_bare_thread([&] { return aclrtStreamAbort(s); });
         EXPECT_EQ(aclrtDestroyStream(s), kOk);
         return rc;
       },
       kNoContext},
      {"another context's stream", nullptr, [] { return abort_other_contexts_stream(); }, kOtherContext},
      {"another context's stream on EDGE", kEdge, [] { return abort_other_contexts_stream(); }, kOtherContext},
  };
  for (const AbortMisuseRow& r : rows) {
    SCOPED_TRACE(r.name);
    if (r.soc == nullptr) {
      EXPECT_EQ(r.call(), r.want);
      continue;
    }
    ScopedEnvRuntime env("ACLVMM_SOC", r.soc);
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(r.call(), r.want);
  }
  // 5. the families (§10): an idle created stream and the default stream.
  const aclError want[] = {kOk, kOk, kOk, kNotSupported, kNotSupported, kNotSupported};
  size_t i = 0;
  for (const char* soc : aclvmm::testing::kFamilySoc) {
    SCOPED_TRACE(soc);
    ScopedEnvRuntime env("ACLVMM_SOC", soc);
    ASSERT_TRUE(env.ok());
    aclrtStream s = abort_new_stream();
    EXPECT_EQ(aclrtStreamAbort(s), want[i]);
    EXPECT_EQ(aclrtStreamAbort(nullptr), want[i]);
    EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
    EXPECT_EQ(aclrtDestroyStream(s), kOk);
    ++i;
  }
}

// An idle stream: 0, and it is still usable (the default stream and a created one).
TEST_F(StreamAbortTest, IdleStreamAbortsWithZeroAndStaysUsable) {
  char* d = dev(4096);
  aclrtStream s = abort_new_stream();
  for (aclrtStream st : {s, static_cast<aclrtStream>(nullptr)}) {
    SCOPED_TRACE(st == nullptr ? "default stream" : "created stream");
    EXPECT_EQ(aclrtStreamAbort(st), kOk);
    EXPECT_EQ(aclrtStreamAbort(st), kOk);
    ASSERT_EQ(aclrtMemsetAsync(d, 4096, st == nullptr ? 0x12 : 0x13, 4096, st), kOk);
    EXPECT_EQ(aclrtSynchronizeStream(st), kOk);
    EXPECT_EQ(get(d, 4096), std::string(4096, st == nullptr ? '\x12' : '\x13'));
  }
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
}

// A failure that already happened (the stream is idle with a pending error) is gone after the
// abort: the next synchronisation returns 0.
TEST_F(StreamAbortTest, APendingFailureIsDiscarded) {
  char* d = dev(4096);
  aclrtStream s = abort_new_stream();
  for (aclrtStream st : {s, static_cast<aclrtStream>(nullptr)}) {
    SCOPED_TRACE(st == nullptr ? "default stream" : "created stream");
    std::atomic<int> after{0};
    ASSERT_EQ(aclrtMemcpyAsync(hole(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, st), kOk);
    ASSERT_EQ(aclvmmLaunchKernel(st, abort_write_kernel, hole() + 4096), kOk);
    ASSERT_EQ(aclvmmLaunchKernel(st, abort_count_kernel, &after), kOk);
    ASSERT_TRUE(abort_poll([&] { return after.load() == 1; }));  // both failures happened
    EXPECT_EQ(aclrtStreamAbort(st), kOk);
    EXPECT_EQ(aclrtSynchronizeStream(st), kOk) << "the failure before the abort was reported";
  }
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
}

// The main case, on a created stream and on the default stream: a kernel runs, copies, fills,
// kernels and a failing copy are queued behind it; three threads wait (stream, stream with a
// timeout, device); another thread aborts. The abort waits for the kernel, the waiters return
// 107023, nothing queued runs, and the stream is then empty, error-free and usable.
TEST_F(StreamAbortThread, QueuedWorkIsDroppedTheRunningKernelFinishesWaitersGet107023) {
  constexpr size_t kSlot = 4096;
  constexpr int kQueued = 6;
  char* d = dev(4 * kSlot);
  char* host = pinned(kSlot);
  aclrtStream s = abort_new_stream();
  const struct {
    const char* name;
    aclrtStream stream;
  } rows[] = {{"created stream", s}, {"default stream", nullptr}};
  size_t row = 0;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    HoldThenWrite& k = hold(row++);
    ASSERT_EQ(aclrtMemset(d, 4 * kSlot, 0, 4 * kSlot), kOk);
    std::memset(host, 0x01, kSlot);
    k.dst = d;
    k.value = '\x21';
    k.n = kSlot;
    std::atomic<int> counter{0};
    ASSERT_EQ(aclvmmLaunchKernel(r.stream, hold_then_write_kernel, &k), kOk);
    for (int i = 0; i < kQueued; ++i) {
      ASSERT_EQ(aclrtMemsetAsync(d + kSlot, kSlot, 0x22 + i, kSlot, r.stream), kOk);
      ASSERT_EQ(aclvmmLaunchKernel(r.stream, abort_count_kernel, &counter), kOk);
      ASSERT_EQ(aclrtMemcpyAsync(d + 2 * kSlot, kSlot, host, kSlot, ACL_MEMCPY_HOST_TO_DEVICE, r.stream), kOk);
    }
    ASSERT_EQ(aclrtMemcpyAsync(hole(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, r.stream), kOk);  // would fail
    ASSERT_EQ(aclrtMemsetAsync(d + 3 * kSlot, kSlot, 0x2f, kSlot, r.stream), kOk);
    ASSERT_TRUE(abort_poll([&] { return k.started.load(); }));

    const aclrtStream st = r.stream;
    bool ok = true;
    {
      AbortCaller sync([st] { return aclrtSynchronizeStream(st); });
      AbortCaller timed([st] { return aclrtSynchronizeStreamWithTimeout(st, 60000); });
      AbortCaller device([] { return aclrtSynchronizeDevice(); });
      ok = sync.blocked() && timed.blocked() && device.blocked();
      EXPECT_TRUE(ok) << "a synchroniser did not block on the held stream";
      EXPECT_FALSE(sync.finished() || timed.finished() || device.finished());
      AbortCaller aborter([st] { return aclrtStreamAbort(st); });
      ok = aborter.blocked() && ok;
      EXPECT_TRUE(ok) << "the abort neither blocked nor returned";
      // The abort waits for the running kernel (a short pause gives a broken one the chance to
      // return early).
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_FALSE(aborter.finished()) << "the abort returned while the kernel still ran";
      EXPECT_FALSE(k.finished.load());
      k.release.store(true);
      aborter.join();
      sync.join();
      timed.join();
      device.join();
      EXPECT_EQ(aborter.rc(), kOk);
      EXPECT_EQ(sync.rc(), kAborted);
      EXPECT_EQ(timed.rc(), kAborted);
      EXPECT_EQ(device.rc(), kAborted);
    }
    // The running kernel finished and its bytes landed; nothing queued behind it ran.
    EXPECT_TRUE(k.finished.load());
    EXPECT_EQ(k.write_rc.load(), kOk);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a dropped task that runs late
    EXPECT_EQ(counter.load(), 0);
    std::string want(kSlot, '\x21');
    want += std::string(3 * kSlot, '\0');
    EXPECT_TRUE(get(d, 4 * kSlot) == want) << "queued work ran after the abort";
    // Empty (a 1 ms wait is enough), no pending error (the failing copy was dropped).
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(st, 1), kOk);
    EXPECT_EQ(aclrtSynchronizeStream(st), kOk);
    // New work runs.
    ASSERT_EQ(aclrtMemsetAsync(d + kSlot, kSlot, 0x44, kSlot, st), kOk);
    ASSERT_EQ(aclvmmLaunchKernel(st, abort_count_kernel, &counter), kOk);
    EXPECT_EQ(aclrtSynchronizeStream(st), kOk);
    EXPECT_EQ(counter.load(), 1);
    EXPECT_EQ(get(d + kSlot, kSlot), std::string(kSlot, '\x44'));
    if (!ok) break;
  }
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
}

// The abort of one stream leaves the others alone: a second stream's queued work runs.
TEST_F(StreamAbortThread, OtherStreamsAreNotAffected) {
  constexpr size_t kSlot = 4096;
  char* d = dev(2 * kSlot);
  ASSERT_EQ(aclrtMemset(d, 2 * kSlot, 0, 2 * kSlot), kOk);
  aclrtStream aborted = abort_new_stream();
  aclrtStream other = abort_new_stream();
  HoldThenWrite& k = hold(0);
  HoldThenWrite& k2 = hold(1);
  ASSERT_EQ(aclvmmLaunchKernel(aborted, hold_then_write_kernel, &k), kOk);
  ASSERT_EQ(aclrtMemsetAsync(d, kSlot, 0x61, kSlot, aborted), kOk);
  ASSERT_EQ(aclvmmLaunchKernel(other, hold_then_write_kernel, &k2), kOk);
  ASSERT_EQ(aclrtMemsetAsync(d + kSlot, kSlot, 0x62, kSlot, other), kOk);
  ASSERT_TRUE(abort_poll([&] { return k.started.load() && k2.started.load(); }));
  {
    AbortCaller aborter([aborted] { return aclrtStreamAbort(aborted); });
    EXPECT_TRUE(aborter.blocked());
    k.release.store(true);
    aborter.join();
    EXPECT_EQ(aborter.rc(), kOk);
  }
  k2.release.store(true);
  EXPECT_EQ(aclrtSynchronizeStream(other), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(aborted), kOk);
  std::string want(kSlot, '\0');
  want += std::string(kSlot, '\x62');
  EXPECT_EQ(get(d, 2 * kSlot), want);
  EXPECT_EQ(aclrtDestroyStream(aborted), kOk);
  EXPECT_EQ(aclrtDestroyStream(other), kOk);
}

}  // namespace
