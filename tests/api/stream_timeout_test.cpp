// aclrtSynchronizeDeviceWithTimeout and aclrtSynchronizeStreamWithTimeout (runtime-extra.md §1):
// the checks in the spec's order with their exact codes (a table each), success on idle streams,
// a timeout that expires (507046) while an emulated kernel holds the stream, work that goes on
// after it (nothing is cancelled, its bytes land), and a failed task's code reported as
// aclrtSynchronizeDevice / aclrtSynchronizeStream report it.
//
// Every kernel here waits on a flag the test owns; none relies on timing to pass (a hold gives up
// after a few seconds only so that a broken implementation fails instead of hanging).
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/hold_then_write.h"
#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

constexpr aclError kTimeoutExpired = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;  // 507046

// A kernel that writes 64 bytes into `*p` (a device address), which fails when it is unmapped.
void timeout_write_kernel(aclvmmKernelContext* ctx, void* p) {
  const char buf[64] = {7};
  (void)aclvmmKernelWrite(ctx, p, buf, sizeof buf);
}

bool timeout_wait_started(const HoldThenWrite& h) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!h.started.load()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// `call` on a new thread, which has no current context.
aclError timeout_on_bare_thread(const std::function<aclError()>& call) {
  aclError rc = -1;
  std::thread([&] { rc = call(); }).join();
  return rc;
}

int64_t timeout_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
      .count();
}

// AllocTest plus streams, an unmapped reservation and kernel holds, all released at TearDown (the
// holds first, so that no stream is left waiting for a flag).
class StreamTimeoutTest : public AllocTest {
 protected:
  void TearDown() override {
    for (HoldThenWrite& h : holds_) h.release.store(true);
    for (aclrtStream s : streams_) EXPECT_EQ(aclrtDestroyStream(s), kOk);
    if (hole_ != nullptr) {
      EXPECT_EQ(aclrtReleaseMemAddress(hole_), kOk);
    }
    AllocTest::TearDown();
  }
  aclrtStream make_stream() {
    aclrtStream s = nullptr;
    EXPECT_EQ(aclrtCreateStream(&s), kOk);
    if (s != nullptr) streams_.push_back(s);
    return s;
  }
  // A reserved range with nothing mapped: every device access to it fails (507899).
  char* hole() {
    if (hole_ == nullptr) hole_ = reserve(k2M);
    return static_cast<char*>(hole_);
  }
  HoldThenWrite& hold(size_t i) { return holds_[i]; }

 private:
  std::vector<aclrtStream> streams_;
  void* hole_ = nullptr;
  HoldThenWrite holds_[3];
};

using StreamTimeoutThread = StreamTimeoutTest;

struct TimeoutMisuseRow {
  const char* name;
  std::function<aclError()> call;
  aclError want;
};

// ---------------------------------------------------------------------------------------------
// aclrtSynchronizeDeviceWithTimeout

// §1 checks in order: timeout < -1 → 107000 (ACL layer), 0 → 107000, no context → 107002. The
// rows on a thread without a context show that both timeout checks come before the context one.
TEST_F(StreamTimeoutTest, DeviceChecksInOrder) {
  (void)make_stream();  // an idle stream besides the default one
  const TimeoutMisuseRow rows[] = {
      {"-2", [] { return aclrtSynchronizeDeviceWithTimeout(-2); }, kRtParam},
      {"INT32_MIN", [] { return aclrtSynchronizeDeviceWithTimeout(INT32_MIN); }, kRtParam},
      {"-2 without a context",
       [] { return timeout_on_bare_thread([] { return aclrtSynchronizeDeviceWithTimeout(-2); }); },
       kRtParam},
      {"0", [] { return aclrtSynchronizeDeviceWithTimeout(0); }, kRtParam},
      {"0 without a context",
       [] { return timeout_on_bare_thread([] { return aclrtSynchronizeDeviceWithTimeout(0); }); },
       kRtParam},
      {"-1 without a context",
       [] { return timeout_on_bare_thread([] { return aclrtSynchronizeDeviceWithTimeout(-1); }); },
       kNoContext},
      {"100 without a context",
       [] { return timeout_on_bare_thread([] { return aclrtSynchronizeDeviceWithTimeout(100); }); },
       kNoContext},
  };
  for (const TimeoutMisuseRow& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.call(), r.want);
  }
}

