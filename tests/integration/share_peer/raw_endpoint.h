// The sharing wire spoken without the library: what a hostile client, a squatter or a fake
// exporter sends and receives (share_security_test.cpp, share_hostile_*_test.cpp).
//
// The wire format of drivers/emu/sharing/wire.h (docs/sharing.md §5): a request of 24 bytes, a
// reply of 32 with the memory's descriptor attached on success, over the abstract unix socket
// that drivers/emu/sharing/transport.cpp names after the share id. Replicated here on purpose: each test
// that uses it has a control case proving the replica right, so its malformed variants are
// malformed in one way only.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace share_test {

struct WireRequest {
  uint32_t magic, kind;
  uint64_t token;
  int32_t device, pad;
};
struct WireReply {
  uint32_t magic;
  int32_t code;
  uint64_t size;
  uint32_t side;
  int32_t device;
  uint32_t page_type, mem_type;
};
static_assert(sizeof(WireRequest) == 24 && sizeof(WireReply) == 32, "the wire layout");
constexpr uint32_t kWireMagic = 0x4d4d5641, kWireImport = 1, kWireProbe = 2;

// Share ids: bits 0-17 the exporter's pid, bits 18-31 its serial (drivers/emu/sharing/token.h).
inline uint32_t share_id_for(uint32_t pid, uint32_t serial) { return (serial << 18) | (pid & 0x3ffff); }
// The endpoint serving a share id: that of its group of 256 serials (serial bits 0-7 zero).
inline uint32_t endpoint_id_of(uint32_t share_id) { return share_id & ~(0xffu << 18); }

inline socklen_t endpoint_address(uint32_t share_id, sockaddr_un* a) {
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  const int n = std::snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "aclvmm-shares-%08x",
                              endpoint_id_of(share_id));
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// A connection to the endpoint serving a share id (-1 when nobody listens).
inline int connect_endpoint_id(uint32_t share_id, int extra_flags = 0) {
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | extra_flags, 0);
  sockaddr_un a;
  const socklen_t len = endpoint_address(share_id, &a);
  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    const int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}
inline int connect_endpoint(uint64_t token) { return connect_endpoint_id(static_cast<uint32_t>(token)); }

// Binds the endpoint name serving a share id, as anyone may for a name nobody holds (-1 when
// taken).
inline int bind_endpoint_id(uint32_t share_id) {
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a;
  const socklen_t len = endpoint_address(share_id, &a);
  if (s >= 0 && (bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 64) != 0)) {
    close(s);
    return -1;
  }
  return s;
}

inline std::string request(uint64_t token, uint32_t kind = kWireImport, uint32_t magic = kWireMagic,
                           int32_t pad = 0) {
  const WireRequest r{magic, kind, token, 0, pad};
  return std::string(reinterpret_cast<const char*>(&r), sizeof r);
}

// One message, with `fds` attached; false when the send failed.
inline bool send_with_fds(int s, const std::string& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()) + 8);
  if (!fds.empty()) {
    mh.msg_control = control.data();
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(s, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}
// With `pass` copies of stdin's descriptor attached.
inline bool send_message(int s, const std::string& bytes, int pass = 0) {
  return send_with_fds(s, bytes, std::vector<int>(static_cast<size_t>(pass), 0));
}

// What came back within timeout_ms: a reply (and its descriptor), the other side hanging up, or
// nothing at all.
struct Answer {
  enum { kReply, kHangUp, kSilence } kind = kSilence;
  WireReply reply{};
  int fd = -1;
  ~Answer() {
    if (fd >= 0) close(fd);
  }
};
inline void await(int s, int timeout_ms, Answer* a) {
  pollfd p{s, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return;
  char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov{&a->reply, sizeof a->reply};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  // An exporter that closes with a message of ours unread resets the connection, and the kernel
  // reports the reset before the reply still queued here: read on once to get it.
  if (n < 0 && errno == ECONNRESET) n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); n >= 0 && c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_type == SCM_RIGHTS) std::memcpy(&a->fd, CMSG_DATA(c), sizeof(int));
  }
  a->kind = n == static_cast<ssize_t>(sizeof a->reply) ? Answer::kReply : Answer::kHangUp;
}

// Memory as the library makes it (a memfd named like its own, sealed like it) holding `bytes`;
// `seals` replaces the library's seals when not -1.
inline int sealed_memfd(const std::string& bytes, int seals = -1) {
  const int fd = memfd_create("aclvmm-phys", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  const int want = seals == -1 ? F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL : seals;
  if (ftruncate(fd, static_cast<off_t>(bytes.size())) != 0 ||
      pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()) ||
      (want != 0 && fcntl(fd, F_ADD_SEALS, want) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

// The abstract names of aclvmm endpoints that are live now (from /proc/net/unix), as endpoint ids
// (the first share id of each group).
inline std::vector<uint32_t> live_endpoint_ids() {
  std::vector<uint32_t> ids;
  FILE* f = std::fopen("/proc/net/unix", "re");
  if (!f) return ids;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    const char* at = std::strstr(line, "@aclvmm-shares-");
    if (at) ids.push_back(static_cast<uint32_t>(std::strtoul(at + 15, nullptr, 16)));
  }
  std::fclose(f);
  return ids;
}

// The live endpoints whose ids name `pid` (its low 18 bits, as share ids do).
inline std::set<uint32_t> endpoints_of(pid_t pid) {
  std::set<uint32_t> ids;
  for (uint32_t id : live_endpoint_ids()) {
    if ((id & 0x3ffff) == (static_cast<uint32_t>(pid) & 0x3ffff)) ids.insert(id);
  }
  return ids;
}

// Waits up to 2 s until exactly `want` endpoints name `pid` (after its last export ends, a
// process's listener keeps its endpoint for a moment before closing it).
inline bool endpoints_become(pid_t pid, size_t want) {
  for (int i = 0; i < 200; ++i) {
    if (endpoints_of(pid).size() == want) return true;
    usleep(10 * 1000);
  }
  return false;
}

// The link of every open descriptor of this process, by number.
inline std::map<int, std::string> open_links() {
  std::map<int, std::string> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  const int own = dirfd(d);
  while (dirent* ent = readdir(d)) {
    if (ent->d_name[0] == '.' || std::atoi(ent->d_name) == own) continue;
    char link[256] = {};
    const std::string path = std::string("/proc/self/fd/") + ent->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0) out[std::atoi(ent->d_name)] = link;
  }
  closedir(d);
  return out;
}

}  // namespace share_test
