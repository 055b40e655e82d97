// Emulated kernels (any stream task) that call back into the runtime (docs/emulation.md,
// "Emulated kernels"): a call that would wait for stream work, or destroy and join the stream the
// task runs on, returns 107000 with a message naming that stream and changes nothing; everything
// else works from a task as from any thread, with the stream's context current. Before this was
// built such calls deadlocked (aclrtSynchronizeStream, aclrtDestroyStream on the task's stream) or
// aborted the process ("Resource deadlock avoided": aclFinalize, aclrtResetDevice).
//
// Each case runs in a child under a deadline, so a deadlock fails the case instead of the suite.
#include <cinttypes>
#include <cstdio>

#include "api/fork_test_util.h"
#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  return buf;
}

// A kernel that makes one call and keeps its code and the message left for aclGetRecentErrMsg.
struct CallArgs {
  std::function<aclError()> call;
  aclError rc = -1;
  std::string message;
};
void calling_kernel(aclvmmKernelContext*, void* raw) {
  auto* a = static_cast<CallArgs*>(raw);
  a->rc = a->call();
  a->message = recent_msg();
}

// The objects of one case: two streams of the primary context, and a stream of a second context.
struct Streams {
  aclrtContext primary = nullptr, second = nullptr;
  aclrtStream own = nullptr, other = nullptr, in_second = nullptr;
};

struct Refused {
  const char* name;
  bool on_second_context;  // the kernel runs on `in_second` instead of `own`
  std::function<aclError(const Streams&)> call;
};

const Refused kRefused[] = {
    {"aclrtSynchronizeStream (its own stream)", false,
     [](const Streams& s) { return aclrtSynchronizeStream(s.own); }},
    {"aclrtSynchronizeStream (another stream)", false,
     [](const Streams& s) { return aclrtSynchronizeStream(s.other); }},
    {"aclrtSynchronizeStream (NULL: the context's default stream)", false,
     [](const Streams&) { return aclrtSynchronizeStream(nullptr); }},
    {"aclrtSynchronizeDevice", false, [](const Streams&) { return aclrtSynchronizeDevice(); }},
    {"aclrtDestroyStream (its own stream)", false,
     [](const Streams& s) { return aclrtDestroyStream(s.own); }},
    {"aclrtDestroyStream (another stream)", false,
     [](const Streams& s) { return aclrtDestroyStream(s.other); }},
    {"aclrtDestroyStreamForce (its own stream)", false,
     [](const Streams& s) { return aclrtDestroyStreamForce(s.own); }},
    {"aclrtResetDevice (its device's last reference)", false,
     [](const Streams&) { return aclrtResetDevice(0); }},
    {"aclrtResetDeviceForce (its device)", false,
     [](const Streams&) { return aclrtResetDeviceForce(0); }},
    {"aclrtDestroyContext (its stream's context)", true,
     [](const Streams& s) { return aclrtDestroyContext(s.second); }},
    {"aclFinalize", false, [](const Streams&) { return aclFinalize(); }},
};