// -1 waits for ever, a positive timeout bounds the wait: both return 0 on idle streams (the
// default one and a created one, with work that finished).
TEST_F(StreamTimeoutTest, DeviceSucceedsOnIdleStreams) {
  char* d = dev(4096);
  aclrtStream s = make_stream();
  ASSERT_EQ(aclrtMemsetAsync(d, 4096, 0x31, 4096, s), kOk);
  // Two streams are not ordered with each other: the second fill is queued once the first is done.
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  ASSERT_EQ(aclrtMemsetAsync(d, 4096, 0x32, 64, nullptr), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  for (int32_t timeout : {-1, 1, 3000, INT32_MAX}) {
    SCOPED_TRACE(timeout);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(timeout), kOk);
  }
  // Work queued before the call has finished when it returns 0.
  ASSERT_EQ(aclrtMemsetAsync(d + 64, 4096 - 64, 0x33, 64, s), kOk);
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(3000), kOk);
  std::string want(4096, '\x31');
  want.replace(0, 64, std::string(64, '\x32'));
  want.replace(64, 64, std::string(64, '\x33'));
  EXPECT_EQ(get(d, 4096), want);
}

// A timeout that expires → 507046, not before the timeout; nothing is cancelled: the kernel
// keeps running and the work behind it runs too, so a later synchronisation returns 0 and their
// bytes land. On a created stream and on the default stream.
TEST_F(StreamTimeoutThread, DeviceTimeoutExpiresAndWorkGoesOn) {
  char* d = dev(2 * 4096);
  aclrtStream s = make_stream();
  const struct {
    const char* name;
    aclrtStream stream;
  } rows[] = {{"created stream", s}, {"default stream", nullptr}};
  size_t i = 0;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    ASSERT_EQ(aclrtMemset(d, 2 * 4096, 0, 2 * 4096), kOk);
    HoldThenWrite& h = hold(i++);
    h.dst = d;
    h.value = '\x6b';
    h.n = 4096;
    ASSERT_EQ(aclvmmLaunchKernel(r.stream, hold_then_write_kernel, &h), kOk);
    ASSERT_EQ(aclrtMemsetAsync(d + 4096, 4096, 0x6c, 4096, r.stream), kOk);
    ASSERT_TRUE(timeout_wait_started(h));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(50), kTimeoutExpired);
    EXPECT_GE(timeout_ms_since(t0), 50) << "507046 before the timeout";
    EXPECT_NE(recent_msg(), "");
    EXPECT_FALSE(h.finished.load());
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(1), kTimeoutExpired);  // still held
    h.release.store(true);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(10000), kOk);
    EXPECT_TRUE(h.finished.load());
    EXPECT_EQ(h.write_rc.load(), kOk);
    std::string want(4096, '\x6b');
    want += std::string(4096, '\x6c');
    EXPECT_EQ(get(d, 2 * 4096), want) << "the held kernel or the work behind it was cancelled";
  }
}

// Only the current device's streams are waited for: a stream of device 1 held by a kernel does
// not make device 0's synchronisation expire.
TEST_F(StreamTimeoutThread, DeviceWaitsOnlyForTheCurrentDevice) {
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), kOk);
  HoldThenWrite& h = hold(0);
  ASSERT_EQ(aclvmmLaunchKernel(other, hold_then_write_kernel, &h), kOk);
  ASSERT_TRUE(timeout_wait_started(h));
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(30), kTimeoutExpired);  // device 1: held
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  (void)make_stream();
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(30), kOk);
  h.release.store(true);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(10000), kOk);
  EXPECT_EQ(aclrtDestroyStream(other), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtResetDevice(1), kOk);
}

