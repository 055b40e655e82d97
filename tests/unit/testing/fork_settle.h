// Forking under an AddressSanitizer runtime that does not hold its allocator across fork().
//
// GCC 12's libasan (LLVM's before version 18) takes no lock of its own around fork: a child
// forked while another thread of the parent is inside the sanitizer's allocator or thread
// registry inherits that lock held, and waits for ever on its first malloc or thread of the same
// kind. The library cannot take those locks for it. The tests' children are forked only when
// every other thread of the parent sleeps (state S or D in /proc: waiting on a futex, a poll, a
// read), so that no thread is in the middle of such a section; the threads of the runtime are
// idle between calls, so this costs a few /proc reads. Tests whose own threads allocate all the
// time skip there instead (SKIP_IF_SANITIZER_FORK_MAY_HANG, fork_test_util.h).
#pragma once

#include <dirent.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace aclvmm_test {

// True when the process runs under an AddressSanitizer runtime without a fork() interceptor.
inline bool sanitizer_fork_may_hang() {
  return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr &&
         dlsym(RTLD_DEFAULT, "__interceptor_fork") == nullptr &&
         dlsym(RTLD_DEFAULT, "___interceptor_fork") == nullptr;
}

// True when no thread of this process but the caller is running or runnable (state R).
inline bool other_threads_sleep() {
  const long self = ::syscall(SYS_gettid);
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return true;
  bool asleep = true;
  while (dirent* e = ::readdir(tasks)) {
    const long tid = std::strtol(e->d_name, nullptr, 10);
    if (tid <= 0 || tid == self) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;  // it has just exited
    char stat[512];
    const size_t n = std::fread(stat, 1, sizeof stat - 1, f);
    std::fclose(f);
    stat[n] = '\0';
    const char* end_of_name = std::strrchr(stat, ')');  // the name may hold spaces and ')'
    if (end_of_name != nullptr && end_of_name[1] == ' ' && end_of_name[2] == 'R') {
      asleep = false;
      break;
    }
  }
  ::closedir(tasks);
  return asleep;
}

// Before a fork under such a runtime: waits until the other threads have slept for three
// samples a millisecond apart, for two seconds at most (then forks anyway).
inline void settle_threads_before_fork() {
  if (!sanitizer_fork_may_hang()) return;
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int quiet = 0; quiet < 3;) {
    quiet = other_threads_sleep() ? quiet + 1 : 0;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > 2000) return;
    timespec nap{0, 1000 * 1000};
    nanosleep(&nap, nullptr);
  }
}

}  // namespace aclvmm_test
