// The emu backend's share transport (emu-internal: only EmuSharing uses it): Linux abstract unix
// sockets, one per endpoint id (a group of 256 share ids, token.h).
//
// Abstract names (sun_path[0] == '\0') live in the network namespace, not the filesystem, so
// nothing is left behind when an exporter crashes: the name is freed with its last descriptor, and
// the kernel refuses a second bind of a live name, which makes endpoint ids (and so share ids)
// unique among live processes. Anyone in the same network namespace can connect, and anyone can
// bind a name nobody holds: the exporter decides from the importer's kernel-verified credentials
// (SO_PEERCRED), and the importer checks the listener's the same way (on a connecting socket
// SO_PEERCRED reports the listener), never from what the other side says.
//
// Timeouts follow poll(2): a negative timeout_ms means no limit. recv() and poll() take 0 as "do
// not wait"; connect() waits at least 1 ms for room in a full backlog. Every socket is non-blocking
// and every wait a poll with a deadline; send() waits at most 2 s for room.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>


namespace aclvmm::dev::emu::share {

// Who is on the other end of a connection, as the kernel reports it (never what the peer says).
struct PeerInfo {
  int pid = 0;               // in this process's pid namespace; 0 when it is not visible here
  unsigned uid = 0;
  uint64_t start_time = 0;   // process start, in the units of ShareTransport::share_clock() (accept only)
  // A share_clock() reading taken while the peer was known to run (accept only; 0 when it had
  // exited): a whitelist stamp older than this was made while this very process had its pid.
  uint64_t alive_at = 0;
};

// How processes find each other to share memory: no daemon; exported tokens are served on
// listening endpoints of the exporting process, each named by a 32-bit endpoint id (the group of
// share ids it serves), so the kernel guarantees uniqueness among live processes and the endpoint
// vanishes with the process. Connections carry small fixed-size messages and at most one file
// descriptor each. A name proves nothing: anyone may bind a free one, so both sides identify each
// other by what the kernel reports.
class ShareTransport {
 public:
  virtual ~ShareTransport() = default;
  // -EADDRINUSE when another live endpoint has this id.
  virtual int listen(uint32_t endpoint_id, int* fd) = 0;
  // -ECONNREFUSED / -ENOENT when nobody serves the id; waits at most timeout_ms. *server is the
  // process that listens there (its credentials when it called listen; no start_time).
  virtual int connect(uint32_t endpoint_id, int timeout_ms, int* fd, PeerInfo* server) = 0;
  // The same for the endpoint of an IPC key (64 characters; runtime-extra.md §3): the kernel's
  // refusal of a second bind keeps keys unique among live endpoints too. A transport without
  // key endpoints keeps the defaults.
  virtual int listen_key(const char* key, int* fd) {
    (void)key, (void)fd;
    return -EOPNOTSUPP;
  }
  virtual int connect_key(const char* key, int timeout_ms, int* fd, PeerInfo* server) {
    (void)key, (void)timeout_ms, (void)fd, (void)server;
    return -EOPNOTSUPP;
  }
  // The pid of the process on the other end of `fd` as its own pid namespace numbers it (what
  // getpid() returns there), or 0 when the kernel cannot tell (no SO_PEERPIDFD, process gone).
  virtual int peer_pid_in_own_namespace(int fd) = 0;
  // A descriptor that pins the process on the other end of `fd` (a pidfd), for a connection kept
  // beyond one exchange: the credentials the kernel recorded at connect describe that process, and
  // its pid names it only while it runs. -ENOPROTOOPT where the kernel cannot tell (before Linux
  // 6.5): such a connection is not kept. A transport without pins keeps the default.
  virtual int pin_peer(int fd, int* pidfd) {
    (void)fd, (void)pidfd;
    return -ENOPROTOOPT;
  }
  // Whether the process a pin_peer descriptor pins has exited (then the connection no longer
  // speaks for its pid).
  virtual bool exited(int pidfd) {
    (void)pidfd;
    return true;
  }
  // A connection about to be kept: the descriptor to use from now on, out of the application's
  // descriptor range where there is room (`fd` itself otherwise); *above tells whether it is out.
  virtual int place_kept(int fd, bool* above) {
    *above = false;
    return fd;
  }
  // The application's soft descriptor limit (0 when unknown or infinite).
  virtual uint64_t descriptor_limit() { return 0; }
  // -EAGAIN when no connection waits; -EMFILE / -ENFILE / -ENOBUFS / -ENOMEM when there is no
  // room for one now (it stays queued).
  virtual int accept(int listen_fd, int* conn, PeerInfo* peer) = 0;
  // Sends one message, with `pass_fd` attached unless it is -1.
  virtual int send(int fd, const void* msg, size_t n, int pass_fd) = 0;
  // Receives one message of at most n bytes within timeout_ms (-ETIMEDOUT); *got_fd is the
  // attached descriptor or -1. Returns the message length or -errno; 0 when the peer closed.
  virtual int recv(int fd, void* msg, size_t n, int* got_fd, int timeout_ms) = 0;
  // recv() from a peer pinned by `pidfd` (pin_peer): -ESRCH, and nothing read, when the pinned
  // process had exited by the time the message or hang-up was seen, since whoever holds that end
  // now does not speak for it.
  virtual int recv_pinned(int fd, int pidfd, void* msg, size_t n, int* got_fd, int timeout_ms) {
    const int rc = recv(fd, msg, n, got_fd, timeout_ms);
    if (rc >= 0 && exited(pidfd)) {
      if (*got_fd >= 0) close(*got_fd);
      *got_fd = -1;
      return -ESRCH;
    }
    return rc;
  }
  // Waits until one of `fds` is readable or timeout_ms passes (negative: no limit); sets ready[i]
  // per fd.
  virtual int poll(const int* fds, bool* ready, size_t count, int timeout_ms) = 0;
  virtual void close(int fd) = 0;
  // A wake object for a thread sleeping in poll(): readable from wake() until drain_wake().
  virtual int open_wake(int* fd) = 0;
  virtual void wake(int fd) = 0;
  virtual void drain_wake(int fd) = 0;
  // Start time of process `pid` (same units as PeerInfo::start_time), or 0 if it is gone.
  virtual uint64_t process_start_time(int pid) = 0;
  // The current time in those units: a whitelist entry stamped now predates every process that
  // starts later.
  virtual uint64_t share_clock() = 0;
  // A random 32-bit value (where the serials of share ids start).
  virtual uint32_t random_u32() = 0;
};


class UnixShareTransport final : public ShareTransport {
 public:
  int listen(uint32_t endpoint_id, int* fd) override;
  int connect(uint32_t endpoint_id, int timeout_ms, int* fd, PeerInfo* server) override;
  int listen_key(const char* key, int* fd) override;
  int connect_key(const char* key, int timeout_ms, int* fd, PeerInfo* server) override;
  // Reads the NSpid line of the peer's pidfd (/proc/self/fdinfo), Linux >= 6.5.
  int peer_pid_in_own_namespace(int fd) override;
  // SO_PEERPIDFD, moved out of the application's descriptor range (descriptor_room.h).
  int pin_peer(int fd, int* pidfd) override;
  // One poll of the pidfd: it turns readable when its process exits.
  bool exited(int pidfd) override;
  int place_kept(int fd, bool* above) override;
  uint64_t descriptor_limit() override;
  int accept(int listen_fd, int* conn, PeerInfo* peer) override;
  // A zero-length message is refused (-EINVAL): the receiver could not tell it from a hang-up.
  int send(int fd, const void* msg, size_t n, int pass_fd) override;
  // A message longer than n gives -EMSGSIZE (its attached descriptor is closed): a sequenced
  // packet's tail is discarded by the kernel, and a cut message must not pass for a whole one.
  int recv(int fd, void* msg, size_t n, int* got_fd, int timeout_ms) override;
  // One poll over the connection and the pidfd: the exit check costs no system call of its own.
  int recv_pinned(int fd, int pidfd, void* msg, size_t n, int* got_fd, int timeout_ms) override;
  // A hang-up or error on an fd counts as readable, so the caller's next recv sees it.
  int poll(const int* fds, bool* ready, size_t count, int timeout_ms) override;
  void close(int fd) override;
  // An eventfd (close-on-exec, non-blocking).
  int open_wake(int* fd) override;
  void wake(int fd) override;
  void drain_wake(int fd) override;
  uint64_t process_start_time(int pid) override;
  uint64_t share_clock() override;
  uint32_t random_u32() override;

 private:
  int listen_at(const sockaddr_un& addr, socklen_t len, int* fd);
  // recv() with `pidfd` (-1: none) watched in the same poll.
  int recv_watching(int fd, int pidfd, void* msg, size_t n, int* got_fd, int timeout_ms);
  int connect_to(const sockaddr_un& addr, socklen_t len, int timeout_ms, int* fd, PeerInfo* server);
};

}  // namespace aclvmm::dev::emu::share
