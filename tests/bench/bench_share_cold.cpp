// Sharing on the paths applications hit cold (issue 19): a fresh export imported at once by
// another process, an import while the exporter holds many live exports, the descriptors an
// export costs, and what an idle exporter costs.
//
// Both processes are real: this binary, and a peer started from it with --bench-share-peer that
// imports what it is told to. The baseline runs between the same two processes: a memfd passed
// with SCM_RIGHTS and a one-byte reply, the two wake-ups an import cannot do without.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aclvmm/aclvmm.h"
#include "bench_fd.h"
#include "bench_share.h"
#include "bench_util.h"

namespace bench {
namespace {

constexpr char kPeerFlag[] = "--bench-share-peer";
constexpr int kRawFd = 3;  // the peer's end of the raw baseline's socket pair

// Commands to the peer (stdin), 9 bytes: a letter and a token.
enum Command : char { kImport = 'i', kRaw = 'r', kBatch = 'b', kQuit = 'q' };

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The importing process, driven one command at a time.
class Peer {
 public:
  bool start() {
    int cmd[2], reply[2], raw[2];
    if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(reply, O_CLOEXEC) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, raw) != 0) {
      return false;
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(cmd[0], STDIN_FILENO);
      dup2(reply[1], STDOUT_FILENO);
      dup2(raw[1], kRawFd);
      execl("/proc/self/exe", "aclvmm_bench", kPeerFlag, static_cast<char*>(nullptr));
      _exit(127);
    }
    close(cmd[0]);
    close(reply[1]);
    close(raw[1]);
    to_ = cmd[1];
    from_ = reply[0];
    raw_ = raw[0];
    return pid_ > 0 && read_all(from_, &tgid_, sizeof tgid_);
  }

  ~Peer() {
    if (pid_ > 0) {
      send(kQuit, 0);
      close(to_);
      close(from_);
      close(raw_);
      waitpid(pid_, nullptr, 0);
    }
  }

  int32_t tgid() const { return tgid_; }

  // The peer imports `token` onto device 0 and frees the handle; its aclError, and in *ns how
  // long the import call took in the peer (the command and its answer are the benchmark's own
  // traffic, not the import's).
  aclError import(uint64_t token, uint32_t* ns) {
    int32_t rc = -1;
    return send(kImport, token) && read_all(from_, &rc, sizeof rc) &&
                   read_all(from_, ns, sizeof *ns)
               ? rc
               : -1;
  }

  // The peer imports (and frees) each of `tokens` in turn; start_batch sends them, finish_batch
  // collects the nanoseconds each import took (empty when one failed).
  bool start_batch(const std::vector<uint64_t>& tokens) {
    const uint32_t n = static_cast<uint32_t>(tokens.size());
    return send(kBatch, n) && write_all(to_, tokens.data(), n * sizeof(uint64_t));
  }
  std::vector<uint32_t> finish_batch(size_t n) {
    std::vector<uint32_t> ns(n);
    int32_t rc = -1;
    if (!read_all(from_, &rc, sizeof rc) || rc != ACL_SUCCESS ||
        !read_all(from_, ns.data(), n * sizeof(uint32_t))) {
      ns.clear();
    }
    return ns;
  }

  // The raw baseline: switch the peer to its socket loop, then one descriptor and reply per call.
  bool enter_raw() { return send(kRaw, 0); }
  bool raw_round_trip(int mem) {
    char b = 0;
    int fd = -1;
    return send_byte(raw_, 1, mem) && recv_byte(raw_, &b, &fd) && b == 2;
  }
  bool leave_raw() { return send_byte(raw_, 0, -1); }

 private:
  bool send(char command, uint64_t token) {
    char msg[9];
    msg[0] = command;
    std::memcpy(msg + 1, &token, sizeof token);
    return write_all(to_, msg, sizeof msg);
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1, raw_ = -1;
  int32_t tgid_ = 0;
};

aclError export_for(aclrtDrvMemHandle h, int32_t tgid, uint64_t* token) {
  aclError rc = aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, token);
  return rc != ACL_SUCCESS ? rc : aclrtMemSetPidToShareableHandle(*token, &tgid, 1);
}

// A memfd passed to the peer, which closes it and answers: the floor of any import.
void Raw_FdPassReply(benchmark::State& state) {
  Peer peer;
  int mem = memfd_create("bench", MFD_CLOEXEC);
  if (mem < 0 || ftruncate(mem, k2M) != 0 || !peer.start() || !peer.enter_raw()) {
    state.SkipWithError("peer or memfd");
    if (mem >= 0) close(mem);
    return;
  }
  for (auto _ : state) {
    if (!peer.raw_round_trip(mem)) {
      state.SkipWithError("raw round trip");
      break;
    }
  }
  peer.leave_raw();
  close(mem);
}
BENCHMARK(Raw_FdPassReply);

