// aclvmm_share_peer: the "other process" of the sharing tests (share_*_test.cpp). A plain program
// linked with libascendcl only: it reads one command per line on stdin and answers exactly one
// line on stdout, "<code> [values...]", where <code> is the aclError of the ACL call the command
// makes (or -1 for a malformed command / a system error). End of input exits normally (exit(0),
// so the library's exit-time cleanup runs, like a program that forgets aclFinalize).
//
// Slots 0..31 hold one physical handle each plus one device virtual range (a mapping of the handle
// or an aclrtMalloc block). Tokens and handles are hexadecimal; blobs are hex strings of bytes.
//
//   init | fin | dev D | reset D           aclInit(NULL) / aclFinalize / aclrtSetDevice /
//   ResetDeviceForce counts                                  0 <open fds> <threads>            (no
//   ACL call) tgid | pid                              <rc> <aclrtDeviceGetBareTgid> / 0 <getpid()>
//   alloc S D SIZE [ATTR]                   aclrtMallocPhysical on device D (memAttr ATTR, default
//   HBM_HUGE) free S                                  aclrtFreePhysical export S FLAGS <rc> <token>
//   export2 S FLAGS TYPE                    <rc> <hex of the buffer>: 16 bytes (DEFAULT) or 128
//   bytes
//                                           (FABRIC), pre-filled with 0xEE before the call
//   setpid TOKEN PID...                     aclrtMemSetPidToShareableHandle(TOKEN, pids, count)
//   setpid2 TYPE HEX PID...                 aclrtMemSetPidToShareableHandleV2
//   import S TOKEN D                        <rc> <handle>
//   import2 S TYPE HEX FLAGS                <rc> <handle>   (V2, onto the current device)
//   map S SIZE | unmap S                    reserve SIZE + aclrtMapMem / aclrtUnmapMem + release
//   access S D                              aclrtMemSetAccess(slot range, READWRITE for device D)
//   malloc S SIZE | mfree S                 aclrtMalloc on the current device / aclrtFree
//   write S OFF N SEED                      aclrtMemcpy H2D of peer_pattern(N, SEED) at range + OFF
//   check S OFF N SEED                      <rc> <1 if the N bytes at range + OFF equal the
//   pattern> props S                                 <rc> <memAttr> <location.type> <location.id>
//   stats                                   0 <aclvmmStatsJson on one line>
//   udpbind | udprecv | udpsend PORT HEX    UDP on 127.0.0.1: 0 <port> / <rc> <hex of 128 bytes> /
//   rc stress PATH SLOTS ROUNDS INDEX          ROUNDS rounds of import + map + check all bytes +
//   unmap +
//                                           free of the tokens on the board PATH (stress_board.h),
//                                           as importer INDEX: 0 <ok> <unknown> <denied> <breaches>
//                                           <bad> [first problem]; breaches are imports that should
//                                           have been refused and wrong bytes, bad any other
//                                           failure
//   halloc S SIZE                           aclrtMallocPhysical of host memory (location HOST)
//   cpuwrite S OFF N SEED | cpucheck S OFF N SEED
//                                           the CPU writes / compares peer_pattern(N, SEED) at the
//                                           slot's (host-mapped) range + OFF directly: <rc> [<1 if
//                                           equal>]
//   zeros S OFF N                           <rc> <1 if the N bytes at range + OFF read (D2H) as
//   zeros> memset S OFF N V | filled S OFF N V     aclrtMemset of N bytes V at range + OFF / <rc>
//   <1 if they
//                                           read (D2H) as V>
//   d2d S OFF T TOFF N                      aclrtMemcpy DEVICE_TO_DEVICE of N bytes from slot T's
//   range
//                                           + TOFF to slot S's range + OFF
//   hostaccess S                            aclrtMemSetAccess(slot range, READWRITE for the HOST)
//   async S OFF N SEED                      on a new stream: aclrtMemcpyAsync H2D of the pattern to
//                                           range + OFF, then D2H of it back, synchronize: <rc> <1
//                                           if the bytes came back>
//   user                                    becomes the unprivileged user "nobody" for good
//   limit nofile|nproc SOFT [HARD]          setrlimit (the hard limit stays unless given; SOFT
//   "max":
//                                           the hard limit)
//   open PATH | fill PATH | closeall        open(PATH) and keep it: 0 <fd> or -1 <errno>; open it
//                                           until that fails: 0 <count> <errno>; close them: 0
//                                           <count>
//   abuse                                   on every descriptor of this process whose link is
//                                           "memfd:aclvmm-phys" (memory it received or made), tries
//                                           ftruncate smaller, ftruncate larger, F_ADD_SEALS WRITE,
//                                           F_ADD_SEALS FUTURE_WRITE, fallocate past the end:
//                                           0 <descriptors> <errno of each try, 0 if it
//                                           succeeded>...
//   punch OFF N                             fallocate(PUNCH_HOLE) of [OFF, OFF+N) on those: <rc>
//   reexec                                  0, then execs this program again
//   quit CODE                               exit(CODE) without aclFinalize
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclvmm/aclvmm.h"
#include "integration/share_peer/peer_pattern.h"
#include "integration/share_peer/stress_board.h"

