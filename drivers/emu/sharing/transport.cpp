#include "drivers/emu/sharing/transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "drivers/emu/os/descriptor_room.h"
#include "drivers/host/process_facts.h"

// SO_PEERPIDFD (Linux 6.5) is missing from older libc headers; 77 is its asm-generic value, which
// is what these architectures use. Elsewhere the pid-reuse check below is simply skipped.
#if !defined(SO_PEERPIDFD) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
                               defined(__riscv) || defined(__arm__) || defined(__loongarch__))
#define SO_PEERPIDFD 77
#endif

namespace aclvmm::dev::emu::share {
namespace {

constexpr int kListenBacklog = 64;
// Sockets are non-blocking, so that no call waits without a bound and none needs socket timeouts
// set (two system calls per connection). A send that finds the peer's queue full waits this long
// for room: an importer's request and the exporter's reply are a few bytes, so only a stuck or
// hostile peer ever makes it wait.
constexpr int kSendTimeoutMs = 2000;
// A connect that finds the listener's backlog full retries at this interval until its deadline
// (a non-blocking unix connect does not wait for room itself).
constexpr int kConnectRetryMs = 1;
// Room for a few descriptors, so that a peer that attaches more than one gets the extras closed
// rather than silently dropped by the kernel; a flood beyond this is reported as -EPROTO.
constexpr size_t kMaxFdsPerMessage = 8;

socklen_t share_address(uint32_t endpoint_id, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  // The length passed to bind/connect delimits an abstract name; the trailing zeros of sun_path
  // would otherwise become part of it.
  int len = std::snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "aclvmm-shares-%08x",
                          endpoint_id);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(len));
}

// An IPC key's endpoint: the key is 64 hex characters, so the name fits sun_path with room.
socklen_t key_address(const char* key, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  int len = std::snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "aclvmm-ipc-%.64s", key);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(len));
}

int64_t monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void close_fds_in(msghdr* mh) {
  for (cmsghdr* c = CMSG_FIRSTHDR(mh); c != nullptr; c = CMSG_NXTHDR(mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));  // CMSG_DATA may be unaligned
      ::close(fd);
    }
  }
}

// Keeps the first descriptor that arrived and closes every other one.
int take_first_fd(msghdr* mh) {
  int kept = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(mh); c != nullptr; c = CMSG_NXTHDR(mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      if (kept < 0) {
        kept = fd;
      } else {
        ::close(fd);
      }
    }
  }
  return kept;
}

// The pid (0 when it is not visible in this pid namespace) and uid the kernel recorded for the
// other end of a unix socket.
int peer_credentials(int s, PeerInfo* peer) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -errno;
  *peer = PeerInfo{};
  peer->pid = cred.pid;
  peer->uid = cred.uid;
  return 0;
}

// A process that has exited since the kernel recorded the peer's credentials may have had its pid
// reused, and /proc would then describe a stranger. A pidfd pins the exact process: if it is still
// running after /proc was read, what was read is that process's. Returns false when the peer is
// known to be gone; true when it is alive or the kernel cannot tell (no SO_PEERPIDFD).
bool peer_still_running(int conn) {
#ifdef SO_PEERPIDFD
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0) {
    return errno == ENOPROTOOPT;
  }
  pollfd p{pidfd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, 0);
  } while (r < 0 && errno == EINTR);
  ::close(pidfd);
  // A pidfd becomes readable when its process exits.
  return r == 0;
#else
  (void)conn;
  return true;
#endif
}

}  // namespace

int UnixShareTransport::listen(uint32_t endpoint_id, int* fd) {
  sockaddr_un addr;
  const socklen_t len = share_address(endpoint_id, &addr);
  return listen_at(addr, len, fd);
}

int UnixShareTransport::listen_key(const char* key, int* fd) {
  if (key == nullptr) return -EINVAL;
  sockaddr_un addr;
  const socklen_t len = key_address(key, &addr);
  return listen_at(addr, len, fd);
}

int UnixShareTransport::connect(uint32_t endpoint_id, int timeout_ms, int* fd, PeerInfo* server) {
  sockaddr_un addr;
  const socklen_t len = share_address(endpoint_id, &addr);
  return connect_to(addr, len, timeout_ms, fd, server);
}

int UnixShareTransport::connect_key(const char* key, int timeout_ms, int* fd, PeerInfo* server) {
  if (key == nullptr) return -EINVAL;
  sockaddr_un addr;
  const socklen_t len = key_address(key, &addr);
  return connect_to(addr, len, timeout_ms, fd, server);
}

