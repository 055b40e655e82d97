// Leaks at process exit (emulation.md §9): a process that exits without aclFinalize has everything
// it still holds released, and each item reported once at WARNING level with its kind, its
// (rounded) size and the API that created it, in the CANN log line format (conventions.md §2.1).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "api/test_util.h"

namespace aclvmm_test {
namespace {

// The child's whole life: start, leak one of each kind, return (the caller exits).
int leak_one_of_each() {
  // A runtime this process inherited from the test process is dropped first, so that aclInit
  // reads the logging variables below.
  (void)aclInit(nullptr);
  while (aclFinalize() == ACL_SUCCESS) {
  }
  unsetenv("ASCEND_LOG_PRINT_TO_STDOUT");  // it would take precedence over the old name
  setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1", 1);
  setenv("ASCEND_GLOBAL_LOG_LEVEL", "2", 1);
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 10;
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  void *va = nullptr, *block = nullptr, *managed = nullptr;
  if (aclrtMallocPhysical(&h, 4 * kMiB, &p, 0)) return 11;                 // 4194304 bytes
  if (aclrtReserveMemAddress(&va, 16 * kMiB, 0, nullptr, 0)) return 12;    // 16777216 bytes
  if (aclrtMapMem(va, k2M, 0, h, 0)) return 13;                            // 2097152 bytes
  if (aclrtMalloc(&block, 5 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST)) return 14;  // 6291456 bytes
  if (aclrtMemAllocManaged(&managed, 7 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL)) return 15;  // 8388608
  return 0;
}

struct Exited {
  ChildResult result;
  std::string out;
  pid_t pid = 0;
};

// Forks a child that runs leak_one_of_each() and then exit()s with its result (so the atexit
// handlers run), with its stdout captured.
Exited run_leaking_child() {
  Exited e;
  int fds[2];
  if (pipe(fds) != 0) return e;
  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    alarm(30);  // a hang at exit fails the test instead of blocking it
    std::exit(leak_one_of_each());
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) e.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  e.pid = pid;
  e.result = wait_child(pid);
  return e;
}

// `text` follows `shape`, where '9' stands for any digit and every other character for itself.
bool shaped(const std::string& text, const char* shape) {
  const std::string sh(shape);
  if (text.size() != sh.size()) return false;
  for (size_t i = 0; i < sh.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (sh[i] == '9' ? !digit : text[i] != sh[i]) return false;
  }
  return true;
}

// The message of a CANN-format WARNING line of module RUNTIME from process `pid`, or "" when the
// line has another shape:
// [WARNING] RUNTIME(<pid>,<process>):<YYYY-MM-DD-HH:MM:SS.mmm.uuu> [<file>:<line>]<tid> <function>:<message>
// (std::regex is avoided: libstdc++'s regex warns under the sanitizer build's -O1.)
std::string runtime_warning(const std::string& line, pid_t pid) {
  const std::string head = "[WARNING] RUNTIME(" + std::to_string(pid) + ",";
  if (line.compare(0, head.size(), head) != 0) return "";
  size_t pos = line.find("):", head.size());
  if (pos == std::string::npos) return "";
  pos += 2;
  if (!shaped(line.substr(pos, 27), "9999-99-99-99:99:99.999.999")) return "";
  pos += 27;
  if (line.compare(pos, 2, " [") != 0) return "";
  const size_t colon = line.find(':', pos + 2), close = line.find(']', pos + 2);
  if (colon == std::string::npos || close == std::string::npos || colon > close) return "";
  const size_t space = line.find(' ', close);
  if (space == std::string::npos) return "";
  for (size_t i = close + 1; i < space; ++i) {
    if (line[i] < '0' || line[i] > '9') return "";  // the thread id
  }
  const size_t func_end = line.find(':', space + 1);
  return func_end == std::string::npos ? "" : line.substr(func_end + 1);
}

// `message` is `before` + "0x<hex digits>" + `after` (or exactly `before` when `after` is null).
bool reports(const std::string& message, const std::string& before, const char* after) {
  if (!after) return message == before;
  if (message.compare(0, before.size(), before) != 0) return false;
  size_t i = before.size();
  if (message.compare(i, 2, "0x") != 0) return false;
  i += 2;
  const size_t digits = i;
  while (i < message.size() && std::isxdigit(static_cast<unsigned char>(message[i]))) ++i;
  return i > digits && message.substr(i) == after;
}

TEST(LeakAtExitTest, ExitWithoutFinalizeReportsEachLeakOnceInCannFormat) {
  const Exited e = run_leaking_child();
  EXPECT_EQ(e.result.signal, 0) << (e.result.signal == SIGALRM ? "the exit hangs" : "crashed");
  ASSERT_EQ(e.result.exit_code, 0) << e.out;
  std::vector<std::string> messages;
  std::stringstream ss(e.out);
  for (std::string line; std::getline(ss, line);) {
    if (line.empty()) continue;
    const std::string m = runtime_warning(line, e.pid);
    if (!m.empty()) messages.push_back(m);
  }
  const std::string why = "process exit without aclFinalize: ";
  struct Leak {
    const char* kind;
    std::string before;
    const char* after;  // after the address; null: the line names no address
  };
  const Leak leaks[] = {
      {"physical handle",
       why + "releasing physical handle of 4194304 bytes created by aclrtMallocPhysical", nullptr},
      {"mapping", why + "unmapping mapping of 2097152 bytes at ", " created by aclrtMapMem"},
      {"reservation", why + "releasing reservation of 16777216 bytes at ",
       " created by aclrtReserveMemAddress"},
      {"aclrtMalloc block", why + "releasing allocation of 6291456 bytes at ",
       " created by aclrtMalloc"},
      {"managed allocation", why + "releasing managed allocation of 8388608 bytes at ",
       " created by aclrtMemAllocManaged"},
  };
  for (const Leak& l : leaks) {
    int found = 0;
    for (const std::string& m : messages) found += reports(m, l.before, l.after);
    EXPECT_EQ(found, 1) << "one WARNING line for the leaked " << l.kind << "\nstdout:\n" << e.out;
  }
  for (const std::string& m : messages) {
    EXPECT_NE(m.rfind("aclFinalize:", 0), 0u) << "nothing was finalized: " << m;
  }
}

}  // namespace
}  // namespace aclvmm_test
