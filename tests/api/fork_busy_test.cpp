// fork() while other threads of the parent are inside the runtime: one runs kernels and copies on a
// stream, another makes the CPU fault on managed pages that live on the device, a third reserves
// and releases address ranges (the region tree a restarting child reads). Every child ends
// or starts its own runtime within the deadline (no lock it needs is inherited taken, it never
// serves or waits for the parent's faults), and the parent's threads never notice the forks.
// (Not in the ThreadSanitizer stage: its runtime does not support threads in the child of a
// multi-threaded fork. Skipped under an AddressSanitizer runtime without a fork interceptor:
// fork_test_util.h says why.)
#include <sys/wait.h>

#include "api/fork_test_util.h"
#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

class ForkWhileBusy : public ManagedTest {};

struct KernelArgs {
  char* dev = nullptr;
  int value = 0;
};
void write_kernel(aclvmmKernelContext* ctx, void* raw) {
  auto* a = static_cast<KernelArgs*>(raw);
  const std::string bytes(4096, static_cast<char>(a->value));
  (void)aclvmmKernelWrite(ctx, a->dev, bytes.data(), bytes.size());
  std::this_thread::sleep_for(std::chrono::microseconds(200));  // stay inside the task a while
}

// A short life of a fresh process, in the child.
int child_life(bool restart, const char* parent_managed) {
  // The child's copy of the parent's managed page: its mapping is not tracked in the child, so
  // the read neither blocks nor reaches the parent's fault thread.
  volatile char c = parent_managed[100];
  (void)c;
  if (!restart) return 0;
  CHILD_CHECK(aclrtSetDevice(0) == kOk, 1);
  void* d = nullptr;
  CHILD_CHECK(aclrtMalloc(&d, k2M, ACL_MEM_MALLOC_HUGE_FIRST) == kOk, 2);
  aclrtStream s = nullptr;
  CHILD_CHECK(aclrtCreateStream(&s) == kOk, 3);
  CHILD_CHECK(aclrtMemsetAsync(d, k2M, 0x44, k2M, s) == kOk, 4);
  CHILD_CHECK(aclrtSynchronizeStream(s) == kOk, 5);
  CHILD_CHECK(all_bytes(get(d, 4096), 0x44), 6);
  void* m = nullptr;
  CHILD_CHECK(aclrtMemAllocManaged(&m, k2M, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 7);
  CHILD_CHECK(aclrtMemset(m, k2M, 0x45, k2M) == kOk, 8);
  CHILD_CHECK(static_cast<volatile char*>(m)[5] == 0x45, 9);
  CHILD_CHECK(aclrtFree(m) == kOk && aclrtFree(d) == kOk, 10);
  CHILD_CHECK(aclrtDestroyStream(s) == kOk, 11);
  CHILD_CHECK(aclFinalize() == 100037, 12);  // the child never called aclInit
  return 0;
}

TEST_F(ForkWhileBusy, ChildrenEndOrRestartWhileStreamsAndFaultsRun) {
  SKIP_IF_SANITIZER_FORK_MAY_HANG();
  char* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(reinterpret_cast<void**>(&dev), k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  char* m = managed(k2M);
  std::atomic<bool> stop{false};
  std::atomic<int> stream_errors{0}, fault_errors{0}, reserve_errors{0}, kernels{0}, faults{0};

  std::thread streamer([&] {
    if (aclrtSetDevice(0) != kOk) return void(++stream_errors);
    aclrtStream s = nullptr;
    if (aclrtCreateStream(&s) != kOk) return void(++stream_errors);
    KernelArgs args[8];
    for (int round = 0; !stop.load(); ++round) {
      for (int i = 0; i < 8; ++i) {
        args[i] = {dev, (round * 8 + i) & 0x7f};
        if (aclvmmLaunchKernel(s, write_kernel, &args[i]) != kOk) ++stream_errors;
      }
      if (aclrtSynchronizeStream(s) != kOk) ++stream_errors;
      if (get(dev, 4096) != std::string(4096, static_cast<char>(args[7].value))) ++stream_errors;
      kernels += 8;
    }
    if (aclrtDestroyStream(s) != kOk) ++stream_errors;
  });
  std::thread faulter([&] {
    if (aclrtSetDevice(0) != kOk) return void(++fault_errors);
    for (int i = 1; !stop.load(); ++i) {
      const char v = static_cast<char>(i & 0x7f);
      if (aclrtMemset(m, k2M, v, k2M) != kOk) ++fault_errors;  // the page goes to the device
      if (static_cast<volatile char*>(m)[k2M - 1] != v) ++fault_errors;  // and faults back
      ++faults;
    }
  });

  std::thread reserver([&] {
    while (!stop.load()) {
      void* va = nullptr;
      if (aclrtReserveMemAddress(&va, 4 * k2M, 0, nullptr, 0) != kOk) ++reserve_errors;
      if (aclrtReleaseMemAddress(va) != kOk) ++reserve_errors;
    }
  });
  // The threads are under way before the first fork.
  EXPECT_TRUE(wait_until([&] { return kernels.load() > 0 && faults.load() > 0; }));
  constexpr int kForks = 16;
  for (int i = 0; i < kForks; ++i) {
    SCOPED_TRACE(i);
    EXPECT_CHILD_DONE_OK(run_child_exiting([&] { return child_life(i % 2 == 1, m); }));
  }
  stop.store(true);
  streamer.join();
  faulter.join();
  reserver.join();
  EXPECT_EQ(stream_errors.load(), 0);
  EXPECT_EQ(reserve_errors.load(), 0);
  EXPECT_EQ(fault_errors.load(), 0);
  EXPECT_EQ(aclrtFree(m), kOk);
  EXPECT_EQ(aclrtFree(dev), kOk);
}

// Other threads hold the library's process-wide locks all the time: one starts and finalises the
// runtime over and over (each start logs an INFO line: the log's locks, its sink's and the clock's;
// and reloads the injection rules), one reads the injection rules. A child forked at any moment
// logs and reads the rules itself without hanging. (Calls that fail also stamp their error message with
// the local time: docs/architecture.md, "fork", says what that needs.)
TEST(ForkWhileLogging, ChildrenLogAndReadInjectionRulesWhileTheParentDoes) {
  SKIP_IF_SANITIZER_FORK_MAY_HANG();
  ScopedEnv level("ASCEND_GLOBAL_LOG_LEVEL", "1");
  std::atomic<bool> stop{false};
  std::atomic<int> cycles{0}, reads{0}, errors{0};
  std::thread cycler([&] {
    for (; !stop.load(); ++cycles) {
      if (aclInit(nullptr) != kOk || aclFinalize() != kOk) ++errors;
    }
  });
  std::thread reader([&] {
    for (; !stop.load(); ++reads) (void)aclvmmFaultRemaining("aclrtGetDevice");
  });
  EXPECT_TRUE(wait_until([&] { return cycles.load() > 0 && reads.load() > 0; }));
  constexpr int kForks = 40;
  for (int i = 0; i < kForks; ++i) {
    SCOPED_TRACE(i);
    EXPECT_CHILD_DONE_OK(run_child_exiting([] {
      CHILD_CHECK(aclInit(nullptr) == kOk, 1);  // logs "started"
      CHILD_CHECK(aclvmmFaultRemaining("aclrtGetDevice") == 0, 2);
      CHILD_CHECK(aclFinalize() == kOk, 3);
      return 0;
    }));
  }
  stop.store(true);
  cycler.join();
  reader.join();
  EXPECT_EQ(errors.load(), 0);
}

// Failing calls stamp their aclGetRecentErrMsg text with the local time; glibc's localtime_r takes
// a lock fork does not reset, so a child forked while a parent thread was inside it hung in its own
// first failing call (1 or 2 of these 400 children per run) until the stamp went through
// log::local_time, whose lock is held across fork.
TEST(ForkWhileLogging, ChildrenFailCallsWhileTheParentDoes) {
  SKIP_IF_SANITIZER_FORK_MAY_HANG();
  void* const bogus = reinterpret_cast<void*>(0x1234);
  ASSERT_NE(aclrtFree(bogus), kOk);  // the runtime is started before the threads race
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> failers;
  for (int t = 0; t < 3; ++t) {
    failers.emplace_back([&] {
      for (; !stop.load(); ++failures) (void)aclrtFree(bogus);
    });
  }
  EXPECT_TRUE(wait_until([&] { return failures.load() > 100; }));
  constexpr int kForks = 400;
  for (int i = 0; i < kForks; ++i) {
    SCOPED_TRACE(i);
    EXPECT_CHILD_DONE_OK(run_child_exiting([bogus] {
      CHILD_CHECK(aclrtFree(bogus) != kOk, 1);
      CHILD_CHECK(aclGetRecentErrMsg() != nullptr, 2);
      return 0;
    }));
  }
  stop.store(true);
  for (std::thread& t : failers) t.join();
}

}  // namespace
}  // namespace aclvmm_test
