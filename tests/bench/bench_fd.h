// One byte over a unix socket, with at most one descriptor attached: the raw descriptor passing
// the sharing benchmarks compare aclvmm with (bench_share.cpp, bench_share_cold.cpp).
#pragma once

#include <sys/socket.h>

#include <cstring>

namespace bench {

// One byte, with a descriptor when fd >= 0.
inline bool send_byte(int sock, char byte, int fd) {
  iovec iov{&byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
}

// The byte received; *fd the descriptor that came with it, or -1.
inline bool recv_byte(int sock, char* byte, int* fd) {
  iovec iov{byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  *fd = -1;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return false;
  if (cmsghdr* c = CMSG_FIRSTHDR(&msg); c && c->cmsg_type == SCM_RIGHTS) {
    std::memcpy(fd, CMSG_DATA(c), sizeof *fd);
  }
  return true;
}

}  // namespace bench