// A new handle exported (whitelisting the peer) and imported by the peer at once, each iteration:
// the export's calls here plus the import call there (the allocation and free are not timed, nor
// the benchmark's own command to the peer and its answer).
void Acl_FreshExportImport(benchmark::State& state) {
  Peer peer;
  if (!peer.start()) {
    state.SkipWithError("peer");
    return;
  }
  aclrtPhysicalMemProp p = device_prop();
  for (auto _ : state) {
    aclrtDrvMemHandle h = nullptr;
    if (!ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical")) break;
    uint64_t token = 0;
    uint32_t import_ns = 0;
    const auto t0 = std::chrono::steady_clock::now();
    aclError rc = export_for(h, peer.tgid(), &token);
    const auto t1 = std::chrono::steady_clock::now();
    if (rc == ACL_SUCCESS) rc = peer.import(token, &import_ns);
    aclrtFreePhysical(h);
    if (!ok(state, rc, "export + import")) break;
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() + import_ns * 1e-9);
  }
}
BENCHMARK(Acl_FreshExportImport)->UseManualTime();

// Live exports of this process, made once and kept until the benchmark binary ends the runtime.
struct LiveExports {
  std::vector<aclrtDrvMemHandle> handles;
  std::vector<uint64_t> tokens;
  int32_t tgid = 0;
  size_t fds_before = 0, fds_after = 0;  // all the process's descriptors
  size_t low_before = 0, low_after = 0;  // those below the soft limit of 1 024
};

size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// The application's range: the common soft limit.
constexpr rlim_t kSoftLimit = 1024;

