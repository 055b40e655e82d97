// The gtest side of the IPC-by-key process tests (ipc_key_*_test.cpp, runtime-extra.md §3):
// aclvmm_ipc_peer driven through share_test::Peer (its line protocol is the share peer's; the
// program is passed as Peer's launcher, which then ignores the share peer's path it is given as
// argument), the gtest process's own keys, and key texts made up in the §3.1 layout.
//
// The names here are at namespace scope of a unity-built binary that also holds the share tests:
// they all start with "ipc" or "Ipc" so that no lookup from another file can become ambiguous.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/peer_pattern.h"

namespace ipc_key_test {

using namespace share_test;

constexpr int kIpcKeyChars = 64;

// The reply of a "check" whose bytes matched.
inline const std::vector<std::string>& ipc_same() {
  static const std::vector<std::string> v{"0", "1"};
  return v;
}

// aclvmm_ipc_peer, started (and, with `init`, aclInit + aclrtSetDevice(0)) like a share peer.
class IpcPeer : public Peer {
 public:
  explicit IpcPeer(const std::vector<std::string>& env = {}, bool init = true)
      : Peer(env, init, std::vector<std::string>{ACLVMM_IPC_PEER}) {}

  // A 2 MiB (or `size`) aclrtMalloc block in `slot` holding peer_pattern(size, seed).
  void fill(int slot, unsigned seed, size_t size = k2M) {
    ASSERT_EQ(rc(line("malloc", slot, size)), kOk);
    ASSERT_EQ(rc(line("write", slot, 0, size, seed)), kOk);
  }
  // export: the key ("" with a failure when the export fails).
  std::string export_key(int slot, size_t size, int flags = 0, size_t off = 0) {
    auto r = cmd(line("export", slot, off, size, flags));
    EXPECT_EQ(code_of(r), kOk) << "peer export";
    return code_of(r) == kOk && r.size() > 1 ? r[1] : std::string();
  }
  // import: the code; *address gets the address on success.
  int import_key(int slot, const std::string& key, int flags = 0, uint64_t* address = nullptr) {
    auto r = cmd(line("import", slot, key, flags));
    if (address) *address = code_of(r) == kOk ? value_of(r) : 0;
    return code_of(r);
  }
  int set_pids(const std::string& key, const std::vector<int32_t>& pids) {
    std::string l = "setpid " + key;
    for (int32_t p : pids) l += " " + std::to_string(p);
    return rc(l);
  }
  int close_key(const std::string& key) { return rc("close " + key); }
  std::vector<std::string> check(int slot, size_t off, size_t n, unsigned seed) {
    return cmd(line("check", slot, off, n, seed));
  }
  int write(int slot, size_t off, size_t n, unsigned seed) {
    return rc(line("write", slot, off, n, seed));
  }
  long long stat(const std::string& dotted) { return stat_int(stats(), dotted); }
};

// The gtest process's key for [va, va + size).
inline std::string ipc_export_key(void* va, size_t size, uint64_t flags = 0) {
  char key[65];
  std::memset(key, 0x5a, sizeof key);
  EXPECT_EQ(aclrtIpcMemGetExportKey(va, size, key, sizeof key, flags), kOk);
  EXPECT_EQ(key[kIpcKeyChars], '\0') << "the 65th byte";
  return std::string(key, strnlen(key, sizeof key));
}

// An aclrtMalloc block of the gtest process holding peer_pattern(size, seed), exported by key.
struct IpcLocalKey {
  void* va = nullptr;
  size_t size = 0;
  std::string key;
};
inline IpcLocalKey ipc_local_key(unsigned seed, uint64_t flags = 0, size_t size = k2M) {
  IpcLocalKey k;
  k.size = size;
  EXPECT_EQ(aclrtMalloc(&k.va, size, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  if (k.va == nullptr) return k;
  h2d(k.va, share_peer::peer_pattern(size, seed));
  k.key = ipc_export_key(k.va, size, flags);
  return k;
}

// aclrtIpcMemSetImportPid with a list.
inline aclError ipc_set_pids(const std::string& key, std::vector<int32_t> pids) {
  return aclrtIpcMemSetImportPid(key.c_str(), pids.data(), pids.size());
}

// A key text in the layout of runtime-extra.md §3.1.
inline std::string ipc_made_up_key(uint32_t tgid, uint64_t counter, uint32_t device = 0) {
  char b[80];
  std::snprintf(b, sizeof b, "%08x%016llx%02x00", tgid, static_cast<unsigned long long>(counter),
                device & 0xff);
  std::string k = b;
  k.resize(kIpcKeyChars, '0');
  return k;
}

// The bytes at a device address of the gtest process equal peer_pattern(n, seed).
inline bool ipc_holds(const void* va, size_t n, unsigned seed) {
  aclError rc = kOk;
  const std::string got = get(va, n, &rc);
  return rc == kOk && got == share_peer::peer_pattern(n, seed);
}

}  // namespace ipc_key_test
