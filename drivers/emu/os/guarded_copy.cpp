#include "drivers/emu/os/guarded_copy.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "drivers/emu/sanitizers.h"

namespace aclvmm::dev::emu::os {
namespace {

#if defined(ACLVMM_ASAN) || defined(ACLVMM_TSAN)
#define ACLVMM_GUARD_DISABLED 1
#endif

// One per thread; `active` is set only around the memcpy, so a fault seen while it is set can
// only come from that memcpy (the copy calls nothing else).
struct Guard {
  sigjmp_buf env;
  volatile sig_atomic_t active = 0;
};
thread_local Guard t_guard;

struct sigaction g_prev_segv, g_prev_bus;
std::mutex g_install_mu;
std::atomic<bool> g_installed{false};

void on_fault(int sig, siginfo_t* info, void* context) {
  Guard& g = t_guard;
  if (g.active) {
    g.active = 0;
    siglongjmp(g.env, 1);
  }
  const struct sigaction& prev = sig == SIGBUS ? g_prev_bus : g_prev_segv;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN) {
    // Not ours: restore what the process had and return, so the faulting instruction runs again
    // and gets the default action (a core dump), exactly as without this library.
    signal(sig, SIG_DFL);
    return;
  }
  prev.sa_handler(sig);
}

bool ours(int sig) {
  struct sigaction cur;
  return sigaction(sig, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
         cur.sa_sigaction == on_fault;
}

}  // namespace

bool guard_available() {
#if defined(ACLVMM_GUARD_DISABLED)
  return false;
#else
  if (!g_installed.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_install_mu);
    if (!g_installed.load(std::memory_order_relaxed)) {
      struct sigaction sa;
      std::memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = on_fault;
      // NODEFER: the jump out leaves the signal unblocked without a sigprocmask per copy.
      sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      if (sigaction(SIGSEGV, &sa, &g_prev_segv) != 0) return false;
      if (sigaction(SIGBUS, &sa, &g_prev_bus) != 0) {
        sigaction(SIGSEGV, &g_prev_segv, nullptr);
        return false;
      }
      g_installed.store(true, std::memory_order_release);
    }
  }
  // Someone may have installed a handler after ours: then theirs wins and we do not guard.
  return ours(SIGSEGV) && ours(SIGBUS);
#endif
}

int guarded_copy(void* dst, const void* src, size_t n) {
  // Without saving the signal mask: SA_NODEFER keeps it unchanged through the handler. Nothing
  // local lives across the jump (t_guard is reached afresh), so nothing can be clobbered.
  if (sigsetjmp(t_guard.env, 0) != 0) return -EFAULT;
  t_guard.active = 1;
  std::memmove(dst, src, n);
  t_guard.active = 0;
  return 0;
}

}  // namespace aclvmm::dev::emu::os
