// Helpers of the tests that play a hostile or a starved party: another user, exhausted limits, and
// children that may hang (a hang must fail the test, never stall the suite).
//
// Multi-user cases run as a real second uid: the suite runs as root in CI, and a forked child drops
// to the unprivileged "nobody" for good. Where this process cannot change uid (not root), those
// tests skip with the reason.
#pragma once

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "api/test_util.h"

namespace aclvmm_test {

struct TimedChildResult : ChildResult {
  bool hung = false;  // still running at the deadline: killed with SIGKILL
};

// Waits for `pid` up to timeout_ms; a child still running then is killed and reported as hung.
inline TimedChildResult wait_child_for(pid_t pid, int timeout_ms) {
  TimedChildResult r;
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status = 0;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
      if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
      return r;
    }
    if (w < 0 && errno != EINTR) return r;  // not our child: exit_code stays -1
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (elapsed_ms >= timeout_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.hung = true;
      r.signal = SIGKILL;
      return r;
    }
    timespec nap{0, 2 * 1000 * 1000};
    nanosleep(&nap, nullptr);
  }
}

// run_in_child with a deadline: the child _exits with fn's result.
inline TimedChildResult run_in_child_for(int timeout_ms, const std::function<int()>& fn) {
  fflush(nullptr);
  settle_threads_before_fork();
  pid_t pid = fork();
  if (pid == 0) _exit(child_body(fn));
  return wait_child_for(pid, timeout_ms);
}

#define EXPECT_CHILD_DONE_OK(result)                            \
  do {                                                          \
    const ::aclvmm_test::TimedChildResult child_ = (result);    \
    EXPECT_FALSE(child_.hung) << "the child hung and was killed"; \
    EXPECT_EQ(child_.signal, 0);                                \
    EXPECT_EQ(child_.exit_code, 0);                             \
  } while (0)

// The unprivileged user the multi-user tests become ("nobody", else uid/gid 65534).
struct OtherUser {
  uid_t uid = 65534;
  gid_t gid = 65534;
};
inline OtherUser other_user() {
  OtherUser u;
  if (const passwd* pw = getpwnam("nobody")) {
    u.uid = pw->pw_uid;
    u.gid = pw->pw_gid;
  }
  return u;
}
// True when this process may become another user (it is root).
inline bool can_become_other_user() { return geteuid() == 0; }
#define SKIP_UNLESS_CAN_CHANGE_UID()                                                        \
  do {                                                                                      \
    if (!::aclvmm_test::can_become_other_user())                                            \
      GTEST_SKIP() << "needs root to run a child as a second uid (CI runs the suite as root)"; \
  } while (0)

// In a child: becomes the other user for good (groups, gid, uid). The process stays dumpable so
// that /proc/self is still its own to read. False when any step fails.
inline bool become_other_user() {
  const OtherUser u = other_user();
  if (setgroups(0, nullptr) != 0) return false;
  if (setresgid(u.gid, u.gid, u.gid) != 0) return false;
  if (setresuid(u.uid, u.uid, u.uid) != 0) return false;
  (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  return geteuid() == u.uid && getuid() == u.uid;
}

// In a child: lowers a resource limit (soft and hard) to `value`. False when it cannot.
inline bool limit_resource(int resource, rlim_t value) {
  rlimit rl{value, value};
  return setrlimit(resource, &rl) == 0;
}

}  // namespace aclvmm_test
