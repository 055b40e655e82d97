// Sharing physical memory between processes against the raw mechanism underneath: a memfd
// passed with SCM_RIGHTS over a unix socket.
//
// The exporter is a real second process (this binary re-executed with --bench-exporter), so every
// import crosses processes as it does in an application.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "bench_fd.h"
#include "bench_share.h"
#include "bench_util.h"

namespace bench {
namespace {

constexpr char kExporterFlag[] = "--bench-exporter";

// ---- raw descriptor passing ------------------------------------------------------------------

// The descriptor a one-byte message brought, or -1.
int recv_fd(int sock) {
  char b = 0;
  int fd = -1;
  return recv_byte(sock, &b, &fd) ? fd : -1;
}

// A forked server that answers every one-byte request with a memfd: over one connection, or
// over a fresh connection per request (as a process reaching an exporter by name does).
struct RawServer {
  pid_t pids[2] = {-1, -1};
  int conn = -1;       // the established connection
  sockaddr_un addr{};  // where per-request connections go
  socklen_t addr_len = 0;

  bool start() {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
    int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    int mem = memfd_create("bench", MFD_CLOEXEC);
    addr.sun_family = AF_UNIX;
    // Abstract name: nothing to clean up on disk.
    snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "aclvmm-bench-raw-%d", getpid());
    addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                      strlen(addr.sun_path + 1));
    bool ready = listener >= 0 && mem >= 0 && ftruncate(mem, k2M) == 0 &&
                 bind(listener, reinterpret_cast<sockaddr*>(&addr), addr_len) == 0 &&
                 listen(listener, 64) == 0;
    // Two servers, forked: only raw system calls run in them.
    for (int i = 0; ready && i < 2; ++i) {
      pids[i] = fork();
      if (pids[i] != 0) continue;
      char b;
      if (i == 0) {
        while (recv(pair[1], &b, 1, 0) == 1) send_byte(pair[1], 0, mem);
      } else {
        for (int c; (c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; close(c)) {
          if (recv(c, &b, 1, 0) == 1) send_byte(c, 0, mem);
        }
      }
      _exit(0);
    }
    close(pair[1]);
    if (listener >= 0) close(listener);
    if (mem >= 0) close(mem);
    conn = pair[0];
    return ready && pids[0] > 0 && pids[1] > 0;
  }

  void stop() {
    if (conn >= 0) close(conn);
    for (pid_t pid : pids) {
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

void Raw_ScmRightsRoundTrip(benchmark::State& state) {
  RawServer server;
  if (!server.start()) {
    state.SkipWithError("raw server");
    return;
  }
  for (auto _ : state) {
    char b = 1;
    int fd = -1;
    if (state.range(0) == 0) {
      if (send(server.conn, &b, 1, MSG_NOSIGNAL) != 1 || (fd = recv_fd(server.conn)) < 0) break;
    } else {
      int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      if (connect(s, reinterpret_cast<sockaddr*>(&server.addr), server.addr_len) != 0 ||
          send(s, &b, 1, MSG_NOSIGNAL) != 1 || (fd = recv_fd(s)) < 0) {
        close(s);
        break;
      }
      close(s);
    }
    close(fd);
  }
  server.stop();
}
// 0: over an established connection; 1: connecting for each descriptor.
BENCHMARK(Raw_ScmRightsRoundTrip)->Arg(0)->Arg(1);

// ---- aclvmm ------------------------------------------------------------------------------------

// Export costs: a fresh handle each iteration (allocation and free are not timed).
void Acl_Export(benchmark::State& state) {
  aclrtPhysicalMemProp p = device_prop();
  for (auto _ : state) {
    aclrtDrvMemHandle h = nullptr;
    if (!ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical")) return;
    uint64_t token = 0;
    const auto t0 = std::chrono::steady_clock::now();
    aclError rc = aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                                  ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                                  &token);
    const auto t1 = std::chrono::steady_clock::now();
    aclrtFreePhysical(h);
    if (!ok(state, rc, "aclrtMemExportToShareableHandle")) return;
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
}
BENCHMARK(Acl_Export)->UseManualTime();

// Import (and free) of a handle exported by another process.
void Acl_Import(benchmark::State& state) {
  int out[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    execl("/proc/self/exe", "aclvmm_bench", kExporterFlag, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  uint64_t token = 0;
  const bool got = read(out[0], &token, sizeof token) == static_cast<ssize_t>(sizeof token);
  if (got) {
    for (auto _ : state) {
      aclrtDrvMemHandle h = nullptr;
      if (!ok(state, aclrtMemImportFromShareableHandle(token, 0, &h), "import")) break;
      aclrtFreePhysical(h);
    }
  } else {
    state.SkipWithError("the exporter process sent no token");
  }
  close(in[1]);  // the exporter exits when its stdin closes
  close(out[0]);
  waitpid(pid, nullptr, 0);
}
BENCHMARK(Acl_Import);

}  // namespace

bool is_exporter(int argc, char** argv) { return argc > 1 && std::strcmp(argv[1], kExporterFlag) == 0; }

int run_exporter() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  uint64_t token = 0;
  if (aclrtMallocPhysical(&h, k2M, &p, 0) != ACL_SUCCESS ||
      aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                      ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                      &token) != ACL_SUCCESS) {
    return 1;
  }
  if (write(STDOUT_FILENO, &token, sizeof token) != static_cast<ssize_t>(sizeof token)) return 1;
  char b;
  while (read(STDIN_FILENO, &b, 1) > 0) {
  }
  aclrtFreePhysical(h);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}

}  // namespace bench
