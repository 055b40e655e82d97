#include "conformance/pipe_peer.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unit/testing/fork_settle.h"

namespace aclvmm::conformance::pipe_peer {
namespace {

constexpr int kAnswerBoundMs = 60000;  // every step of a peer is far quicker

// The parent's side: each PeerProcess call is one Call and one Answer.
class PipePeer final : public PeerProcess {
 public:
  PipePeer(pid_t child, int to, int from, int32_t pid)
      : child_(child), to_(to), from_(from), pid_(pid) {}
  ~PipePeer() override { exit(); }

  int32_t pid() override { return pid_; }
  dev::Result import(dev::ShareToken token, dev::DeviceIndex device) override {
    return call({Op::kImport, device, token.value, 0, 0, 0, 0, {}}, nullptr);
  }
  dev::Result read(uint64_t offset, void* dst, size_t n) override {
    Answer a{};
    if (n > sizeof a.bytes) return dev::Result::from_errno(EINVAL);
    const dev::Result r = call({Op::kRead, 0, 0, offset, n, 0, 0, {}}, &a);
    std::memcpy(dst, a.bytes, n);
    return r;
  }
  dev::Result fill(uint64_t offset, size_t n, uint8_t value) override {
    return call({Op::kFill, 0, 0, offset, n, 0, value, {}}, nullptr);
  }
  dev::Result set_pids(dev::ShareToken token, int32_t pid) override {
    return call({Op::kSetPids, 0, token.value, 0, 0, pid, 0, {}}, nullptr);
  }
  dev::Result export_new(dev::DeviceIndex device, uint64_t size, uint8_t value, int32_t pid,
                         dev::ShareToken* out) override {
    Answer a{};
    const dev::Result r = call({Op::kExportNew, device, 0, 0, size, pid, value, {}}, &a);
    out->value = a.value;
    return r;
  }
  dev::Result import_key(const dev::IpcKey& key, dev::DeviceIndex device,
                         uint64_t* offset) override {
    Answer a{};
    const dev::Result r = call({Op::kImportKey, device, 0, 0, 0, 0, 0, key}, &a);
    *offset = a.value;
    return r;
  }
  dev::Result set_key_pids(const dev::IpcKey& key, int32_t pid) override {
    return call({Op::kSetKeyPids, 0, 0, 0, 0, pid, 0, key}, nullptr);
  }
  dev::Result close_key(const dev::IpcKey& key) override {
    return call({Op::kCloseKey, 0, 0, 0, 0, 0, 0, key}, nullptr);
  }
  void exit() override {
    if (child_ <= 0) return;
    const Call bye{Op::kExit, 0, 0, 0, 0, 0, 0, {}};
    (void)write_all(to_, &bye, sizeof bye);
    ::close(to_);
    ::close(from_);
    int status = 0;
    (void)::waitpid(child_, &status, 0);
    child_ = -1;
  }

 private:
  dev::Result call(const Call& c, Answer* answer) {
    Answer local{};
    Answer* a = answer ? answer : &local;
    if (child_ <= 0 || !write_all(to_, &c, sizeof c) || !read_all(from_, a, sizeof *a)) {
      return dev::Result::from_errno(EPIPE);
    }
    return dev::Result::from_raw(a->result);
  }

  pid_t child_;
  int to_;
  int from_;
  int32_t pid_;
};

}  // namespace

bool read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    // A peer that stopped answering (a hung child) fails the case in a minute, not at ctest's
    // timeout.
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, kAnswerBoundMs);
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) return false;
    const ssize_t got = ::read(fd, c, n);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return false;
    }
    c += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t put = ::write(fd, c, n);
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      return false;
    }
    c += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

std::unique_ptr<PeerProcess> start(dev::DeviceBackend& current, const Serve& serve) {
  int down[2], up[2];
  if (::pipe(down) != 0) return nullptr;
  if (::pipe(up) != 0) {
    ::close(down[0]);
    ::close(down[1]);
    return nullptr;
  }
  aclvmm_test::settle_threads_before_fork();
  current.prepare_fork();
  const pid_t child = ::fork();
  if (child != 0) current.after_fork_parent();
  if (child < 0) {
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    return nullptr;
  }
  if (child == 0) {
    current.after_fork_child();  // the parent's endpoints and threads are not the child's
    ::close(down[1]);
    ::close(up[0]);
    serve(down[0], up[1]);
    ::_exit(2);  // a body that returned: never one of the harnesses'
  }
  ::close(down[0]);
  ::close(up[1]);
  Answer hello{};
  if (!read_all(up[0], &hello, sizeof hello) || hello.result != 0) {
    ::close(down[1]);
    ::close(up[0]);
    int status = 0;
    (void)::waitpid(child, &status, 0);
    return nullptr;
  }
  return std::make_unique<PipePeer>(child, down[1], up[0], static_cast<int32_t>(hello.value));
}

}  // namespace aclvmm::conformance::pipe_peer