namespace {

struct Slot {
  aclrtDrvMemHandle handle = nullptr;
  void* va = nullptr;  // mapping or aclrtMalloc block
  size_t size = 0;
};
Slot g_slots[32];
int g_udp = -1;

int count_dir(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - (std::strcmp(path, "/proc/self/fd") == 0 ? 1 : 0);  // the DIR's own descriptor
}

std::vector<int> g_kept;  // descriptors of "open" / "fill"

aclError malloc_physical(aclrtDrvMemHandle* h, size_t size, aclrtMemLocationType type, uint32_t id,
                         aclrtMemAttr attr) {
  aclrtPhysicalMemProp p{};
  p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  p.memAttr = attr;
  p.location.type = type;
  p.location.id = id;
  return aclrtMallocPhysical(h, size, &p, 0);
}

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

// The descriptors of this process that are aclvmm physical memory.
std::vector<int> physical_memory_fds() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char link[256] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0 && std::strstr(link, "memfd:aclvmm-phys")) {
      out.push_back(std::atoi(e->d_name));
    }
  }
  closedir(d);
  return out;
}

// What an importer could do to a received descriptor beyond the ACL API; the errno of each try.
std::string abuse_memory() {
  const std::vector<int> fds = physical_memory_fds();
  std::ostringstream out;
  out << 0 << ' ' << fds.size();
  for (int fd : fds) {
    struct stat st{};
    fstat(fd, &st);
    auto err = [](int rc) { return rc == 0 ? 0 : errno; };
    out << ' ' << err(ftruncate(fd, 0)) << ' ' << err(ftruncate(fd, st.st_size * 2)) << ' '
        << err(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 ? -1 : 0) << ' '
        << err(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0 ? -1 : 0) << ' '
        << err(fallocate(fd, 0, st.st_size, 4096));
  }
  return out.str();
}