int UnixShareTransport::listen_at(const sockaddr_un& addr, socklen_t len, int* fd) {
  if (fd == nullptr) return -EINVAL;
  *fd = -1;
  // Non-blocking so that a poll wake-up whose connection was already withdrawn cannot block accept.
  // An endpoint lives as long as its exports: out of the application's descriptor range, as
  // their memory is (descriptor_room.h).
  int s = os::open_held(
      [] {
        const int made = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        return made >= 0 ? made : -errno;
      },
      nullptr);
  if (s < 0) return s;
  if (::bind(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::listen(s, kListenBacklog) != 0) {
    int err = errno;
    ::close(s);
    return -err;
  }
  *fd = s;
  return 0;
}

int UnixShareTransport::connect_to(const sockaddr_un& addr, socklen_t len, int timeout_ms, int* fd,
                                   PeerInfo* server) {
  if (fd == nullptr || server == nullptr) return -EINVAL;
  *fd = -1;
  int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -errno;
  const int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + std::max(timeout_ms, 1);
  while (::connect(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    int err = errno;
    // A unix connect is synchronous: after EINTR the socket is still unconnected and may retry.
    if (err == EINTR) continue;
    // EAGAIN: the listener's backlog is full (it is slow or flooded); room comes when it accepts.
    if (err == EAGAIN && (deadline < 0 || monotonic_ms() < deadline)) {
      ::poll(nullptr, 0, kConnectRetryMs);
      continue;
    }
    ::close(s);
    return err == EAGAIN ? -ETIMEDOUT : -err;
  }
  // On the connecting side SO_PEERCRED is the listener's: recorded by the kernel at listen().
  int rc = peer_credentials(s, server);
  if (rc != 0) {
    ::close(s);
    return rc;
  }
  *fd = s;
  return 0;
}

int UnixShareTransport::peer_pid_in_own_namespace(int fd) {
#ifdef SO_PEERPIDFD
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0) return 0;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
  char buf[1024];
  size_t got = 0;
  const bool ok = dev::host::read_small_file(path, buf, sizeof(buf) - 1, &got);
  ::close(pidfd);
  if (!ok) return 0;
  buf[got] = '\0';
  // "NSpid:" lists the pid from the namespace of this /proc down to the process's own; -1 once
  // the process is gone, 0 when it is outside this namespace's view.
  const char* line = std::strstr(buf, "\nNSpid:");
  if (line == nullptr) return 0;
  long last = 0;
  for (const char* p = line + 7; *p != '\0' && *p != '\n';) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    last = v;
    p = end;
  }
  return last > 0 ? static_cast<int>(last) : 0;
#else
  (void)fd;
  return 0;
#endif
}

int UnixShareTransport::pin_peer(int fd, int* pidfd) {
  if (pidfd == nullptr) return -EINVAL;
  *pidfd = -1;
#ifdef SO_PEERPIDFD
  int got = -1;
  socklen_t len = sizeof(got);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &got, &len) != 0) return -errno;
  // Kept as long as the connection: out of the application's range, as the connection is.
  *pidfd = os::place_held(got, nullptr);
  return 0;
#else
  (void)fd;
  return -ENOPROTOOPT;
#endif
}

bool UnixShareTransport::exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, 0);
  } while (r < 0 && errno == EINTR);
  // An error (a descriptor that is no pidfd) counts as gone: the connection is then not trusted.
  return r != 0;
}

int UnixShareTransport::place_kept(int fd, bool* above) {
  return os::place_held(fd, nullptr, above);
}

uint64_t UnixShareTransport::descriptor_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 0;
  return lim.rlim_cur;
}

int UnixShareTransport::open_wake(int* fd) {
  if (fd == nullptr) return -EINVAL;
  *fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return *fd >= 0 ? 0 : -errno;
}

void UnixShareTransport::wake(int fd) {
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = ::write(fd, &one, sizeof(one));
  } while (r < 0 && errno == EINTR);
  // EAGAIN: the counter is saturated, which means "awake" already.
}

void UnixShareTransport::drain_wake(int fd) {
  uint64_t count = 0;
  ssize_t r;
  do {
    r = ::read(fd, &count, sizeof(count));
  } while (r < 0 && errno == EINTR);
}

