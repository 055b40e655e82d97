// The gtest side of the sharing tests: starts aclvmm_share_peer (fork + exec through posix_spawn)
// and talks to it through its stdin / stdout with the line protocol described in share_peer.cpp.
// Every wait is bounded, so a peer that hangs fails the test instead of hanging it.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "integration/int_util.h"
#include "integration/share_peer/peer_pattern.h"

extern char** environ;

namespace share_test {

using namespace aclvmm_itest;

constexpr int kNoReply = INT_MIN;  // rc() when the peer did not answer in time

inline double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

inline std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}
inline std::string hex_of(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<const unsigned char*>(p)[i];
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}
inline std::vector<unsigned char> bytes_of(const std::string& h) {
  std::vector<unsigned char> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<unsigned char>(std::strtoul(h.substr(i, 2).c_str(), nullptr, 16)));
  }
  return out;
}

class Peer {
 public:
  // Starts the peer with this process's environment plus `env` ("NAME=value" entries replace the
  // inherited value of NAME). With `init`, the peer runs aclInit and aclrtSetDevice(0) first.
  // A `launcher` (a program and its arguments) runs the peer, e.g. in other namespaces.
  explicit Peer(const std::vector<std::string>& env = {}, bool init = true,
                const std::vector<std::string>& launcher = {}) {
    // A peer that died makes the next command's write fail ("cannot send"): a test failure, not
    // a SIGPIPE that ends the whole test binary before its destructors (network namespaces of the
    // fabric tests among them) run.
    static const bool pipe_ignored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;
    (void)pipe_ignored;
    std::vector<std::string> vars;
    for (char** e = environ; *e; ++e) {
      std::string v = *e;
      bool replaced = false;
      for (const auto& x : env) {
        if (v.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0) replaced = true;
      }
      if (!replaced) vars.push_back(v);
    }
    for (const auto& x : env) vars.push_back(x);
    std::vector<char*> envp;
    for (auto& v : vars) envp.push_back(&v[0]);
    envp.push_back(nullptr);

    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2 failed";
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<std::string> args = launcher;
    args.push_back(ACLVMM_SHARE_PEER);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    const char* path = argv[0];
    fflush(nullptr);
    const int rc = posix_spawn(&pid_, path, &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
      ADD_FAILURE() << "cannot start " << path << ": " << std::strerror(rc);
      pid_ = -1;
      return;
    }
    if (init) {
      EXPECT_EQ(this->rc("init"), kOk) << "peer aclInit";
      EXPECT_EQ(this->rc("dev 0"), kOk) << "peer aclrtSetDevice(0)";
    }
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  ~Peer() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      reap(5000);
    }
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
  }

  pid_t pid() const { return pid_; }

  // Sends one command and returns the words of its reply ({"timeout"} after timeout_ms).
  std::vector<std::string> cmd(const std::string& line, int timeout_ms = 15000) {
    send(line);
    return reply(line, timeout_ms);
  }
  // Sends without waiting for the reply (collect it later with reply()).
  void send(const std::string& line) {
    const std::string l = line + "\n";
    if (to_ < 0 || write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
      ADD_FAILURE() << "cannot send '" << line << "' to the peer";
    }
  }
  std::vector<std::string> reply(const std::string& what, int timeout_ms = 15000) {
    const double deadline = now_s() + timeout_ms / 1000.0;
    size_t nl;
    while ((nl = buf_.find('\n')) == std::string::npos) {
      const int left = static_cast<int>((deadline - now_s()) * 1000);
      pollfd p{from_, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, left) <= 0) {
        ADD_FAILURE() << "peer " << pid_ << " gave no reply to '" << what << "' in " << timeout_ms << " ms";
        return {"timeout"};
      }
      char b[65536];
      const ssize_t n = read(from_, b, sizeof b);
      if (n <= 0) {
        ADD_FAILURE() << "peer " << pid_ << " closed its output during '" << what << "'";
        return {"eof"};
      }
      buf_.append(b, static_cast<size_t>(n));
    }
    std::istringstream in(buf_.substr(0, nl));
    buf_.erase(0, nl + 1);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) words.push_back("empty");
    return words;
  }
  // The code of a command (its reply's first word).
  int rc(const std::string& line, int timeout_ms = 15000) { return code_of(cmd(line, timeout_ms)); }
  static int code_of(const std::vector<std::string>& r) {
    if (r.empty() || r[0] == "timeout" || r[0] == "eof") return kNoReply;
    return std::atoi(r[0].c_str());
  }
  static uint64_t value_of(const std::vector<std::string>& r, size_t i = 1) {
    return r.size() > i ? std::strtoull(r[i].c_str(), nullptr, 16) : 0;
  }

  // aclrtDeviceGetBareTgid in the peer.
  int32_t tgid() {
    auto r = cmd("tgid");
    EXPECT_EQ(code_of(r), kOk);
    return r.size() > 1 ? std::atoi(r[1].c_str()) : -1;
  }
  // export: the token (0 with a failure when the export fails).
  uint64_t export_token(int slot, int flags = 0) {
    auto r = cmd("export " + std::to_string(slot) + " " + std::to_string(flags));
    EXPECT_EQ(code_of(r), kOk) << "peer export";
    return value_of(r);
  }
  // The peer's statistics.
  Json stats() {
    send("stats");
    const double deadline = now_s() + 15;
    size_t nl;
    while ((nl = buf_.find('\n')) == std::string::npos && now_s() < deadline) {
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, 1000) <= 0) continue;
      char b[65536];
      const ssize_t n = read(from_, b, sizeof b);
      if (n <= 0) break;
      buf_.append(b, static_cast<size_t>(n));
    }
    Json j;
    if (nl == std::string::npos) {
      ADD_FAILURE() << "no stats from the peer";
      return j;
    }
    const std::string line = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    EXPECT_TRUE(line.size() > 2 && parse_json(line.substr(2), &j)) << line;
    return j;
  }

  // Closes the peer's stdin (it exits normally) and waits for it: its exit code, 128 + signal,
  // or -1 if it did not end within timeout_ms (it is then killed).
  int finish(int timeout_ms = 10000) {
    if (to_ >= 0) {
      close(to_);
      to_ = -1;
    }
    return reap(timeout_ms);
  }
  void signal(int sig) {
    if (pid_ > 0 && !reaped_) kill(pid_, sig);
  }
  // SIGSTOP, and waits until every thread of the peer has stopped: the kernel stops the other
  // threads only once one of them has taken the signal, and until then they run on.
  void stop() {
    signal(SIGSTOP);
    const double deadline = now_s() + 10;
    while (!all_threads_stopped() && now_s() < deadline) usleep(1000);
    EXPECT_TRUE(all_threads_stopped()) << "peer " << pid_ << " did not stop";
  }
  int kill_and_wait() {
    signal(SIGKILL);
    return reap(10000);
  }

 private:
  int reap(int timeout_ms) {
    if (pid_ <= 0) return -1;
    if (reaped_) return status_;
    const double deadline = now_s() + timeout_ms / 1000.0;
    int st = 0;
    for (;;) {
      const pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (r < 0) return -1;
      if (now_s() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        reaped_ = true;
        status_ = -1;
        return -1;
      }
      usleep(2000);
    }
    reaped_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }

  bool all_threads_stopped() const {
    const std::string dir = "/proc/" + std::to_string(pid_) + "/task";
    DIR* d = opendir(dir.c_str());
    if (!d) return false;
    bool all = true;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      FILE* f = std::fopen((dir + "/" + e->d_name + "/stat").c_str(), "re");
      char buf[512] = {};
      const size_t n = f ? std::fread(buf, 1, sizeof buf - 1, f) : 0;
      if (f) std::fclose(f);
      const char* state = n ? std::strrchr(buf, ')') : nullptr;  // field 3 follows the name
      all = all && state && state[1] == ' ' && (state[2] == 'T' || state[2] == 't');
    }
    closedir(d);
    return all;
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
  bool reaped_ = false;
  int status_ = -1;
};

