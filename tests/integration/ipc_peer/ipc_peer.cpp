// aclvmm_ipc_peer: the "other process" of the IPC-by-key tests (ipc_key_*_test.cpp,
// runtime-extra.md §3). A plain program linked with libascendcl only, speaking the line protocol of
// aclvmm_share_peer (integration/share_peer/share_peer.cpp), so that share_test::Peer drives it:
// one command per line on stdin, exactly one reply line on stdout, "<code> [values...]", where
// <code> is the aclError of the ACL call the command makes (or -1 for a malformed command / a
// system error). End of input exits normally (exit(0): the library's exit-time cleanup runs).
// Arguments on the command line are ignored (share_test::Peer passes the share peer's path).
//
// Slots 0..31 each hold one device range: an aclrtMalloc block, a VMM mapping, or an import.
// Keys are the 64 key characters ("-" for an export that wrote no key).
//
//   init | fin | dev D                      aclInit(NULL) / aclFinalize / aclrtSetDevice(D)
//   reset D | resetforce D                  aclrtResetDevice(D) / aclrtResetDeviceForce(D)
//   tgid | pid                              <rc> <aclrtDeviceGetBareTgid> / 0 <getpid()>
//   stats                                   0 <aclvmmStatsJson on one line>
//   counts                                  0 <open descriptors> <threads>     (no ACL call)
//   user                                    becomes the unprivileged user "nobody" for good
//   malloc S SIZE                           aclrtMalloc(HUGE_FIRST) on the current device
//   mfree S                                 aclrtFree of the slot's address
//   vmm S D SIZE                            aclrtMallocPhysical (device D, HBM huge) + reserve +
//   map vfree S                                 unmap + release + free physical export S OFF SIZE
//   FLAGS                 aclrtIpcMemGetExportKey(slot + OFF, SIZE, key, 65, FLAGS):
//                                           <rc> <key>
//   setpid KEY PID...                       aclrtIpcMemSetImportPid(KEY, pids, count)
//   setpidn KEY N FIRST                     the same with N pids FIRST, FIRST+1, ...
//   import S KEY FLAGS                      aclrtIpcMemImportByKey: <rc> <address in hex>; the slot
//                                           holds the address from then on
//   close KEY                               aclrtIpcMemClose
//   write S OFF N SEED                      aclrtMemcpy H2D of peer_pattern(N, SEED) at slot + OFF
//   check S OFF N SEED                      <rc> <1 if the N bytes at slot + OFF equal the pattern>
//   range S                                 aclrtMemGetAddressRange(slot): <rc> <base hex> <size>
//   quit CODE                               exit(CODE) without aclFinalize
#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

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