int UnixShareTransport::accept(int listen_fd, int* conn, PeerInfo* peer) {
  if (conn == nullptr || peer == nullptr) return -EINVAL;
  *conn = -1;
  *peer = PeerInfo{};
  int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (c < 0) {
    int err = errno;
    // All of these mean "no connection to serve now"; the caller goes back to poll.
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return -EAGAIN;
    return -err;
  }
  int rc = peer_credentials(c, peer);
  if (rc != 0) {
    ::close(c);
    return rc;
  }
  // Read before the check that the peer still runs: it ran at connect and at the check, so it ran
  // at this reading too.
  peer->alive_at = share_clock();
  peer->start_time = process_start_time(peer->pid);
  // 0 ("gone") rather than a possibly reused pid's start time.
  if (peer->start_time != 0 && !peer_still_running(c)) peer->start_time = 0;
  if (peer->start_time == 0) peer->alive_at = 0;
  *conn = c;
  return 0;
}

int UnixShareTransport::send(int fd, const void* msg, size_t n, int pass_fd) {
  if (n == 0 || msg == nullptr) return -EINVAL;
  iovec iov{const_cast<void*>(msg), n};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(control, 0, sizeof(control));
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  const int64_t deadline = monotonic_ms() + kSendTimeoutMs;
  ssize_t r;
  for (;;) {
    // MSG_NOSIGNAL: a peer that hung up must give -EPIPE, not kill the process with SIGPIPE.
    r = ::sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0 || errno == EINTR) {
      if (r >= 0) break;
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
    const int64_t left = deadline - monotonic_ms();
    if (left <= 0) return -ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return -errno;
  }
  // Sequenced packets are sent whole or not at all; anything else is a kernel surprise.
  return static_cast<size_t>(r) == n ? 0 : -EIO;
}

int UnixShareTransport::recv(int fd, void* msg, size_t n, int* got_fd, int timeout_ms) {
  return recv_watching(fd, -1, msg, n, got_fd, timeout_ms);
}

int UnixShareTransport::recv_pinned(int fd, int pidfd, void* msg, size_t n, int* got_fd,
                                    int timeout_ms) {
  if (pidfd < 0) return -EINVAL;
  return recv_watching(fd, pidfd, msg, n, got_fd, timeout_ms);
}

int UnixShareTransport::recv_watching(int fd, int pidfd, void* msg, size_t n, int* got_fd,
                                      int timeout_ms) {
  if (got_fd == nullptr || (msg == nullptr && n != 0)) return -EINVAL;
  *got_fd = -1;
  const int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
  for (;;) {
    int wait_ms = -1;
    if (deadline >= 0) {
      int64_t left = deadline - monotonic_ms();
      wait_ms = left > 0 ? static_cast<int>(left) : 0;
    }
    // "Do not wait" asks the socket directly: its EAGAIN is the answer (the listener reads a
    // request it expects to be there already, and a poll first would be one more system call).
    if (timeout_ms != 0 || pidfd >= 0) {
      pollfd p[2] = {{fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
      int pr = ::poll(p, pidfd >= 0 ? 2 : 1, wait_ms);
      if (pr < 0) {
        if (errno == EINTR) continue;
        return -errno;
      }
      // Checked before the message: a pidfd turns readable at its process's exit, so one that is
      // not readable now means the process ran when the message was already there.
      if (pidfd >= 0 && p[1].revents != 0) return -ESRCH;
      if (pr == 0) return -ETIMEDOUT;
      if (p[0].revents & POLLNVAL) return -EBADF;
    }

    iovec iov{msg, n};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) unsigned char control[CMSG_SPACE(kMaxFdsPerMessage * sizeof(int))];
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    // MSG_DONTWAIT: poll's readiness may already be gone (another reader, a withdrawn message);
    // then wait again within the same deadline instead of blocking past it.
    ssize_t r = ::recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (timeout_ms == 0) return -ETIMEDOUT;
        continue;
      }
      return -errno;
    }
    if (mh.msg_flags & MSG_CTRUNC) {
      // Descriptors that did not fit were dropped by the kernel; the message cannot be trusted.
      close_fds_in(&mh);
      return -EPROTO;
    }
    if (mh.msg_flags & MSG_TRUNC) {
      close_fds_in(&mh);
      return -EMSGSIZE;
    }
    int passed = take_first_fd(&mh);
    if (r == 0) {
      // A zero-length message reads like a hang-up; do not hand out a descriptor with it.
      if (passed >= 0) ::close(passed);
      return 0;
    }
    *got_fd = passed;
    return static_cast<int>(r);
  }
}