size_t descriptors_below(rlim_t limit) {
  size_t n = 0;
  for (int fd = 0; fd < static_cast<int>(limit); ++fd) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

// `count` exports whitelisting `tgid`, made as an application with the common soft limit of
// 1 024 descriptors would (when the hard limit leaves room above it: the library holds the
// exports' descriptors there); counts the descriptors they hold, in all and in that range.
bool make_exports(LiveExports* live, size_t count, int32_t tgid, benchmark::State& state) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_max > kSoftLimit + count + 256) {
    lim.rlim_cur = kSoftLimit;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  aclrtPhysicalMemProp p = device_prop();
  live->tgid = tgid;
  live->fds_before = open_descriptors();
  live->low_before = descriptors_below(kSoftLimit);
  for (size_t i = 0; i < count; ++i) {
    aclrtDrvMemHandle h = nullptr;
    uint64_t token = 0;
    if (!ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical")) return false;
    live->handles.push_back(h);
    if (!ok(state, export_for(h, tgid, &token), "export")) return false;
    live->tokens.push_back(token);
  }
  live->fds_after = open_descriptors();
  live->low_after = descriptors_below(kSoftLimit);
  return true;
}

void free_exports(LiveExports* live) {
  for (aclrtDrvMemHandle h : live->handles) aclrtFreePhysical(h);
  live->handles.clear();
  live->tokens.clear();
}

// Imports by the peer while this process holds state.range(0) live exports (one of them each
// time, in turn); also reports the descriptors each export holds: in all, and in the
// application's range below the soft limit.
void Acl_ImportAmongLiveExports(benchmark::State& state) {
  Peer peer;
  if (!peer.start()) {
    state.SkipWithError("peer");
    return;
  }
  LiveExports live;
  if (make_exports(&live, static_cast<size_t>(state.range(0)), peer.tgid(), state)) {
    size_t i = 0;
    for (auto _ : state) {
      uint32_t ns = 0;
      if (!ok(state, peer.import(live.tokens[i], &ns), "import")) break;
      state.SetIterationTime(ns * 1e-9);
      i = (i + 1) % live.tokens.size();
    }
    const double n = static_cast<double>(state.range(0));
    state.counters["fds_per_export"] = static_cast<double>(live.fds_after - live.fds_before) / n;
    state.counters["fds_in_range_per_export"] =
        (static_cast<double>(live.low_after) - static_cast<double>(live.low_before)) / n;
  }
  free_exports(&live);
}
BENCHMARK(Acl_ImportAmongLiveExports)
    ->Arg(1)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(2000)
    ->UseManualTime();

// An exporter with state.range(0) live exports and nothing to do: the listener's wake-ups in one
// second (ipc.listener_wakeups of the statistics), which should be none.
uint64_t listener_wakeups() {
  const char* json = aclvmmStatsJson();
  const char* key = json ? std::strstr(json, "\"listener_wakeups\": ") : nullptr;
  return key ? std::strtoull(key + std::strlen("\"listener_wakeups\": "), nullptr, 10) : 0;
}

void Acl_IdleExporterWakeups(benchmark::State& state) {
  LiveExports live;
  if (!make_exports(&live, static_cast<size_t>(state.range(0)), static_cast<int32_t>(getpid()),
                    state)) {
    free_exports(&live);
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // what the exports set off settles
  double per_second = 0;
  for (auto _ : state) {
    const uint64_t before = listener_wakeups();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    per_second = static_cast<double>(listener_wakeups() - before);
  }
  state.counters["wakeups_per_second"] = per_second;
  free_exports(&live);
}
BENCHMARK(Acl_IdleExporterWakeups)->Arg(1000)->Arg(10000)->Iterations(1);

// 64 importing processes at once, each importing every one of 1 000 live exports of this process
// (whitelisting all of them): the distribution of one import's time, as the importers measure it.
// The smoke run uses 4 importers and 50 exports.
void Acl_ManyImporters(benchmark::State& state) {
  // The smoke run: 4 importers of 50 exports, under the same name.
  const size_t importers = smoke() ? 4 : static_cast<size_t>(state.range(0));
  const size_t exports = smoke() ? 50 : static_cast<size_t>(state.range(1));
  std::vector<std::unique_ptr<Peer>> peers;
  std::vector<int32_t> tgids;
  for (size_t i = 0; i < importers; ++i) {
    peers.push_back(std::make_unique<Peer>());
    if (!peers.back()->start()) {
      state.SkipWithError("peer");
      return;
    }
    tgids.push_back(peers.back()->tgid());
  }
  LiveExports live;
  bool made = make_exports(&live, exports, tgids[0], state);
  for (size_t i = 0; made && i < live.tokens.size(); ++i) {
    made = ok(state, aclrtMemSetPidToShareableHandle(live.tokens[i], tgids.data(), tgids.size()),
              "aclrtMemSetPidToShareableHandle");
  }
  std::vector<uint32_t> all;
  for (auto _ : state) {
    if (!made) break;
    for (auto& peer : peers) peer->start_batch(live.tokens);
    for (auto& peer : peers) {
      std::vector<uint32_t> ns = peer->finish_batch(live.tokens.size());
      if (ns.empty()) {
        state.SkipWithError("an import failed");
        made = false;
        break;
      }
      all.insert(all.end(), ns.begin(), ns.end());
    }
  }
  if (made && !all.empty()) {
    std::sort(all.begin(), all.end());
    state.counters["p50_us"] = all[all.size() / 2] / 1e3;
    state.counters["p99_us"] = all[all.size() * 99 / 100] / 1e3;
  }
  peers.clear();  // the peers end before the exports do
  free_exports(&live);
}
BENCHMARK(Acl_ManyImporters)->Args({64, 1000})->Iterations(1)->Unit(benchmark::kMillisecond);

// The floor of the row above on this machine: the same number of client processes, each passing
// the same number of round trips through one serving thread of this process, with nothing but
// the raw calls: a one-byte request, a memfd passed back with a one-byte reply, closed. With
// every client in a closed loop the time of one round trip is mostly the wait for the others'
// CPU time on the machine's cores, so this is what any design that answers imports in the
// exporter meets here.
void Raw_ManyClients(benchmark::State& state) {
  const size_t clients = smoke() ? 4 : static_cast<size_t>(state.range(0));
  const size_t rounds = smoke() ? 50 : static_cast<size_t>(state.range(1));
  const int mem = memfd_create("bench", MFD_CLOEXEC);
  int results[2] = {-1, -1};
  if (mem < 0 || ftruncate(mem, k2M) != 0 || pipe2(results, O_CLOEXEC) != 0) {
    state.SkipWithError("memfd or pipe");
    return;
  }
  std::vector<int> serving;
  std::vector<pid_t> children;
  // Made before the forks: a child of this multithreaded process calls nothing that allocates.
  std::vector<uint32_t> times(rounds);
  std::vector<pollfd> set;
  std::vector<uint32_t> all;
  all.reserve(clients * rounds);
  for (size_t i = 0; i < clients; ++i) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) break;
    const pid_t child = fork();
    if (child == 0) {
      for (size_t k = 0; k < rounds; ++k) {
        char b = 1;
        int fd = -1;
        const auto t0 = std::chrono::steady_clock::now();
        if (!send_byte(pair[1], b, -1) || !recv_byte(pair[1], &b, &fd)) _exit(1);
        if (fd >= 0) close(fd);
        times[k] = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count());
      }
      _exit(write_all(results[1], times.data(), rounds * sizeof(uint32_t)) ? 0 : 1);
    }
    close(pair[1]);
    if (child < 0) {
      close(pair[0]);
      break;
    }
    children.push_back(child);
    serving.push_back(pair[0]);
    set.push_back(pollfd{pair[0], POLLIN, 0});
  }
  close(results[1]);
  bool complete = children.size() == clients;
  for (auto _ : state) {
    size_t served = 0;
    while (complete && served < clients * rounds) {
      if (poll(set.data(), set.size(), 10000) <= 0) {
        complete = false;
        break;
      }
      for (pollfd& p : set) {
        char b = 0;
        int fd = -1;
        if (p.revents == 0) continue;
        // A client that is done hangs up: it is polled no more.
        if (!recv_byte(p.fd, &b, &fd)) {
          p.fd = -1;
          continue;
        }
        if (!send_byte(p.fd, 2, mem)) p.fd = -1;
        ++served;
      }
    }
    for (size_t i = 0; complete && i < children.size(); ++i) {
      complete = read_all(results[0], times.data(), rounds * sizeof(uint32_t));
      all.insert(all.end(), times.begin(), times.end());
    }
  }
  for (int fd : serving) close(fd);
  for (pid_t child : children) waitpid(child, nullptr, 0);
  close(results[0]);
  close(mem);
  if (!complete || all.empty()) {
    state.SkipWithError("a client failed");
    return;
  }
  std::sort(all.begin(), all.end());
  state.counters["p50_us"] = all[all.size() / 2] / 1e3;
  state.counters["p99_us"] = all[all.size() * 99 / 100] / 1e3;
}
BENCHMARK(Raw_ManyClients)->Args({64, 1000})->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

