// GatedTransport: emu's share transport with its failure-injection steps (emu.share.*, the
// drv.share_* of earlier versions as aliases): each call that can fail asks the listener's gate
// first, on whichever thread makes it (the caller's, or the share listener's).
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/backend_listener.h"
#include "drivers/emu/os/physical_memory.h"
#include "drivers/emu/sharing/transport.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu::share {

class GatedTransport {
 public:
  GatedTransport(share::ShareTransport& inner, BackendListener& listener)
      : inner_(inner), gate_(listener) {}

  int listen(uint32_t endpoint_id, int* fd) {
    if (int e = injected(steps::kEmuShareListen)) return e;
    return inner_.listen(endpoint_id, fd);
  }
  int connect(uint32_t endpoint_id, int timeout_ms, int* fd, share::PeerInfo* server) {
    if (int e = injected(steps::kEmuShareConnect)) return e;
    return inner_.connect(endpoint_id, timeout_ms, fd, server);
  }
  int listen_key(const char* key, int* fd) {
    if (int e = injected(steps::kEmuShareListen)) return e;
    return inner_.listen_key(key, fd);
  }
  int connect_key(const char* key, int timeout_ms, int* fd, share::PeerInfo* server) {
    if (int e = injected(steps::kEmuShareConnect)) return e;
    return inner_.connect_key(key, timeout_ms, fd, server);
  }
  int peer_pid_in_own_namespace(int fd) { return inner_.peer_pid_in_own_namespace(fd); }
  // Not steps: a connection that cannot be pinned is simply not kept.
  int pin_peer(int fd, int* pidfd) { return inner_.pin_peer(fd, pidfd); }
  bool exited(int pidfd) { return inner_.exited(pidfd); }
  int place_kept(int fd, bool* above) { return inner_.place_kept(fd, above); }
  uint64_t descriptor_limit() { return inner_.descriptor_limit(); }
  int accept(int listen_fd, int* conn, share::PeerInfo* peer) {
    if (int e = injected(steps::kEmuShareAccept)) return e;
    return inner_.accept(listen_fd, conn, peer);
  }
  int send(int fd, const void* msg, size_t n, int pass_fd) {
    if (int e = injected(steps::kEmuShareSend)) return e;
    return inner_.send(fd, msg, n, pass_fd);
  }
  int recv(int fd, void* msg, size_t n, int* got_fd, int timeout_ms) {
    if (int e = injected(steps::kEmuShareRecv)) {
      if (got_fd) *got_fd = -1;
      return e;
    }
    return inner_.recv(fd, msg, n, got_fd, timeout_ms);
  }
  int recv_pinned(int fd, int pidfd, void* msg, size_t n, int* got_fd, int timeout_ms) {
    if (int e = injected(steps::kEmuShareRecv)) {
      if (got_fd) *got_fd = -1;
      return e;
    }
    return inner_.recv_pinned(fd, pidfd, msg, n, got_fd, timeout_ms);
  }
  int poll(const int* fds, bool* ready, size_t count, int timeout_ms) {
    if (int e = injected(steps::kEmuSharePoll)) return e;
    return inner_.poll(fds, ready, count, timeout_ms);
  }
  void close(int fd) { inner_.close(fd); }
  // Not steps: the listener's wake object is made with the listener thread, whose own failure
  // (a thread that cannot be created) already exercises that rollback.
  int open_wake(int* fd) { return inner_.open_wake(fd); }
  void wake(int fd) { inner_.wake(fd); }
  void drain_wake(int fd) { inner_.drain_wake(fd); }
  uint64_t share_clock() { return inner_.share_clock(); }
  uint32_t random_u32() { return inner_.random_u32(); }

 private:
  // The rule's code as the transport reports failures: a negative errno.
  int injected(const char* step) const { return gate_.check(step).raw(); }

  share::ShareTransport& inner_;
  InjectionGate gate_;
};

// Closes a received descriptor on every path that does not take it over (by setting it to -1).
struct ReceivedFd {
  GatedTransport& transport;
  int* fd;
  ~ReceivedFd() {
    if (*fd >= 0) transport.close(*fd);
  }
};

}  // namespace aclvmm::dev::emu::share
