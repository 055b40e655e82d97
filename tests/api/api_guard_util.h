// "The call returns a code instead of crashing": runs a call in a forked child, with a deadline, and
// brings back what it returned and the recent error text, or how the child died. For calls that
// used to throw through the C API (an abort), hang, or fault: the test process survives them and
// reports what happened. The runtime starts in the child only (the test process never starts it).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "api/hostile_util.h"

namespace aclvmm_test {

constexpr int kThrewExit = 97;  // the child's exit code when an exception came out of the call

struct CallOutcome {
  bool hung = false;     // still running at the deadline (killed)
  int signal = 0;        // the child died of this signal (SIGABRT: an exception escaped)
  bool threw = false;    // a C++ exception came out of the call (a C caller would have aborted)
  bool returned = false; // the call came back
  long long value = 0;   // what it returned
  std::string message;   // aclGetRecentErrMsg right after it ("" for none), at most 4 KiB
};

// `call` runs in the child; its result and the recent error text come back through a pipe.
inline CallOutcome call_in_child(int timeout_ms, const std::function<long long()>& call) {
  int fds[2];
  CallOutcome out;
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return out;
  }
  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    long long value = 0;
    try {
      value = call();
    } catch (...) {
      // Never back into gtest in the child (it would go on running the other tests here).
      _exit(kThrewExit);
    }
    const char* m = aclGetRecentErrMsg();
    char record[sizeof(long long) + 4096] = {0};
    std::memcpy(record, &value, sizeof value);
    const size_t n = m ? strnlen(m, sizeof record - sizeof value - 1) : 0;
    if (n) std::memcpy(record + sizeof value, m, n);
    ssize_t w = write(fds[1], record, sizeof value + n);
    _exit(w == static_cast<ssize_t>(sizeof value + n) ? 0 : 99);
  }
  close(fds[1]);
  const TimedChildResult r = wait_child_for(pid, timeout_ms);
  out.hung = r.hung;
  out.signal = r.signal;
  out.threw = r.exit_code == kThrewExit;
  std::string bytes;
  char buf[4096];
  pollfd p{fds[0], POLLIN, 0};
  while (poll(&p, 1, 0) > 0) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (r.exit_code == 0 && bytes.size() >= sizeof out.value) {
    out.returned = true;
    std::memcpy(&out.value, bytes.data(), sizeof out.value);
    out.message = bytes.substr(sizeof out.value);
  }
  return out;
}

inline std::string describe(const CallOutcome& o) {
  if (o.hung) return "the child hung";
  if (o.signal) return "the child died of signal " + std::to_string(o.signal);
  if (o.threw) return "a C++ exception crossed the C API";
  if (!o.returned) return "the child did not report";
  return "returned " + std::to_string(o.value) + ", message \"" + o.message + "\"";
}

// The call came back with `code` (and left a message when it is not 0).
#define EXPECT_RETURNS_CODE(outcome, code)                                     \
  do {                                                                         \
    const ::aclvmm_test::CallOutcome o_ = (outcome);                           \
    EXPECT_TRUE(o_.returned) << ::aclvmm_test::describe(o_);                  \
    EXPECT_EQ(o_.value, static_cast<long long>(code)) << ::aclvmm_test::describe(o_); \
    if ((code) != 0) {                                                         \
      EXPECT_NE(o_.message, "") << ::aclvmm_test::describe(o_);               \
    }                                                                          \
  } while (0)

}  // namespace aclvmm_test
