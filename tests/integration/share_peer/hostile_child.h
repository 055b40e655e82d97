// A forked child of the test that plays a hostile party of another user (share_hostile_*_test.cpp):
// it drops to nobody, is told to stop by end-of-file on one pipe and reports on another. It runs
// only raw system calls (no ACL call), so what the runtime does in forked children is not at play.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <functional>

#include "api/hostile_util.h"

namespace share_test {

class HostileChild {
 public:
  // Runs body(stop, report) in a forked child as nobody; the child _exits with its result (90
  // when it could not become nobody).
  explicit HostileChild(const std::function<int(int stop, int report)>& body) {
    int ctl[2], rep[2];
    if (pipe2(ctl, O_CLOEXEC) != 0) return;
    if (pipe2(rep, O_CLOEXEC) != 0) {
      close(ctl[0]);
      close(ctl[1]);
      return;
    }
    fflush(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      close(ctl[1]);
      close(rep[0]);
      _exit(aclvmm_test::become_other_user() ? body(ctl[0], rep[1]) : 90);
    }
    close(ctl[0]);
    close(rep[1]);
    stop_ = ctl[1];
    report_ = rep[0];
  }
  ~HostileChild() {
    if (pid_ > 0 && !reaped_) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
    if (stop_ >= 0) close(stop_);
    if (report_ >= 0) close(report_);
  }
  HostileChild(const HostileChild&) = delete;
  HostileChild& operator=(const HostileChild&) = delete;

  // Reads exactly n reported bytes within timeout_ms (a pipe message this small comes whole).
  bool read_report(void* out, size_t n, int timeout_ms) {
    pollfd p{report_, POLLIN, 0};
    return report_ >= 0 && poll(&p, 1, timeout_ms) == 1 &&
           read(report_, out, n) == static_cast<ssize_t>(n);
  }
  // A one-byte report, or 0 when none came in time.
  char next_report(int timeout_ms) {
    char c = 0;
    return read_report(&c, 1, timeout_ms) ? c : 0;
  }
  // Tells it to stop, reads its `n` bytes of totals into `totals` and waits for it to end:
  // whether it did all that and exited with 0.
  bool stop(void* totals = nullptr, size_t n = 0) {
    if (stop_ >= 0) close(stop_);
    stop_ = -1;
    const bool got = n == 0 || read_report(totals, n, 20000);
    const aclvmm_test::TimedChildResult r = aclvmm_test::wait_child_for(pid_, 10000);
    reaped_ = true;
    return got && !r.hung && r.exit_code == 0;
  }

 private:
  pid_t pid_ = -1;
  int stop_ = -1, report_ = -1;
  bool reaped_ = false;
};

}  // namespace share_test