bool is_share_peer(int argc, char** argv) {
  return argc > 1 && std::strcmp(argv[1], kPeerFlag) == 0;
}

// The peer: reports its bare tgid, then serves commands until told to quit or its stdin ends.
int run_share_peer() {
  int32_t tgid = 0;
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
      aclrtDeviceGetBareTgid(&tgid) != ACL_SUCCESS ||
      !write_all(STDOUT_FILENO, &tgid, sizeof tgid)) {
    return 1;
  }
  char msg[9];
  while (read_all(STDIN_FILENO, msg, sizeof msg) && msg[0] != kQuit) {
    if (msg[0] == kImport) {
      uint64_t token = 0;
      std::memcpy(&token, msg + 1, sizeof token);
      aclrtDrvMemHandle h = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      int32_t rc = aclrtMemImportFromShareableHandle(token, 0, &h);
      const auto t1 = std::chrono::steady_clock::now();
      if (rc == ACL_SUCCESS) aclrtFreePhysical(h);
      const uint32_t ns = static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      if (!write_all(STDOUT_FILENO, &rc, sizeof rc) || !write_all(STDOUT_FILENO, &ns, sizeof ns)) {
        break;
      }
    } else if (msg[0] == kBatch) {
      uint64_t n = 0;
      std::memcpy(&n, msg + 1, sizeof n);
      std::vector<uint64_t> tokens(n);
      std::vector<uint32_t> ns(n);
      if (!read_all(STDIN_FILENO, tokens.data(), n * sizeof(uint64_t))) break;
      int32_t rc = ACL_SUCCESS;
      for (size_t i = 0; i < n && rc == ACL_SUCCESS; ++i) {
        aclrtDrvMemHandle h = nullptr;
        const auto t0 = std::chrono::steady_clock::now();
        rc = aclrtMemImportFromShareableHandle(tokens[i], 0, &h);
        const auto t1 = std::chrono::steady_clock::now();
        if (rc == ACL_SUCCESS) aclrtFreePhysical(h);
        ns[i] = static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      }
      if (!write_all(STDOUT_FILENO, &rc, sizeof rc) ||
          (rc == ACL_SUCCESS && !write_all(STDOUT_FILENO, ns.data(), n * sizeof(uint32_t)))) {
        break;
      }
    } else if (msg[0] == kRaw) {
      char b = 0;
      int fd = -1;
      while (recv_byte(kRawFd, &b, &fd) && b == 1) {
        if (fd >= 0) close(fd);
        if (!send_byte(kRawFd, 2, -1)) break;
      }
    }
  }
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}

}  // namespace bench