namespace {

struct IpcSlot {
  void* va = nullptr;
  size_t size = 0;
  aclrtDrvMemHandle handle = nullptr;  // a VMM slot's physical handle
};
IpcSlot g_ipc_slots[32];

bool drop_to_nobody() {
  uid_t uid = 65534;
  gid_t gid = 65534;
  if (const passwd* pw = getpwnam("nobody")) {
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
      setresuid(uid, uid, uid) != 0) {
    return false;
  }
  (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  return geteuid() == uid;
}

int count_entries(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - (std::strcmp(path, "/proc/self/fd") == 0 ? 1 : 0);  // the DIR's own descriptor
}

std::string hex64(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string flat(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string run(const std::vector<std::string>& w) {
  auto num = [&](size_t i) { return i < w.size() ? std::strtoll(w[i].c_str(), nullptr, 10) : 0; };
  auto slot = [&](size_t i) -> IpcSlot& { return g_ipc_slots[static_cast<size_t>(num(i)) % 32]; };
  const std::string& c = w[0];
  std::ostringstream out;
  if (c == "init") {
    out << aclInit(nullptr);
  } else if (c == "fin") {
    out << aclFinalize();
  } else if (c == "dev") {
    out << aclrtSetDevice(static_cast<int32_t>(num(1)));
  } else if (c == "reset") {
    out << aclrtResetDevice(static_cast<int32_t>(num(1)));
  } else if (c == "resetforce") {
    out << aclrtResetDeviceForce(static_cast<int32_t>(num(1)));
  } else if (c == "tgid") {
    int32_t pid = -1;
    const aclError rc = aclrtDeviceGetBareTgid(&pid);
    out << rc << ' ' << pid;
  } else if (c == "pid") {
    out << 0 << ' ' << getpid();
  } else if (c == "stats") {
    const char* j = aclvmmStatsJson();
    out << 0 << ' ' << flat(j ? j : "{}");
  } else if (c == "counts") {
    out << 0 << ' ' << count_entries("/proc/self/fd") << ' ' << count_entries("/proc/self/task");
  } else if (c == "user") {
    out << (drop_to_nobody() ? 0 : -1);
  } else if (c == "malloc" && w.size() >= 3) {
    IpcSlot& s = slot(1);
    s.size = static_cast<size_t>(num(2));
    out << aclrtMalloc(&s.va, s.size, ACL_MEM_MALLOC_HUGE_FIRST);
  } else if (c == "mfree") {
    out << aclrtFree(slot(1).va);
  } else if (c == "vmm" && w.size() >= 4) {
    IpcSlot& s = slot(1);
    s.size = static_cast<size_t>(num(3));
    aclrtPhysicalMemProp p{};
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = static_cast<uint32_t>(num(2));
    aclError rc = aclrtMallocPhysical(&s.handle, s.size, &p, 0);
    if (rc == ACL_SUCCESS) rc = aclrtReserveMemAddress(&s.va, s.size, 0, nullptr, 0);
    if (rc == ACL_SUCCESS) rc = aclrtMapMem(s.va, s.size, 0, s.handle, 0);
    out << rc;
  } else if (c == "vfree") {
    IpcSlot& s = slot(1);
    const aclError a = aclrtUnmapMem(s.va);
    const aclError b = aclrtReleaseMemAddress(s.va);
    const aclError d = aclrtFreePhysical(s.handle);
    out << (a ? a : b ? b : d);
  } else if (c == "export" && w.size() >= 5) {
    char key[65];
    std::memset(key, 0, sizeof key);
    const aclError rc = aclrtIpcMemGetExportKey(static_cast<char*>(slot(1).va) + num(2),
                                                static_cast<size_t>(num(3)), key, sizeof key,
                                                static_cast<uint64_t>(num(4)));
    const size_t n = strnlen(key, sizeof key);
    out << rc << ' ' << (n > 0 && n < sizeof key ? std::string(key, n) : std::string("-"));
  } else if (c == "setpid" && w.size() >= 2) {
    std::vector<int32_t> pids;
    for (size_t i = 2; i < w.size(); ++i) pids.push_back(static_cast<int32_t>(num(i)));
    if (pids.empty()) pids.push_back(0);
    out << aclrtIpcMemSetImportPid(w[1].c_str(), pids.data(), w.size() - 2);
  } else if (c == "setpidn" && w.size() >= 4) {
    std::vector<int32_t> pids;
    for (long long i = 0; i < num(2); ++i) pids.push_back(static_cast<int32_t>(num(3) + i));
    if (pids.empty()) pids.push_back(0);
    out << aclrtIpcMemSetImportPid(w[1].c_str(), pids.data(), static_cast<size_t>(num(2)));
  } else if (c == "import" && w.size() >= 4) {
    void* p = nullptr;
    const aclError rc = aclrtIpcMemImportByKey(&p, w[2].c_str(), static_cast<uint64_t>(num(3)));
    if (rc == ACL_SUCCESS) {
      IpcSlot& s = slot(1);
      s.va = p;
      s.handle = nullptr;
      void* base = nullptr;
      size_t size = 0;
      s.size = aclrtMemGetAddressRange(p, &base, &size) == ACL_SUCCESS ? size : 0;
    }
    out << rc << ' ' << hex64(reinterpret_cast<uintptr_t>(p));
  } else if (c == "close" && w.size() >= 2) {
    out << aclrtIpcMemClose(w[1].c_str());
  } else if (c == "write" && w.size() >= 5) {
    const size_t n = static_cast<size_t>(num(3));
    const std::string bytes = share_peer::peer_pattern(n, static_cast<unsigned>(num(4)));
    out << aclrtMemcpy(static_cast<char*>(slot(1).va) + num(2), n, bytes.data(), n,
                       ACL_MEMCPY_HOST_TO_DEVICE);
  } else if (c == "check" && w.size() >= 5) {
    const size_t n = static_cast<size_t>(num(3));
    std::string got(n, '\0');
    const aclError rc = aclrtMemcpy(&got[0], n, static_cast<char*>(slot(1).va) + num(2), n,
                                    ACL_MEMCPY_DEVICE_TO_HOST);
    out << rc << ' '
        << (rc == ACL_SUCCESS && got == share_peer::peer_pattern(n, static_cast<unsigned>(num(4))));
  } else if (c == "range") {
    void* base = nullptr;
    size_t size = 0;
    const aclError rc = aclrtMemGetAddressRange(slot(1).va, &base, &size);
    out << rc << ' ' << hex64(reinterpret_cast<uintptr_t>(base)) << ' ' << size;
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
