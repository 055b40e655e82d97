// The emu backend's share transport: Linux abstract unix sockets, one per exported share id.
//
// Abstract names (sun_path[0] == '\0') live in the network namespace, not the filesystem, so
// nothing is left behind when an exporter crashes: the name is freed with its last descriptor, and
// the kernel refuses a second bind of a live name, which makes share ids unique among live tokens.
// Anyone in the same network namespace can connect, and anyone can bind a name nobody holds: the
// exporter decides from the importer's kernel-verified credentials (SO_PEERCRED), and the importer
// checks the listener's the same way (on a connecting socket SO_PEERCRED reports the listener),
// never from what the other side says.
//
// Timeouts follow poll(2): a negative timeout_ms means no limit. recv() and poll() take 0 as "do not
// wait"; connect() cannot express that with socket timeouts and waits at least 1 ms.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/driver.h"

namespace aclvmm::drv::emu {

class UnixShareTransport final : public ShareTransport {
 public:
  int listen(uint32_t share_id, int* fd) override;
  int connect(uint32_t share_id, int timeout_ms, int* fd, PeerInfo* server) override;
  // Reads the NSpid line of the peer's pidfd (/proc/self/fdinfo), Linux >= 6.5.
  int peer_pid_in_own_namespace(int fd) override;
  int accept(int listen_fd, int* conn, PeerInfo* peer) override;
  // A zero-length message is refused (-EINVAL): the receiver could not tell it from a hang-up.
  int send(int fd, const void* msg, size_t n, int pass_fd) override;
  // A message longer than n gives -EMSGSIZE (its attached descriptor is closed): a sequenced
  // packet's tail is discarded by the kernel, and a cut message must not pass for a whole one.
  int recv(int fd, void* msg, size_t n, int* got_fd, int timeout_ms) override;
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
};

}  // namespace aclvmm::drv::emu