// One refused call from a kernel; then the process synchronises normally and finds everything as
// it was (both streams, the second context, one device reference, one aclInit reference).
int refused_case(const Refused& r) {
  CHILD_CHECK(aclInit(nullptr) == kOk, 1);
  CHILD_CHECK(aclrtSetDevice(0) == kOk, 2);
  Streams s;
  CHILD_CHECK(aclrtGetCurrentContext(&s.primary) == kOk, 3);
  CHILD_CHECK(aclrtCreateStream(&s.own) == kOk && aclrtCreateStream(&s.other) == kOk, 4);
  CHILD_CHECK(aclrtCreateContext(&s.second, 0) == kOk, 5);  // current now
  CHILD_CHECK(aclrtCreateStream(&s.in_second) == kOk, 6);
  CHILD_CHECK(aclrtSetCurrentContext(s.primary) == kOk, 7);

  aclrtStream runs_on = r.on_second_context ? s.in_second : s.own;
  CallArgs args;
  args.call = [&] { return r.call(s); };
  CHILD_CHECK(aclvmmLaunchKernel(runs_on, calling_kernel, &args) == kOk, 8);
  CHILD_CHECK(aclrtSynchronizeStream(runs_on) == kOk, 9);
  if (args.rc != kRtParam) {
    fprintf(stderr, "%s from a kernel returned %d\n", r.name, args.rc);
    return 10;
  }
  const bool names_stream = args.message.find("task running on stream " + hex(runs_on)) != std::string::npos;
  const bool says_why = args.message.find("wait for itself") != std::string::npos;
  if (!names_stream || !says_why) {
    fprintf(stderr, "%s: message \"%s\"\n", r.name, args.message.c_str());
    return 11;
  }

  // Nothing changed: every stream runs work, the context and the device reference are there.
  char host[64] = {0};
  for (aclrtStream st : {s.own, s.other, s.in_second}) {
    CHILD_CHECK(aclrtMemsetAsync(host, sizeof host, 7, sizeof host, st) == kOk, 12);
    CHILD_CHECK(aclrtSynchronizeStream(st) == kOk, 13);
  }
  CHILD_CHECK(aclrtSynchronizeDevice() == kOk, 14);
  CHILD_CHECK(aclrtSetCurrentContext(s.second) == kOk, 15);
  CHILD_CHECK(aclrtDestroyContext(s.second) == kOk, 16);
  CHILD_CHECK(aclrtSynchronizeStream(s.in_second) == kRtParam, 17);  // went with its context
  CHILD_CHECK(aclrtSetCurrentContext(s.primary) == kOk, 18);
  CHILD_CHECK(aclrtDestroyStream(s.own) == kOk && aclrtDestroyStream(s.other) == kOk, 19);
  CHILD_CHECK(aclrtResetDevice(0) == kOk, 20);
  int32_t device = -1;
  CHILD_CHECK(aclrtGetDevice(&device) == kNoContext, 21);  // that was the only reference
  CHILD_CHECK(aclFinalize() == kOk, 22);                      // and the only aclInit
  return 0;
}

TEST(StreamReentryThread, CallsThatWouldWaitForItselfAreRefused) {
  for (const Refused& r : kRefused) {
    SCOPED_TRACE(r.name);
    EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [&] { return refused_case(r); }));
  }
}

// What a kernel may do: queries, allocations, synchronous copies and memsets, more work on its own
// stream, on another stream and on its context's default stream, destroying another stream by
// force, dropping a device reference that is not the last.
struct Written {
  char* dst = nullptr;
  char value = 0;
};
void write_page_kernel(aclvmmKernelContext* ctx, void* raw) {
  auto* w = static_cast<Written*>(raw);
  const std::string bytes(4096, w->value);
  (void)aclvmmKernelWrite(ctx, w->dst, bytes.data(), bytes.size());
}

struct Allowed {
  aclrtStream own = nullptr, other = nullptr;
  char* a = nullptr;  // written by a kernel the kernel launches on its own stream
  char* b = nullptr;  // copied into on the other stream
  char* c = nullptr;  // set on the default stream
  Written second_kernel;
  std::string b_bytes = pattern(4096, 3);
  std::vector<aclError> rcs;
};
void allowed_kernel(aclvmmKernelContext*, void* raw) {
  auto* a = static_cast<Allowed*>(raw);
  auto& rcs = a->rcs;
  int32_t device = -1;
  rcs.push_back(aclrtGetDevice(&device));
  rcs.push_back(device == 0 ? kOk : -2);
  void* p = nullptr;
  rcs.push_back(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST));
  rcs.push_back(aclrtMemset(p, k2M, 0x31, k2M));
  char host[16] = {0};
  rcs.push_back(aclrtMemcpy(host, sizeof host, p, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
  rcs.push_back(all_bytes(std::string(host, sizeof host), 0x31) ? kOk : -3);
  rcs.push_back(aclrtFree(p));
  a->second_kernel = {a->a, 0x32};
  rcs.push_back(aclvmmLaunchKernel(a->own, write_page_kernel, &a->second_kernel));
  rcs.push_back(aclrtMemcpyAsync(a->b, 4096, a->b_bytes.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE,
                                 a->other));
  rcs.push_back(aclrtMemsetAsync(a->c, 4096, 0x33, 4096, nullptr));
  aclrtStream spare = nullptr;
  rcs.push_back(aclrtCreateStream(&spare));
  rcs.push_back(aclrtDestroyStreamForce(spare));
  rcs.push_back(aclrtResetDevice(0));  // the process holds two references
}

TEST(StreamReentryThread, KernelCallsThatDoNotWaitWork) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [] {
    CHILD_CHECK(aclrtSetDevice(0) == kOk && aclrtSetDevice(0) == kOk, 1);
    Allowed a;
    CHILD_CHECK(aclrtCreateStream(&a.own) == kOk && aclrtCreateStream(&a.other) == kOk, 2);
    for (char** p : {&a.a, &a.b, &a.c}) {
      CHILD_CHECK(aclrtMalloc(reinterpret_cast<void**>(p), k2M, ACL_MEM_MALLOC_HUGE_FIRST) == kOk, 3);
    }
    CHILD_CHECK(aclvmmLaunchKernel(a.own, allowed_kernel, &a) == kOk, 4);
    CHILD_CHECK(aclrtSynchronizeStream(a.own) == kOk, 5);  // both kernels
    CHILD_CHECK(aclrtSynchronizeStream(a.other) == kOk && aclrtSynchronizeStream(nullptr) == kOk, 6);
    for (size_t i = 0; i < a.rcs.size(); ++i) {
      if (a.rcs[i] != kOk) {
        fprintf(stderr, "call %zu from the kernel returned %d\n", i, a.rcs[i]);
        return 7;
      }
    }
    CHILD_CHECK(a.rcs.size() == 13, 8);
    CHILD_CHECK(all_bytes(get(a.a, 4096), 0x32), 9);
    CHILD_CHECK(get(a.b, 4096) == a.b_bytes, 10);
    CHILD_CHECK(all_bytes(get(a.c, 4096), 0x33), 11);
    CHILD_CHECK(aclrtDestroyStream(a.own) == kOk && aclrtDestroyStream(a.other) == kOk, 12);
    CHILD_CHECK(aclrtResetDevice(0) == kOk, 13);  // the last reference
    int32_t device = -1;
    CHILD_CHECK(aclrtGetDevice(&device) == kNoContext, 14);
    return 0;
  }));
}

