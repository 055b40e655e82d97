#include "drivers/emu/fabric/control_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace aclvmm::dev::emu::fabric::control {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBacklog = 128;

// The socket address of a numeric IPv4 or IPv6 address; false when it is neither.
bool to_sockaddr(const std::string& address, uint16_t port, sockaddr_storage* out, socklen_t* len) {
  std::memset(out, 0, sizeof *out);
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *len = sizeof *v4;
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *len = sizeof *v6;
    return true;
  }
  return false;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) + 1;
}

// Waits for `events` on fd until the deadline: 0, -ETIMEDOUT, or -errno.
int wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return 0;
    if (n == 0) return -ETIMEDOUT;
    if (errno != EINTR) return -errno;
  }
}

}  // namespace

int listen_shared(const std::string& address, uint16_t port, int* fd) {
  sockaddr_storage sa;
  socklen_t len = 0;
  if (!to_sockaddr(address, port, &sa, &len)) return -EINVAL;
  const int s = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  const int one = 1;
  if (::setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(s, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(s, kBacklog) != 0) {
    const int e = errno;
    ::close(s);
    return -e;
  }
  *fd = s;
  return 0;
}

int accept_one(int listen_fd, int* conn) {
  const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (c < 0) return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  *conn = c;
  return 0;
}

int connect_bounded(const std::string& address, uint16_t port, int timeout_ms, int* fd) {
  sockaddr_storage sa;
  socklen_t len = 0;
  if (!to_sockaddr(address, port, &sa, &len)) return -EINVAL;
  const int s = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  int rc = 0;
  if (::connect(s, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    if (errno != EINPROGRESS) {
      rc = -errno;
    } else {
      rc = wait_for(s, POLLOUT, Clock::now() + std::chrono::milliseconds(timeout_ms));
      int err = 0;
      socklen_t err_len = sizeof err;
      if (rc == 0 && ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) rc = -errno;
      if (rc == 0 && err != 0) rc = -err;
    }
  }
  if (rc != 0) {
    ::close(s);
    return rc;
  }
  const int one = 1;
  (void)::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *fd = s;
  return 0;
}

int send_all(int fd, const void* buf, size_t n, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return errno == EPIPE ? -ECONNRESET : -errno;
    if (int rc = wait_for(fd, POLLOUT, deadline)) return rc;
  }
  return 0;
}

int recv_all(int fd, void* buf, size_t n, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k == 0) return -ECONNRESET;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
    if (int rc = wait_for(fd, POLLIN, deadline)) return rc;
  }
  return 0;
}

int peek(int fd, void* buf, size_t n) {
  const ssize_t k = ::recv(fd, buf, n, MSG_DONTWAIT | MSG_PEEK);
  if (k > 0) return static_cast<int>(k);
  if (k == 0) return -ECONNRESET;
  return errno == EWOULDBLOCK ? 0 : -errno;
}

bool peer_address(int fd, std::string* out) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return false;
  char text[INET6_ADDRSTRLEN] = "";
  const void* raw =
      sa.ss_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&sa)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&sa)->sin6_addr);
  if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6) return false;
  if (inet_ntop(sa.ss_family, raw, text, sizeof text) == nullptr) return false;
  *out = text;
  return true;
}

bool is_tcp(int fd) {
  int type = 0, protocol = 0, domain = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return false;
  len = sizeof protocol;
  if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0) return false;
  len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  std::string ignored;
  return type == SOCK_STREAM && protocol == IPPROTO_TCP &&
         (domain == AF_INET || domain == AF_INET6) && peer_address(fd, &ignored);
}

void keep_alive(int fd) {
  const int on = 1, idle_s = 3, interval_s = 1, probes = 3;
  const unsigned user_timeout_ms = 8000;
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

bool same_address(const std::string& a, const std::string& b) {
  sockaddr_storage x, y;
  socklen_t lx = 0, ly = 0;
  if (!to_sockaddr(a, 0, &x, &lx) || !to_sockaddr(b, 0, &y, &ly) || lx != ly) return false;
  return std::memcmp(&x, &y, lx) == 0;
}

}  // namespace aclvmm::dev::emu::fabric::control