// A failed task makes the call return its code (507899), once, as aclrtSynchronizeDevice would.
TEST_F(StreamTimeoutTest, DeviceReportsAFailedTask) {
  char* d = dev(4096);
  char* hole = this->hole();
  aclrtStream s = make_stream();
  const struct {
    const char* name;
    std::function<aclError()> enqueue;
  } rows[] = {
      {"async copy into an unmapped range",
       [&] { return aclrtMemcpyAsync(hole, 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, s); }},
      {"async fill of an unmapped range on the default stream",
       [&] { return aclrtMemsetAsync(hole + 4096, 64, 1, 64, nullptr); }},
      {"kernel writing unmapped memory",
       [&] { return aclvmmLaunchKernel(s, timeout_write_kernel, hole + 8192); }},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    ASSERT_EQ(r.enqueue(), kOk);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(5000), kDrv);
    EXPECT_NE(recent_msg().find("507899"), std::string::npos);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(5000), kOk) << "reported more than once";
  }
}

// A timeout does not swallow a failure: a task of one stream failed, another stream is held when
// the timeout expires; the failure is reported by the next synchronisation once the hold ends.
// (The failing stream is created first, so a call that walks the streams in creation order
// meets it before the held one.)
TEST_F(StreamTimeoutThread, DeviceTimeoutKeepsAFailureForALaterCall) {
  char* d = dev(4096);
  aclrtStream failing = make_stream();
  aclrtStream held = make_stream();
  HoldThenWrite& h = hold(0);
  ASSERT_EQ(aclrtMemcpyAsync(hole(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, failing), kOk);
  ASSERT_EQ(aclvmmLaunchKernel(held, hold_then_write_kernel, &h), kOk);
  ASSERT_TRUE(timeout_wait_started(h));
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(30), kTimeoutExpired);
  h.release.store(true);
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(10000), kDrv) << "the failed copy was never reported";
  EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(10000), kOk);
}

// ---------------------------------------------------------------------------------------------
// aclrtSynchronizeStreamWithTimeout

// §1 checks in order: timeout < -1 → 107000 (even with a bad stream), a destroyed or forged
// stream → 107017 (even with timeout 0), timeout 0 → 107000 (even for NULL without a context),
// NULL without a context → 107002.
TEST_F(StreamTimeoutTest, StreamChecksInOrder) {
  aclrtStream s = make_stream();
  aclrtStream destroyed = nullptr;
  ASSERT_EQ(aclrtCreateStream(&destroyed), kOk);
  ASSERT_EQ(aclrtDestroyStream(destroyed), kOk);
  int forged_storage = 0;
  aclrtStream forged = &forged_storage;
  const TimeoutMisuseRow rows[] = {
      // 1. timeout < -1
      {"-2, forged stream", [&] { return aclrtSynchronizeStreamWithTimeout(forged, -2); }, kRtParam},
      {"INT32_MIN, destroyed stream",
       [&] { return aclrtSynchronizeStreamWithTimeout(destroyed, INT32_MIN); }, kRtParam},
      {"-2, live stream", [&] { return aclrtSynchronizeStreamWithTimeout(s, -2); }, kRtParam},
      {"-2, NULL without a context",
       [&] { return timeout_on_bare_thread([] { return aclrtSynchronizeStreamWithTimeout(nullptr, -2); }); },
       kRtParam},
      // 2. not a live stream
      {"destroyed stream, -1", [&] { return aclrtSynchronizeStreamWithTimeout(destroyed, -1); }, kBadHandle},
      {"forged stream, 100", [&] { return aclrtSynchronizeStreamWithTimeout(forged, 100); }, kBadHandle},
      {"forged stream, 0", [&] { return aclrtSynchronizeStreamWithTimeout(forged, 0); }, kBadHandle},
      {"destroyed stream, 0 without a context",
       [&] { return timeout_on_bare_thread([&] { return aclrtSynchronizeStreamWithTimeout(destroyed, 0); }); },
       kBadHandle},
      // 3. timeout 0
      {"live stream, 0", [&] { return aclrtSynchronizeStreamWithTimeout(s, 0); }, kRtParam},
      {"NULL, 0", [&] { return aclrtSynchronizeStreamWithTimeout(nullptr, 0); }, kRtParam},
      {"NULL, 0 without a context",
       [&] { return timeout_on_bare_thread([] { return aclrtSynchronizeStreamWithTimeout(nullptr, 0); }); },
       kRtParam},
      // 4. NULL without a context
      {"NULL, -1 without a context",
       [&] { return timeout_on_bare_thread([] { return aclrtSynchronizeStreamWithTimeout(nullptr, -1); }); },
       kNoContext},
      {"NULL, 100 without a context",
       [&] { return timeout_on_bare_thread([] { return aclrtSynchronizeStreamWithTimeout(nullptr, 100); }); },
       kNoContext},
      // and what succeeds
      {"live stream, -1", [&] { return aclrtSynchronizeStreamWithTimeout(s, -1); }, kOk},
      {"live stream, 1", [&] { return aclrtSynchronizeStreamWithTimeout(s, 1); }, kOk},
      {"live stream, INT32_MAX", [&] { return aclrtSynchronizeStreamWithTimeout(s, INT32_MAX); }, kOk},
      {"NULL, 1", [&] { return aclrtSynchronizeStreamWithTimeout(nullptr, 1); }, kOk},
  };
  for (const TimeoutMisuseRow& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.call(), r.want);
  }
}

