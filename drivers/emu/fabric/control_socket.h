// TCP for the pod's control port (docs/fabric.md §3.3): the port every exporting process of a
// host serves together (SO_REUSEPORT), and the importer's connection to it, which it keeps for as
// long as it holds the memory (the exporter counts holders by these connections).
//
// Every call is bounded: the control port faces the network, where a peer may stop answering or
// the link may be cut. Keep-alive bounds how long a dead holder's connection goes unnoticed.
// Results are 0 or -errno; descriptors are non-blocking and close-on-exec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace aclvmm::dev::emu::fabric::control {

// Listens on address:port with SO_REUSEPORT, which the kernel grants only to sockets of the
// same effective uid: another local user cannot serve this host's exports.
int listen_shared(const std::string& address, uint16_t port, int* fd);
// A waiting connection (-EAGAIN when none).
int accept_one(int listen_fd, int* conn);
// Connects within timeout_ms: -ECONNREFUSED when nothing listens, -ETIMEDOUT, -EHOSTUNREACH...
int connect_bounded(const std::string& address, uint16_t port, int timeout_ms, int* fd);
// All n bytes within timeout_ms: -ETIMEDOUT, -ECONNRESET when the peer closed.
int send_all(int fd, const void* buf, size_t n, int timeout_ms);
int recv_all(int fd, void* buf, size_t n, int timeout_ms);
// How many bytes wait to be read without blocking (MSG_PEEK), or -errno; -ECONNRESET at the end
// of the stream.
int peek(int fd, void* buf, size_t n);
// The numeric address of the connection's other end.
bool peer_address(int fd, std::string* out);
// Whether fd is a connected TCP socket (a relayed connection must be one).
bool is_tcp(int fd);
// Keep-alive probes after a few idle seconds, and a bound on unacknowledged data: a holder whose
// host vanished is dropped within about ten seconds.
void keep_alive(int fd);

}  // namespace aclvmm::dev::emu::fabric::control

namespace aclvmm::dev::emu::fabric::control {
// Whether two numeric addresses name the same host address (textual forms differ for IPv6).
bool same_address(const std::string& a, const std::string& b);
}  // namespace aclvmm::dev::emu::fabric::control