// A kernel takes the runtime's lifetime lock (aclrtSetDevice) while another thread resets the
// device or finalises, which stops the kernel's stream: the stream is joined without that lock
// held, so both calls complete.
struct LateCall {
  HoldGate gate;
  aclError rc = -1;
};
void late_set_device_kernel(aclvmmKernelContext*, void* raw) {
  auto* l = static_cast<LateCall*>(raw);
  hold_kernel(nullptr, &l->gate);  // until the other thread is about to stop the stream
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // it is inside the call by now
  l->rc = aclrtSetDevice(0);
}

TEST(StreamReentryThread, KernelCallingBackWhileItsStreamIsStoppedCompletes) {
  for (const bool finalize : {false, true}) {
    SCOPED_TRACE(finalize ? "aclFinalize" : "aclrtResetDeviceForce");
    EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [finalize] {
      CHILD_CHECK(aclInit(nullptr) == kOk && aclrtSetDevice(0) == kOk, 1);
      aclrtStream s = nullptr;
      CHILD_CHECK(aclrtCreateStream(&s) == kOk, 2);
      LateCall late;
      CHILD_CHECK(aclvmmLaunchKernel(s, late_set_device_kernel, &late) == kOk, 3);
      CHILD_CHECK(wait_started(late.gate), 4);
      late.gate.open.store(1);
      CHILD_CHECK((finalize ? aclFinalize() : aclrtResetDeviceForce(0)) == kOk, 5);
      CHILD_CHECK(late.rc == kOk, 6);  // the kernel ran to its end
      CHILD_CHECK(aclrtSynchronizeStream(s) == kRtParam, 7);  // the stream went with the call
      return 0;
    }));
  }
}

// exit() from a kernel ends the process with that status: the exit-time teardown does not try to
// join the thread it runs on.
void exiting_kernel(aclvmmKernelContext*, void*) { std::exit(7); }

TEST(StreamReentryThread, ExitFromAKernelEndsTheProcess) {
  const TimedChildResult r = run_in_child_for(kForkDeadlineMs, [] {
    if (aclrtSetDevice(0) != kOk) return 1;
    aclrtStream s = nullptr;
    if (aclrtCreateStream(&s) != kOk) return 2;
    if (aclvmmLaunchKernel(s, exiting_kernel, nullptr) != kOk) return 3;
    // The process ends meanwhile. The exit handlers' teardown may end this synchronisation
    // first: this thread then waits too, so only the kernel's exit(7) can end the process (a
    // return here would race it with _exit, and a hang is the deadline's to catch).
    (void)aclrtSynchronizeStream(s);
    for (;;) pause();
  });
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.signal, 0) << "killed by a signal (an abort: the teardown joined its own thread)";
  EXPECT_EQ(r.exit_code, 7);
}

}  // namespace
}  // namespace aclvmm_test