// Timeout → 507046 (not before the timeout) and the work goes on; a failure that happened before
// it stays for the next call, which reports it once the stream is idle, and the one after is 0.
TEST_F(StreamTimeoutThread, StreamTimeoutExpiresAndTheFailureStays) {
  char* d = dev(4096);
  ASSERT_EQ(aclrtMemset(d, 4096, 0, 4096), kOk);
  aclrtStream s = make_stream();
  const struct {
    const char* name;
    aclrtStream stream;
  } rows[] = {{"created stream", s}, {"default stream", nullptr}};
  size_t i = 0;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    HoldThenWrite& h = hold(i++);
    h.dst = d;
    h.value = static_cast<char>('\x50' + i);
    h.n = 64;
    ASSERT_EQ(aclrtMemcpyAsync(hole(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, r.stream), kOk);
    ASSERT_EQ(aclvmmLaunchKernel(r.stream, hold_then_write_kernel, &h), kOk);
    ASSERT_EQ(aclrtMemsetAsync(d + 64, 4096 - 64, 0x5f, 64, r.stream), kOk);
    ASSERT_TRUE(timeout_wait_started(h));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 40), kTimeoutExpired);
    EXPECT_GE(timeout_ms_since(t0), 40) << "507046 before the timeout";
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 1), kTimeoutExpired);
    EXPECT_FALSE(h.finished.load());
    h.release.store(true);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 10000), kDrv)
        << "the failure before the timeout was lost";
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 10000), kOk);
    std::string want(64, h.value);
    want += std::string(64, '\x5f');
    EXPECT_EQ(get(d, 128), want) << "the work was cancelled by the timeout";
  }
}

// A failed task (async copy into an unmapped range, a kernel touching unmapped memory) → its code,
// reported once; the stream keeps working.
TEST_F(StreamTimeoutTest, StreamReportsAFailedTaskOnce) {
  char* d = dev(4096);
  char* host = pinned(64);
  aclrtStream s = make_stream();
  char* hole = this->hole();
  const struct {
    const char* name;
    aclrtStream stream;
    std::function<aclError(aclrtStream)> enqueue;
  } rows[] = {
      {"D2D into unmapped", s,
       [&](aclrtStream st) { return aclrtMemcpyAsync(hole, 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, st); }},
      {"kernel writing unmapped", s,
       [&](aclrtStream st) { return aclvmmLaunchKernel(st, timeout_write_kernel, hole + 4096); }},
      {"default stream: D2H from unmapped", nullptr,
       [&](aclrtStream st) { return aclrtMemcpyAsync(host, 64, hole, 64, ACL_MEMCPY_DEVICE_TO_HOST, st); }},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    ASSERT_EQ(r.enqueue(r.stream), kOk);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 5000), kDrv);
    EXPECT_NE(recent_msg().find("507899"), std::string::npos);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 5000), kOk) << "reported twice";
    ASSERT_EQ(aclrtMemsetAsync(d, 4096, 0x3e, 64, r.stream), kOk);
    ASSERT_EQ(aclrtMemcpyAsync(host, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST, r.stream), kOk);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(r.stream, 5000), kOk);
    EXPECT_EQ(std::string(host, 64), std::string(64, '\x3e'));
    std::memset(host, 0, 64);
  }
}

}  // namespace
