// A child about to touch memory that may fault: SIGSEGV and SIGBUS get their default action, so
// the fault kills the child with that signal, and core dumps are off so the expected crash leaves
// no core file. Sanitizers install their own handlers (ASan reports and exits instead) and
// intercept sigaction(), hence the raw system call.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace aclvmm::testing {

inline void reset_fault_signals_for_child() {
  struct KernelSigaction {  // the kernel's struct sigaction; everything but the handler stays 0
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } sa{};
  sa.handler = SIG_DFL;
  for (int sig : {SIGSEGV, SIGBUS}) syscall(SYS_rt_sigaction, sig, &sa, nullptr, sizeof sa.mask);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
}

}  // namespace aclvmm::testing