bool become_nobody() {
  uid_t uid = 65534;
  gid_t gid = 65534;
  if (const passwd* pw = getpwnam("nobody")) {
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
    return false;
  }
  (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // /proc/self stays this process's own to read
  return geteuid() == uid;
}

std::string hex_bytes(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

bool parse_hex_bytes(const std::string& s, std::vector<unsigned char>* out) {
  if (s.size() % 2) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    out->push_back(static_cast<unsigned char>(std::strtoul(s.substr(i, 2).c_str(), nullptr, 16)));
  }
  return true;
}

std::string hex64(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

uint64_t parse_u64(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// The importer side of stress_share_test.cpp: the tokens come and go while this runs, so an import
// may find its token ended (107017) or, where this importer is not listed, be refused (507899);
// anything it does get must hold exactly the bytes the board announces.
std::string stress_imports(const std::string& path, size_t slots, long rounds, int index) {
  using namespace share_peer;
  constexpr size_t kSize = 2 << 20;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "-1 cannot open the board";
  void* m = mmap(nullptr, kBoardBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return "-1 cannot map the board";
  const uint64_t* board = static_cast<const uint64_t*>(m);
  slots = slots < 1 ? 1 : slots > kBoardSlots ? kBoardSlots : slots;
  long ok = 0, unknown = 0, denied = 0, breaches = 0, bad = 0;
  std::string first;
  auto problem = [&first](long* counter, const std::string& what) {
    ++*counter;
    if (first.empty()) first = what;
  };
  void* va = nullptr;
  if (aclrtReserveMemAddress(&va, kSize, 0, nullptr, 0) != ACL_SUCCESS) {
    munmap(m, kBoardBytes);
    return "-1 cannot reserve";
  }
  std::string got(kSize, '\0');
  std::vector<std::string> expected(slots);  // the pattern of each slot's current seed
  std::vector<long> expected_seed(slots, -1);
  for (long r = 0; r < rounds; ++r) {
    const size_t slot = static_cast<size_t>(r + index) % slots;
    const uint64_t word = __atomic_load_n(&board[slot], __ATOMIC_ACQUIRE);
    const unsigned access = board_access(word);
    if (access == kBoardEmpty) {
      usleep(1000);
      continue;
    }
    const bool allowed = board_allows(access, index);
    aclrtDrvMemHandle h = nullptr;
    const aclError rc = aclrtMemImportFromShareableHandle(board_token(word), 0, &h);
    if (rc == 107017) {
      ++unknown;
    } else if (rc == 507899) {
      if (allowed) problem(&bad, "a listed importer was refused (round " + std::to_string(r) + ")");
      ++denied;
    } else if (rc != ACL_SUCCESS) {
      problem(&bad, "import code " + std::to_string(rc));
    } else {
      if (!allowed) problem(&breaches, "an unlisted importer imported token " + hex64(board_token(word)));
      if (expected_seed[slot] != board_seed(word)) {
        expected[slot] = peer_pattern(kSize, board_seed(word));
        expected_seed[slot] = board_seed(word);
      }
      aclError e = aclrtMapMem(va, kSize, 0, h, 0);
      if (e == ACL_SUCCESS) {
        e = aclrtMemcpy(&got[0], kSize, va, kSize, ACL_MEMCPY_DEVICE_TO_HOST);
        if (e == ACL_SUCCESS && got != expected[slot]) {
          problem(&breaches, "wrong bytes behind token " + hex64(board_token(word)));
        }
        const aclError u = aclrtUnmapMem(va);
        e = e ? e : u;
      }
      const aclError f = aclrtFreePhysical(h);
      e = e ? e : f;
      if (e != ACL_SUCCESS) {
        problem(&bad, "map/copy/unmap/free of an imported handle: " + std::to_string(e));
      } else {
        ++ok;
      }
    }
  }
  if (aclrtReleaseMemAddress(va) != ACL_SUCCESS) problem(&bad, "release");
  munmap(m, kBoardBytes);
  std::ostringstream out;
  out << 0 << ' ' << ok << ' ' << unknown << ' ' << denied << ' ' << breaches << ' ' << bad;
  if (!first.empty()) out << ' ' << first;
  return out.str();
}

// Runs one command; returns the reply line.
std::string run(const std::vector<std::string>& w) {
  auto num = [&](size_t i) { return i < w.size() ? std::strtoll(w[i].c_str(), nullptr, 10) : 0; };
  auto slot = [&](size_t i) -> Slot& { return g_slots[static_cast<size_t>(num(i)) % 32]; };
  const std::string& c = w[0];
  std::ostringstream out;
  if (c == "init") {
    out << aclInit(nullptr);
  } else if (c == "fin") {
    out << aclFinalize();
  } else if (c == "dev") {
    out << aclrtSetDevice(static_cast<int32_t>(num(1)));
  } else if (c == "reset") {
    out << aclrtResetDeviceForce(static_cast<int32_t>(num(1)));
  } else if (c == "counts") {
    out << 0 << ' ' << count_dir("/proc/self/fd") << ' ' << count_dir("/proc/self/task");
  } else if (c == "tgid") {
    int32_t pid = -1;
    const aclError rc = aclrtDeviceGetBareTgid(&pid);
    out << rc << ' ' << pid;
  } else if (c == "pid") {
    out << 0 << ' ' << getpid();
  } else if (c == "alloc" && w.size() >= 4) {
    const aclrtMemAttr attr = w.size() > 4 ? static_cast<aclrtMemAttr>(num(4)) : ACL_HBM_MEM_HUGE;
    out << malloc_physical(&slot(1).handle, static_cast<size_t>(num(3)), ACL_MEM_LOCATION_TYPE_DEVICE,
                           static_cast<uint32_t>(num(2)), attr);
  } else if (c == "free") {
    out << aclrtFreePhysical(slot(1).handle);
  } else if (c == "export" && w.size() >= 3) {
    uint64_t token = 0;
    const aclError rc = aclrtMemExportToShareableHandle(slot(1).handle, ACL_MEM_HANDLE_TYPE_NONE,
                                                        static_cast<uint64_t>(num(2)), &token);
    out << rc << ' ' << hex64(token);
  } else if (c == "export2" && w.size() >= 4) {
    const int type = static_cast<int>(num(3));
    unsigned char buf[128];
    std::memset(buf, 0xEE, sizeof buf);
    aclrtMemSharedHandleType t;
    std::memcpy(&t, &type, sizeof t);
    const aclError rc =
        aclrtMemExportToShareableHandleV2(slot(1).handle, static_cast<uint64_t>(num(2)), t, buf);
    out << rc << ' ' << hex_bytes(buf, type == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC ? 128 : 16);
  } else if (c == "setpid" && w.size() >= 2) {
    std::vector<int32_t> pids;
    for (size_t i = 2; i < w.size(); ++i) pids.push_back(static_cast<int32_t>(num(i)));
    if (pids.empty()) pids.push_back(0);
    out << aclrtMemSetPidToShareableHandle(parse_u64(w[1]), pids.data(), w.size() - 2);
  } else if (c == "setpid2" && w.size() >= 3) {
    const int type = static_cast<int>(num(1));
    aclrtMemSharedHandleType t;
    std::memcpy(&t, &type, sizeof t);
    std::vector<unsigned char> blob;
    if (!parse_hex_bytes(w[2], &blob)) return "-1 bad hex";
    blob.resize(128, 0);
    std::vector<int32_t> pids;
    for (size_t i = 3; i < w.size(); ++i) pids.push_back(static_cast<int32_t>(num(i)));
    if (pids.empty()) pids.push_back(0);
    out << aclrtMemSetPidToShareableHandleV2(blob.data(), t, pids.data(), w.size() - 3);
  } else if (c == "import" && w.size() >= 4) {
    Slot& s = slot(1);
    const aclError rc = aclrtMemImportFromShareableHandle(parse_u64(w[2]), static_cast<int32_t>(num(3)),
                                                          &s.handle);
    out << rc << ' ' << hex64(reinterpret_cast<uintptr_t>(s.handle));
  } else if (c == "import2" && w.size() >= 5) {
    Slot& s = slot(1);
    const int type = static_cast<int>(num(2));
    aclrtMemSharedHandleType t;
    std::memcpy(&t, &type, sizeof t);
    std::vector<unsigned char> blob;
    if (!parse_hex_bytes(w[3], &blob)) return "-1 bad hex";
    blob.resize(128, 0);
    const aclError rc = aclrtMemImportFromShareableHandleV2(blob.data(), t, static_cast<uint64_t>(num(4)),
                                                            &s.handle);
    out << rc << ' ' << hex64(reinterpret_cast<uintptr_t>(s.handle));
  } else if (c == "map" && w.size() >= 3) {
    Slot& s = slot(1);
    s.size = static_cast<size_t>(num(2));
    aclError rc = aclrtReserveMemAddress(&s.va, s.size, 0, nullptr, 0);
    if (rc == ACL_SUCCESS) rc = aclrtMapMem(s.va, s.size, 0, s.handle, 0);
    out << rc;
  } else if (c == "unmap") {
    Slot& s = slot(1);
    aclError rc = aclrtUnmapMem(s.va);
    const aclError rc2 = aclrtReleaseMemAddress(s.va);
    out << (rc ? rc : rc2);
  } else if (c == "access" && w.size() >= 3) {
    Slot& s = slot(1);
    aclrtMemAccessDesc d{};
    d.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    d.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = static_cast<uint32_t>(num(2));
    out << aclrtMemSetAccess(s.va, s.size, &d, 1);
  } else if (c == "malloc" && w.size() >= 3) {
    Slot& s = slot(1);
    s.size = static_cast<size_t>(num(2));
    out << aclrtMalloc(&s.va, s.size, ACL_MEM_MALLOC_HUGE_FIRST);
  } else if (c == "mfree") {
    out << aclrtFree(slot(1).va);
  } else if (c == "write" && w.size() >= 5) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    const std::string bytes = share_peer::peer_pattern(n, static_cast<unsigned>(num(4)));
    out << aclrtMemcpy(static_cast<char*>(s.va) + num(2), n, bytes.data(), n, ACL_MEMCPY_HOST_TO_DEVICE);
  } else if (c == "check" && w.size() >= 5) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    std::string got(n, '\0');
    const aclError rc = aclrtMemcpy(&got[0], n, static_cast<char*>(s.va) + num(2), n,
                                    ACL_MEMCPY_DEVICE_TO_HOST);
    out << rc << ' ' << (rc == ACL_SUCCESS && got == share_peer::peer_pattern(n, static_cast<unsigned>(num(4))));
  } else if (c == "props") {
    aclrtPhysicalMemProp p{};
    const aclError rc = aclrtMemGetAllocationPropertiesFromHandle(slot(1).handle, &p);
    int attr, type;
    std::memcpy(&attr, &p.memAttr, sizeof attr);
    std::memcpy(&type, &p.location.type, sizeof type);
    out << rc << ' ' << attr << ' ' << type << ' ' << p.location.id;
  } else if (c == "stats") {
    const char* j = aclvmmStatsJson();
    out << 0 << ' ' << one_line(j ? j : "{}");
  } else if (c == "udpbind") {
    g_udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (g_udp < 0 || bind(g_udp, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(g_udp, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return "-1 udp bind failed";
    }
    out << 0 << ' ' << ntohs(a.sin_port);
  } else if (c == "udprecv") {
    pollfd p{g_udp, POLLIN, 0};
    unsigned char buf[256];
    if (g_udp < 0 || poll(&p, 1, 5000) != 1) return "-1 no datagram";
    const ssize_t n = recv(g_udp, buf, sizeof buf, 0);
    if (n < 0) return "-1 recv failed";
    out << 0 << ' ' << hex_bytes(buf, static_cast<size_t>(n));
  } else if (c == "udpsend" && w.size() >= 3) {
    std::vector<unsigned char> blob;
    if (!parse_hex_bytes(w[2], &blob)) return "-1 bad hex";
    const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(num(1)));
    const ssize_t n = sendto(s, blob.data(), blob.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
    close(s);
    out << (n == static_cast<ssize_t>(blob.size()) ? 0 : -1);
  } else if (c == "stress" && w.size() >= 5) {
    return stress_imports(w[1], static_cast<size_t>(num(2)), static_cast<long>(num(3)), static_cast<int>(num(4)));
  } else if (c == "halloc" && w.size() >= 3) {
    out << malloc_physical(&slot(1).handle, static_cast<size_t>(num(2)), ACL_MEM_LOCATION_TYPE_HOST, 0,
                           ACL_MEM_HUGE);
  } else if ((c == "cpuwrite" || c == "cpucheck") && w.size() >= 5) {
    char* at = static_cast<char*>(slot(1).va) + num(2);
    const size_t n = static_cast<size_t>(num(3));
    const std::string bytes = share_peer::peer_pattern(n, static_cast<unsigned>(num(4)));
    if (c == "cpuwrite") {
      std::memcpy(at, bytes.data(), n);
      out << 0;
    } else {
      out << 0 << ' ' << (std::memcmp(at, bytes.data(), n) == 0);
    }
  } else if (c == "zeros" && w.size() >= 4) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    std::string got(n, '\x7f');
    const aclError rc = aclrtMemcpy(&got[0], n, static_cast<char*>(s.va) + num(2), n,
                                    ACL_MEMCPY_DEVICE_TO_HOST);
    out << rc << ' ' << (rc == ACL_SUCCESS && got == std::string(n, '\0'));
  } else if (c == "memset" && w.size() >= 5) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    out << aclrtMemset(static_cast<char*>(s.va) + num(2), n, static_cast<int32_t>(num(4)), n);
  } else if (c == "filled" && w.size() >= 5) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    std::string got(n, '\0');
    const aclError rc =
        aclrtMemcpy(&got[0], n, static_cast<char*>(s.va) + num(2), n, ACL_MEMCPY_DEVICE_TO_HOST);
    out << rc << ' ' << (rc == ACL_SUCCESS && got == std::string(n, static_cast<char>(num(4))));
  } else if (c == "d2d" && w.size() >= 6) {
    Slot& dst = slot(1);
    Slot& src = slot(3);
    const size_t n = static_cast<size_t>(num(5));
    out << aclrtMemcpy(static_cast<char*>(dst.va) + num(2), n, static_cast<char*>(src.va) + num(4),
                       n, ACL_MEMCPY_DEVICE_TO_DEVICE);
  } else if (c == "async" && w.size() >= 5) {
    Slot& s = slot(1);
    const size_t n = static_cast<size_t>(num(3));
    const std::string bytes = share_peer::peer_pattern(n, static_cast<unsigned>(num(4)));
    std::string got(n, '\0');
    char* at = static_cast<char*>(s.va) + num(2);
    aclrtStream stream = nullptr;
    aclError rc = aclrtCreateStream(&stream);
    if (rc == ACL_SUCCESS) {
      rc = aclrtMemcpyAsync(at, n, bytes.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    }
    if (rc == ACL_SUCCESS)
      rc = aclrtMemcpyAsync(&got[0], n, at, n, ACL_MEMCPY_DEVICE_TO_HOST, stream);
    if (rc == ACL_SUCCESS) rc = aclrtSynchronizeStream(stream);
    if (stream != nullptr) (void)aclrtDestroyStream(stream);
    out << rc << ' ' << (rc == ACL_SUCCESS && got == bytes);
  } else if (c == "hostaccess" && w.size() >= 2) {
    Slot& s = slot(1);
    aclrtMemAccessDesc d{};
    d.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    d.location.type = ACL_MEM_LOCATION_TYPE_HOST;
    d.location.id = 0;
    out << aclrtMemSetAccess(s.va, s.size, &d, 1);
  } else if (c == "user") {
    out << (become_nobody() ? 0 : -1);
  } else if (c == "limit" && w.size() >= 3) {
    const int res = w[1] == "nofile" ? RLIMIT_NOFILE : w[1] == "nproc" ? RLIMIT_NPROC : -1;
    rlimit rl{};
    if (res < 0 || getrlimit(res, &rl) != 0) return "-1 unknown limit";
    rl.rlim_cur = w[2] == "max" ? rl.rlim_max : static_cast<rlim_t>(num(2));
    if (w.size() >= 4) rl.rlim_max = static_cast<rlim_t>(num(3));
    out << (setrlimit(res, &rl) == 0 ? 0 : -errno);
  } else if (c == "open" && w.size() >= 2) {
    const int fd = open(w[1].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "-1 " + std::to_string(errno);
    g_kept.push_back(fd);
    out << 0 << ' ' << fd;
  } else if (c == "fill" && w.size() >= 2) {
    int fd, count = 0;
    while ((fd = open(w[1].c_str(), O_RDONLY | O_CLOEXEC)) >= 0) {
      g_kept.push_back(fd);
      ++count;
    }
    out << 0 << ' ' << count << ' ' << errno;
  } else if (c == "closeall") {
    for (int fd : g_kept) close(fd);
    out << 0 << ' ' << g_kept.size();
    g_kept.clear();
  } else if (c == "abuse") {
    return abuse_memory();
  } else if (c == "punch" && w.size() >= 3) {
    int rc = 0;
    for (int fd : physical_memory_fds()) {
      if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, num(1), num(2)) != 0) rc = errno;
    }
    out << rc;
  } else if (c == "reexec") {
    // A new program image in the same process (same pid, same start time). The reply comes before
    // the exec, so the test sends nothing more until this image stops reading stdin (what it had
    // buffered would be lost with it).
    std::cout << 0 << std::endl;
    execl("/proc/self/exe", "aclvmm_share_peer", static_cast<char*>(nullptr));
    std::exit(127);
  } else if (c == "quit") {
    std::fflush(stdout);
    std::exit(static_cast<int>(num(1)));
  } else {
    return "-1 unknown command " + c;
  }
  return out.str();
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) continue;
    std::cout << run(words) << std::endl;  // endl flushes: the test waits for the line
  }
  return 0;
}