inline const std::vector<std::string> kA3 = {"ACLVMM_SOC=Ascend910_9391"};

// Token layout of behavior.md section 7 / emulation.md section 5.
inline uint32_t share_id_of(uint64_t token) { return static_cast<uint32_t>(token); }
inline uint32_t device_of(uint64_t token) { return static_cast<uint32_t>((token >> 32) & 0xff); }
inline uint64_t high_of(uint64_t token) { return token >> 40; }

// The gtest process's own export of a fresh 2 MiB device handle, mapped at *va with `seed`'s
// pattern written into it.
struct LocalExport {
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  uint64_t token = 0;
  void release() {
    if (va) {
      EXPECT_EQ(aclrtUnmapMem(va), kOk);
      EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
      va = nullptr;
    }
    if (h) {
      EXPECT_EQ(aclrtFreePhysical(h), kOk);
      h = nullptr;
    }
  }
};
inline LocalExport export_local(unsigned seed, uint64_t flags = 0, uint32_t device = 0) {
  LocalExport e;
  e.h = make_handle(k2M, device);
  e.va = reserve(k2M);
  EXPECT_EQ(aclrtMapMem(e.va, k2M, 0, e.h, 0), kOk);
  if (device == 0) h2d(e.va, share_peer::peer_pattern(k2M, seed));
  EXPECT_EQ(aclrtMemExportToShareableHandle(e.h, ACL_MEM_HANDLE_TYPE_NONE, flags, &e.token), kOk);
  return e;
}

// One peer command line with arguments.
template <typename... A>
std::string line(const char* c, const A&... a) {
  std::ostringstream o;
  o << c;
  ((o << ' ' << a), ...);
  return o.str();
}

// Slot `slot` of the peer: a fresh 2 MiB device-0 handle, mapped, holding peer_pattern(seed).
inline void fill_slot(Peer& p, int slot, unsigned seed) {
  ASSERT_EQ(p.rc(line("alloc", slot, 0, k2M)), kOk);
  ASSERT_EQ(p.rc(line("map", slot, k2M)), kOk);
  ASSERT_EQ(p.rc(line("write", slot, 0, k2M, seed)), kOk);
}

}  // namespace share_test