int UnixShareTransport::poll(const int* fds, bool* ready, size_t count, int timeout_ms) {
  if (count == 0) return 0;
  if (fds == nullptr || ready == nullptr) return -EINVAL;
  // The listener polls on every wake-up: its usual sets live on the stack, and a larger one in a
  // buffer of the calling thread that only grows. A thread that allocates at every turn of its
  // loop makes a fork of the process unsafe under allocators that are not fork-safe (ASan's: a
  // child forked while the thread held an allocator lock blocks at its first allocation).
  constexpr size_t kOnStack = 64;
  pollfd stack_set[kOnStack];
  thread_local std::vector<pollfd> heap_set;
  pollfd* p = stack_set;
  if (count > kOnStack) {
    if (heap_set.size() < count) heap_set.resize(count);
    p = heap_set.data();
  }
  for (size_t i = 0; i < count; ++i) {
    p[i] = pollfd{fds[i], POLLIN, 0};
    ready[i] = false;
  }
  int r = ::poll(p, static_cast<nfds_t>(count), timeout_ms);
  if (r < 0) return errno == EINTR ? 0 : -errno;
  for (size_t i = 0; i < count; ++i) {
    if (p[i].revents & POLLNVAL) return -EBADF;
    ready[i] = p[i].revents != 0;
  }
  return r;
}

void UnixShareTransport::close(int fd) {
  // Not retried on EINTR: Linux releases the descriptor even then, and a retry could close a
  // descriptor another thread has just been given.
  if (fd >= 0) ::close(fd);
}

// The parser the statistics segments' owners and the monitor use as well: one answer per pid.
uint64_t UnixShareTransport::process_start_time(int pid) {
  return dev::host::process_start_time(pid);
}

// The kernel computes /proc/<pid>/stat's starttime as the fork's CLOCK_BOOTTIME truncated to
// clock ticks (USER_HZ; 10 ms at 100 Hz), and so does this: both truncate the same clock, so a
// process started after the stamp never has a smaller start time. Ticks are coarse, though: a
// process started within the same tick as the stamp gets start_time == stamp and is treated as
// started before it. A whitelist therefore refuses a pid only if its start_time > stamp, which
// can admit a pid reused within the stamp's own tick but never refuses the process it meant.
uint64_t UnixShareTransport::share_clock() {
  static const long hz = [] {
    long v = ::sysconf(_SC_CLK_TCK);
    return v > 0 ? v : 100;
  }();
  timespec ts{};
  if (::clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return 0;
  unsigned __int128 ns = static_cast<unsigned __int128>(ts.tv_sec) * 1000000000u +
                         static_cast<unsigned __int128>(ts.tv_nsec);
  // Same arithmetic as the kernel's nsec_to_clock_t, which divides when USER_HZ divides 1e9.
  if (1000000000 % hz == 0) return static_cast<uint64_t>(ns / (1000000000 / hz));
  return static_cast<uint64_t>(ns * static_cast<unsigned>(hz) / 1000000000u);
}

uint32_t UnixShareTransport::random_u32() {
  for (;;) {
    uint32_t v = 0;
    ssize_t r;
    do {
      r = ::getrandom(&v, sizeof(v), 0);
    } while (r < 0 && errno == EINTR);
    if (r != static_cast<ssize_t>(sizeof(v))) {
      // getrandom is missing (ENOSYS, old kernels) or filtered (seccomp): fall back.
      size_t got = 0;
      int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        while (got < sizeof(v)) {
          ssize_t n = ::read(fd, reinterpret_cast<unsigned char*>(&v) + got, sizeof(v) - got);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        ::close(fd);
      }
      if (got != sizeof(v)) {
        // No entropy source at all: share ids only need to be unlikely to collide, and a
        // collision is caught by listen's -EADDRINUSE, so a clock-based mix is good enough.
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        static std::atomic<uint64_t> counter{0};
        uint64_t x = (static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec) ^
                     (static_cast<uint64_t>(::getpid()) << 32) ^
                     ((counter.fetch_add(1) + 1) * 0x9e3779b97f4a7c15ull);
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebull;
        x ^= x >> 31;
        v = static_cast<uint32_t>(x ^ (x >> 32));
      }
    }
    // 0 is never a valid share id.
    if (v != 0) return v;
  }
}

}  // namespace aclvmm::dev::emu::share
