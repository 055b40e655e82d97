// Helpers of the fork tests (fork_*_test.cpp, stream_reentry_test.cpp): children that end through
// exit() under a deadline, memory that both sides of a fork see, and a kernel that holds its
// stream until it is let go.
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <new>
#include <thread>

#include "api/hostile_util.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {

// Under an AddressSanitizer runtime without a fork() interceptor (fork_settle.h) a child forked
// while another thread is inside the sanitizer's malloc can wait for ever on a lock of that
// thread's, whatever the library does: a plain program (no library) whose three threads allocate
// strings while the main thread forks 3 000 children that allocate saw 14 of them hang (2 cores,
// under load). The tests that fork while their own threads allocate all the time skip there; the
// normal build runs them, and the other fork tests run under ASan, forking when the other
// threads sleep (settle_threads_before_fork).
#define SKIP_IF_SANITIZER_FORK_MAY_HANG()                                                    \
  do {                                                                                       \
    if (::aclvmm_test::sanitizer_fork_may_hang())                                            \
      GTEST_SKIP() << "this AddressSanitizer runtime does not intercept fork(): a child of " \
                      "threads that allocate may hang inside the sanitizer's malloc";        \
  } while (0)

// Children take milliseconds; a hang (what these tests look for) is killed at this deadline.
constexpr int kForkDeadlineMs = 30000;

// Runs fn in a child that ends through exit() with fn's result, so that atexit handlers and static
// destructors run as when main returns (run_in_child_for's _exit skips them).
inline TimedChildResult run_child_exiting(const std::function<int()>& fn) {
  return run_in_child_for(kForkDeadlineMs, [&] {
    std::exit(fn());
    return 0;
  });
}

// An object in shared anonymous memory: a forked child and its parent see the same one. Never
// unmapped (each test runs in its own process).
template <typename T>
T* shared_object() {
  void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) T();
}

// Polls `ready` until it holds; false when it still does not after `seconds`.
inline bool wait_until(const std::function<bool()>& ready, int seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A kernel argument: the kernel counts itself in `started` and returns once `open` is set (or after
// 20 s, so that a broken test cannot hang a stream for ever).
struct HoldGate {
  std::atomic<int> started{0};
  std::atomic<int> open{0};
};
inline void hold_kernel(aclvmmKernelContext*, void* raw) {
  auto* g = static_cast<HoldGate*>(raw);
  g->started.fetch_add(1);
  (void)wait_until([g] { return g->open.load() != 0; }, 20);
}
// True once `n` kernels have started (false after 10 s).
inline bool wait_started(const HoldGate& g, int n = 1) {
  return wait_until([&] { return g.started.load() >= n; });
}

}  // namespace aclvmm_test
