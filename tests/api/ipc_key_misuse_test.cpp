// IPC memory sharing by key (runtime-extra.md §3.3-§3.8, §10): each call's checks in the order
// the spec gives, one table per call. Each row breaks one thing (or two, to show that the earlier
// check wins) of an otherwise valid call, with every earlier check passing; rows name the product
// (ACLVMM_SOC) and whether the call runs on a thread without a context. A refused call leaves no
// key, no import and no output behind. The whitelist's bound, the product table, and what a second
// process (a forked child) is allowed: the whitelist decides who imports, and only the exporter
// changes a key. The behaviour of valid calls is in ipc_key_test.cpp.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_env.h"
#include "api/test_util.h"
#include "unit/testing/product_families.h"

namespace aclvmm_test {
namespace {

constexpr aclError kIpcmNoPermission = 207006;  // ACL_ERROR_RT_NO_PERMISSION
constexpr uint64_t kIpcmOpen = ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION;
constexpr uint64_t kIpcmPeer = ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS;
constexpr char kIpcmUntouched = 0x7f;
constexpr int32_t kIpcmSomePid = 12345;
const char* const kIpcmEdge = "Ascend310B1";
const char* const kIpcmA3 = "Ascend910_9391";
const char* const kIpcmA2 = "Ascend910B1";

// §3.1's text.
std::string ipcm_key_text(int32_t tgid, uint64_t counter) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "%08x%016llx0000", static_cast<uint32_t>(tgid),
                static_cast<unsigned long long>(counter));
  std::string s(buf);
  s.resize(64, '0');
  return s;
}
int32_t ipcm_tgid() {
  int32_t tgid = 0;
  EXPECT_EQ(aclrtDeviceGetBareTgid(&tgid), kOk);
  return tgid;
}

// A child blocked until release(): so that it starts before its pid is whitelisted.
struct IpcmChild {
  pid_t pid = -1;
  int gate = -1;
};
IpcmChild ipcm_fork_waiting(const std::function<int()>& body) {
  int fds[2];
  IpcmChild c;
  if (pipe(fds) != 0) return c;
  fflush(nullptr);
  settle_threads_before_fork();
  c.pid = fork();
  if (c.pid == 0) {
    close(fds[1]);
    char go = 0;
    while (read(fds[0], &go, 1) < 0 && errno == EINTR) {
    }
    alarm(30);  // a hang fails the test instead of blocking it
    _exit(child_body(body));
  }
  close(fds[0]);
  c.gate = fds[1];
  return c;
}
ChildResult ipcm_release(IpcmChild& c) {
  EXPECT_EQ(write(c.gate, "g", 1), 1);
  close(c.gate);
  return wait_child(c.pid);
}

// What a row works on, made in the runtime it runs in. Where the product has no IPC memory
// (EDGE), the keys are texts of the right layout that name nothing.
struct IpcmState {
  char* block = nullptr;                             // 4 MiB, huge pages
  std::vector<char> host = std::vector<char>(8192);  // process memory
  std::string listed;                                // whitelist on
  std::string open;                                  // DISABLE_PID_VALIDATION
  std::string closed;                                // closed after serving an import of ours
  std::string unknown;                               // the right layout, never exported
  std::string malformed;  // 64 characters, not the layout (a live key's padding changed)
  std::vector<int32_t> pids = std::vector<int32_t>(64, kIpcmSomePid);
  char* host_memory() { return host.data(); }
};

std::string ipcm_export_or_fake(char* p, uint64_t flags, uint64_t fake_counter) {
  char buf[65];
  const aclError rc = aclrtIpcMemGetExportKey(p, k2M, buf, sizeof buf, flags);
  if (rc == kNotSupported) return ipcm_key_text(ipcm_tgid(), fake_counter);
  EXPECT_EQ(rc, kOk) << recent_msg();
  return rc == kOk ? std::string(buf) : std::string();
}

IpcmState ipcm_prepare() {
  IpcmState st;
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  st.block = static_cast<char*>(p);
  st.listed = ipcm_export_or_fake(st.block, 0, 0x7001);
  st.open = ipcm_export_or_fake(st.block, kIpcmOpen, 0x7002);
  st.closed = ipcm_export_or_fake(st.block, kIpcmOpen, 0x7003);
  void* imp = nullptr;
  if (aclrtIpcMemImportByKey(&imp, st.closed.c_str(), 0) == kOk) {
    EXPECT_EQ(aclrtIpcMemClose(st.closed.c_str()), kOk);  // the import
    EXPECT_EQ(aclrtIpcMemClose(st.closed.c_str()), kOk);  // the export
  }
  st.unknown = ipcm_key_text(ipcm_tgid(), 0x7fff0000u);
  st.malformed = st.listed;
  st.malformed[40] = '1';
  st.pids[1] = kIpcmSomePid + 1;
  return st;
}

// A key of `flags` over the state's block that a forked child imported, closed by us: the
// state of "closed while an importer still holds it" (107017; the emulator cannot tell whether
// the importer still holds it, so any key that served another process counts).
std::string ipcm_closed_held_elsewhere(IpcmState& st, uint64_t flags) {
  char key[65];
  EXPECT_EQ(aclrtIpcMemGetExportKey(st.block, k2M, key, sizeof key, flags), kOk);
  IpcmChild child = ipcm_fork_waiting([&key] {
    if (aclrtSetDevice(0) != kOk) return 10;
    void* imp = nullptr;
    return aclrtIpcMemImportByKey(&imp, key, 0) == kOk ? 0 : 11;
  });
  if (flags == 0) {
    int32_t pid = child.pid;
    EXPECT_EQ(aclrtIpcMemSetImportPid(key, &pid, 1), kOk);
  }
  EXPECT_CHILD_OK(ipcm_release(child));
  EXPECT_EQ(aclrtIpcMemClose(key), kOk);
  return key;
}

void ipcm_cleanup(IpcmState& st) {
  for (const std::string* k : {&st.listed, &st.open}) {
    for (int i = 0; i < 8 && aclrtIpcMemClose(k->c_str()) == kOk; ++i) {
    }
  }
  if (st.block) {
    EXPECT_EQ(aclrtFree(st.block), kOk);
  }
  st.block = nullptr;
}

struct IpcmRow {
  const char* name;
  const char* soc;  // nullptr: the default product (A2)
  bool bare;        // on a thread without a context
  std::function<aclError(IpcmState&)> call;
  aclError expected;
};

// Runs each row in a runtime of its product, on a fresh state; a refused call leaves the live
// IPC counts as they were.
void ipcm_run(const std::vector<IpcmRow>& rows) {
  for (const IpcmRow& r : rows) {
    SCOPED_TRACE(r.name);
    std::unique_ptr<ScopedEnvRuntime> env;
    if (r.soc != nullptr) {
      env = std::make_unique<ScopedEnvRuntime>("ACLVMM_SOC", r.soc);
      ASSERT_TRUE(env->ok());
    }
    IpcmState st = ipcm_prepare();
    const long long keys = live_count("ipc_keys"), imports = live_count("ipc_imports");
    aclError rc = -1;
    if (r.bare) {
      std::thread([&] { rc = r.call(st); }).join();
    } else {
      rc = r.call(st);
    }
    EXPECT_EQ(rc, r.expected) << recent_msg();
    if (r.expected != kOk) {
      EXPECT_EQ(live_count("ipc_keys"), keys) << "a refused call changed the keys";
      EXPECT_EQ(live_count("ipc_imports"), imports) << "a refused call changed the imports";
    }
    ipcm_cleanup(st);
  }
}

class IpcKeyMisuseTest : public AclTest {};

// ---- §3.3 aclrtIpcMemGetExportKey

// The export with its buffer checked: a refused call writes nothing; a key made is closed again.
aclError ipcm_export(void* p, size_t size, bool null_key, size_t len, uint64_t flags) {
  char buf[80];
  std::memset(buf, kIpcmUntouched, sizeof buf);
  const aclError rc = aclrtIpcMemGetExportKey(p, size, null_key ? nullptr : buf, len, flags);
  if (rc != kOk) {
    EXPECT_EQ(std::string(buf, sizeof buf), std::string(sizeof buf, kIpcmUntouched))
        << "a refused export wrote the key buffer";
  } else {
    EXPECT_EQ(buf[64], '\0');
    EXPECT_EQ(buf[65], kIpcmUntouched) << "more than 65 bytes written";
    EXPECT_EQ(aclrtIpcMemClose(buf), kOk);
  }
  return rc;
}

TEST_F(IpcKeyMisuseTest, ExportKeyChecksInOrder) {
  const uint64_t k32 = uint64_t(1) << 32;
  const std::vector<IpcmRow> rows = {
      {"1. devPtr NULL", nullptr, false,
       [](IpcmState&) { return ipcm_export(nullptr, k2M, false, 65, 0); }, kParam},
      {"1. key NULL", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, true, 65, 0); }, kParam},
      {"1. devPtr NULL before size 0, len 0, flags 2", nullptr, false,
       [](IpcmState&) { return ipcm_export(nullptr, 0, false, 0, 2); }, kParam},
      {"1. key NULL on EDGE without a context", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, true, 65, 0); }, kParam},
      {"2. size 0", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, 0, false, 65, 0); }, kRtParam},
      {"2. len 0", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 0, 0); }, kRtParam},
      {"2. len 2^32 (0 in 32 bits)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_export(s.block, k2M, false, k32, 0); }, kRtParam},
      {"2. flags 2", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 2); }, kRtParam},
      {"2. flags 2^63", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, uint64_t(1) << 63); },
       kRtParam},
      {"2. size 0 before the context", nullptr, true,
       [](IpcmState& s) { return ipcm_export(s.block, 0, false, 65, 0); }, kRtParam},
      {"2. flags 2 before the product", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 2); }, kRtParam},
      {"3. no context", nullptr, true,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 0); }, kNoContext},
      {"3. no context before len 64", nullptr, true,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 64, 0); }, kNoContext},
      {"3. no context before the product", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 0); }, kNoContext},
      {"4. EDGE", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 0); }, kNotSupported},
      {"4. EDGE before len 64", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 64, 0); }, kNotSupported},
      {"4. EDGE before host memory", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_export(s.host_memory(), 4096, false, 65, 0); },
       kNotSupported},
      {"5. len 64", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 64, 0); }, kRtParam},
      {"5. len 1", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 1, 1); }, kRtParam},
      {"5. len 2^32 + 64 (64 in 32 bits)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_export(s.block, k2M, false, k32 + 64, 0); }, kRtParam},
      {"5. len 64 before host memory", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.host_memory(), 4096, false, 64, 0); }, kRtParam},
      {"6. host memory", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.host_memory(), 4096, false, 65, 0); }, kDrv},
      {"6. devPtr not page aligned", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block + 4096, 4096, false, 65, 1); }, kDrv},
      {"6. size past the block", nullptr, false,
       [](IpcmState& s) {
         void* base = nullptr;
         size_t size = 0;
         EXPECT_EQ(aclrtMemGetAddressRange(s.block, &base, &size), kOk);
         return ipcm_export(s.block, size + 1, false, 65, 1);
       },
       kDrv},
      {"valid: len 2^32 + 65 (65 in 32 bits)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_export(s.block, k2M, false, k32 + 65, 0); }, kOk},
      {"valid: len 80, flags 1, the whole block", nullptr, false,
       [](IpcmState& s) { return ipcm_export(s.block, 4 * kMiB, false, 80, 1); }, kOk},
      {"valid on A3", kIpcmA3, false,
       [](IpcmState& s) { return ipcm_export(s.block, k2M, false, 65, 0); }, kOk},
  };
  ipcm_run(rows);
}

// ---- §3.4 aclrtIpcMemSetImportPid

aclError ipcm_set(const std::string& key, int32_t* pids, size_t num) {
  return aclrtIpcMemSetImportPid(key.c_str(), pids, num);
}

TEST_F(IpcKeyMisuseTest, SetImportPidChecksInOrder) {
  const uint64_t k32 = uint64_t(1) << 32;
  const std::vector<IpcmRow> rows = {
      {"1. key NULL", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemSetImportPid(nullptr, s.pids.data(), 1); }, kParam},
      {"1. pid NULL", nullptr, false, [](IpcmState& s) { return ipcm_set(s.listed, nullptr, 1); },
       kParam},
      {"1. key NULL before num 0", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemSetImportPid(nullptr, s.pids.data(), 0); }, kParam},
      {"1. pid NULL on EDGE without a context", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_set(s.listed, nullptr, 1); }, kParam},
      {"2. num 0", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 0); }, kRtParam},
      {"2. num 2^31 (negative as int32)", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), size_t(1) << 31); }, kRtParam},
      {"2. num 2^32 - 1 (-1 as int32)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), k32 - 1); }, kRtParam},
      {"2. num 2^32 (0 as int32)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), k32); }, kRtParam},
      {"2. num 0 before the context", nullptr, true,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 0); }, kRtParam},
      {"2. num 0 before the product", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 0); }, kRtParam},
      {"3. no context", nullptr, true,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 1); }, kNoContext},
      {"3. no context before num 32", nullptr, true,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 32); }, kNoContext},
      {"3. no context before an empty key", nullptr, true,
       [](IpcmState& s) { return ipcm_set("", s.pids.data(), 1); }, kNoContext},
      {"3. no context before the product", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 1); }, kNoContext},
      {"4. EDGE", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 1); }, kNotSupported},
      {"4. EDGE before num 32", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 32); }, kNotSupported},
      {"4. EDGE before an empty key", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_set("", s.pids.data(), 1); }, kNotSupported},
      {"5. num 32", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 32); }, kRtParam},
      {"5. num 2^32 + 32 (32 as int32)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), k32 + 32); }, kRtParam},
      {"5. num 32 before an empty key", nullptr, false,
       [](IpcmState& s) { return ipcm_set("", s.pids.data(), 32); }, kRtParam},
      {"5. num 32 before an unknown key", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.unknown, s.pids.data(), 32); }, kRtParam},
      {"6. empty key", nullptr, false, [](IpcmState& s) { return ipcm_set("", s.pids.data(), 1); },
       kRtParam},
      {"6. no NUL in 65 bytes", nullptr, false,
       [](IpcmState& s) { return ipcm_set(std::string(65, 'a'), s.pids.data(), 1); }, kRtParam},
      {"6. a live key with a 65th character", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed + "0", s.pids.data(), 1); }, kRtParam},
      {"6. empty key before the no-whitelist rule", nullptr, false,
       [](IpcmState& s) { return ipcm_set("", s.pids.data(), 1); }, kRtParam},
      {"7. unknown key", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.unknown, s.pids.data(), 1); }, kDrv},
      {"7. 64 characters, not a key", nullptr, false,
       [](IpcmState& s) { return ipcm_set(std::string(64, 'z'), s.pids.data(), 1); }, kDrv},
      {"7. a live key's text changed", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.malformed, s.pids.data(), 1); }, kDrv},
      {"7. a short key", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed.substr(0, 63), s.pids.data(), 1); }, kDrv},
      {"8. DISABLE_PID_VALIDATION key", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.open, s.pids.data(), 1); }, kIpcmNoPermission},
      {"8. no-whitelist rule before the empty-list rule", nullptr, false,
       [](IpcmState& s) {
         int32_t own[] = {0, ipcm_tgid()};
         return ipcm_set(s.open, own, 2);
       },
       kIpcmNoPermission},
      {"9. closed by the exporter after another process imported it", nullptr, false,
       [](IpcmState& s) { return ipcm_set(ipcm_closed_held_elsewhere(s, 0), s.pids.data(), 1); },
       kBadHandle},
      {"7. closed, no other process imported it", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.closed, s.pids.data(), 1); }, kDrv},
      {"12. every entry 0", nullptr, false,
       [](IpcmState& s) {
         int32_t zero[] = {0, 0, 0};
         return ipcm_set(s.listed, zero, 3);
       },
       kDrv},
      {"12. only the exporter's own pid", nullptr, false,
       [](IpcmState& s) {
         int32_t own[] = {ipcm_tgid()};
         return ipcm_set(s.listed, own, 1);
       },
       kDrv},
      {"12. 0 and the exporter's own pid", nullptr, false,
       [](IpcmState& s) {
         int32_t own[] = {0, ipcm_tgid(), 0};
         return ipcm_set(s.listed, own, 3);
       },
       kDrv},
      {"valid: 31 pids", nullptr, false,
       [](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), 31); }, kOk},
      {"valid: num 2^32 + 1 (1 as int32)", nullptr, false,
       [k32](IpcmState& s) { return ipcm_set(s.listed, s.pids.data(), k32 + 1); }, kOk},
      {"valid: 0 and the own pid skipped, one other", nullptr, false,
       [](IpcmState& s) {
         int32_t some[] = {0, ipcm_tgid(), kIpcmSomePid};
         return ipcm_set(s.listed, some, 3);
       },
       kOk},
      {"valid: listed twice", nullptr, false,
       [](IpcmState& s) {
         int32_t twice[] = {kIpcmSomePid, kIpcmSomePid};
         const aclError first = ipcm_set(s.listed, twice, 2);
         return first != kOk ? first : ipcm_set(s.listed, twice, 1);
       },
       kOk},
  };
  ipcm_run(rows);
}

// Step 11: at most 32768 pids; a pid already listed may be listed again (a fresh stamp).
TEST_F(IpcKeyMisuseTest, TheWhitelistHoldsAtMost32768Pids) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  char key[65];
  ASSERT_EQ(aclrtIpcMemGetExportKey(p, k2M, key, sizeof key, 0), kOk);
  const int32_t own = ipcm_tgid();
  int32_t next = 1000000;
  std::vector<int32_t> batch(31);
  size_t listed = 0;
  while (listed < 32768) {
    const size_t n = std::min<size_t>(31, 32768 - listed);
    for (size_t i = 0; i < n; ++i) {
      if (next == own) ++next;
      batch[i] = next++;
    }
    ASSERT_EQ(aclrtIpcMemSetImportPid(key, batch.data(), n), kOk) << "after " << listed << " pids";
    listed += n;
  }
  int32_t more[] = {next + 1};
  EXPECT_EQ(aclrtIpcMemSetImportPid(key, more, 1), kDrv) << "the 32769th pid";
  int32_t mixed[] = {1000000, next + 2};
  EXPECT_EQ(aclrtIpcMemSetImportPid(key, mixed, 2), kDrv) << "nothing of a refused call is applied";
  int32_t again[] = {1000000, 1000001};
  EXPECT_EQ(aclrtIpcMemSetImportPid(key, again, 2), kOk) << "listed pids take a fresh stamp";
  EXPECT_EQ(aclrtIpcMemClose(key), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// ---- §3.5 aclrtIpcMemImportByKey

// The import with its output checked: a refused call leaves *devPtr; an import made is closed.
aclError ipcm_import(const std::string& key, uint64_t flags, bool null_out = false) {
  void* out = reinterpret_cast<void*>(0x5a5a);
  const aclError rc = aclrtIpcMemImportByKey(null_out ? nullptr : &out, key.c_str(), flags);
  if (rc != kOk) {
    EXPECT_EQ(out, reinterpret_cast<void*>(0x5a5a)) << "a refused import wrote *devPtr";
  } else {
    EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  }
  return rc;
}

TEST_F(IpcKeyMisuseTest, ImportByKeyChecksInOrder) {
  const std::vector<IpcmRow> rows = {
      {"1. devPtr NULL", nullptr, false, [](IpcmState& s) { return ipcm_import(s.open, 0, true); },
       kParam},
      {"1. key NULL", nullptr, false,
       [](IpcmState&) {
         void* out = nullptr;
         return aclrtIpcMemImportByKey(&out, nullptr, 0);
       },
       kParam},
      {"1. devPtr NULL before flags 2", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.open, 2, true); }, kParam},
      {"1. devPtr NULL on EDGE without a context", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_import(s.open, 0, true); }, kParam},
      {"2. flags 2", nullptr, false, [](IpcmState& s) { return ipcm_import(s.open, 2, false); },
       kRtParam},
      {"2. flags 2 before the context", nullptr, true,
       [](IpcmState& s) { return ipcm_import(s.open, 2); }, kRtParam},
      {"2. flags 2 before the product", kIpcmEdge, false,
       [](IpcmState& s) { return ipcm_import(s.open, 2); }, kRtParam},
      {"3. no context", nullptr, true, [](IpcmState& s) { return ipcm_import(s.open, 0); },
       kNoContext},
      {"3. no context before an empty key", nullptr, true,
       [](IpcmState&) { return ipcm_import("", 0); }, kNoContext},
      {"3. no context before the product", kIpcmEdge, true,
       [](IpcmState& s) { return ipcm_import(s.open, 0); }, kNoContext},
      {"4. EDGE", kIpcmEdge, false, [](IpcmState& s) { return ipcm_import(s.open, 0); },
       kNotSupported},
      {"4. EDGE before an empty key", kIpcmEdge, false,
       [](IpcmState&) { return ipcm_import("", kIpcmPeer); }, kNotSupported},
      {"5. peer access: empty key", nullptr, false,
       [](IpcmState&) { return ipcm_import("", kIpcmPeer); }, kRtParam},
      {"5. peer access: no NUL in 65 bytes", nullptr, false,
       [](IpcmState&) { return ipcm_import(std::string(65, '0'), kIpcmPeer); }, kRtParam},
      {"5. peer access: unknown key", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.unknown, kIpcmPeer); }, kDrv},
      {"5. peer access: no live export before the key's format", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.malformed, kIpcmPeer); }, kDrv},
      {"6. empty key", nullptr, false, [](IpcmState&) { return ipcm_import("", 0); }, kRtParam},
      {"6. no NUL in 65 bytes", nullptr, false,
       [](IpcmState&) { return ipcm_import(std::string(65, '0'), 0); }, kRtParam},
      {"6. a live key with a 65th character", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.open + "0", 0); }, kRtParam},
      {"6. format: 63 characters", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.open.substr(0, 63), 0); }, kRtParam},
      {"6. format: a padding character not '0'", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.malformed, 0); }, kRtParam},
      {"6. format: upper-case hex", nullptr, false,
       [](IpcmState& s) {
         std::string k = s.open;
         k[0] = 'A';
         return ipcm_import(k, 0);
       },
       kRtParam},
      {"6. format: not hex", nullptr, false,
       [](IpcmState&) { return ipcm_import(std::string(64, 'z'), 0); }, kRtParam},
      {"6. format before 'no live export'", nullptr, false,
       [](IpcmState& s) {
         std::string k = s.unknown;
         k[63] = 'x';
         return ipcm_import(k, 0);
       },
       kRtParam},
      {"8. unknown key", nullptr, false, [](IpcmState& s) { return ipcm_import(s.unknown, 0); },
       kDrv},
      {"8. closed key", nullptr, false, [](IpcmState& s) { return ipcm_import(s.closed, 0); },
       kDrv},
      {"8. closed key another process imported", nullptr, false,
       [](IpcmState& s) { return ipcm_import(ipcm_closed_held_elsewhere(s, kIpcmOpen), 0); }, kDrv},
      {"9. own whitelisted key", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.listed, 0); }, kDrv},
      {"valid: own no-whitelist key", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.open, 0); }, kOk},
      {"valid: with peer access", nullptr, false,
       [](IpcmState& s) { return ipcm_import(s.open, kIpcmPeer); }, kOk},
      {"valid on A3", kIpcmA3, false, [](IpcmState& s) { return ipcm_import(s.open, 0); }, kOk},
  };
  ipcm_run(rows);
}

// ---- §3.6 aclrtIpcMemClose

TEST_F(IpcKeyMisuseTest, CloseChecksInOrder) {
  const std::vector<IpcmRow> rows = {
      {"1. key NULL", nullptr, false, [](IpcmState&) { return aclrtIpcMemClose(nullptr); }, kParam},
      {"1. key NULL on EDGE without a context", kIpcmEdge, true,
       [](IpcmState&) { return aclrtIpcMemClose(nullptr); }, kParam},
      {"2. EDGE", kIpcmEdge, false, [](IpcmState& s) { return aclrtIpcMemClose(s.listed.c_str()); },
       kNotSupported},
      {"2. EDGE before the context", kIpcmEdge, true,
       [](IpcmState& s) { return aclrtIpcMemClose(s.listed.c_str()); }, kNotSupported},
      {"2. EDGE before an empty key", kIpcmEdge, false,
       [](IpcmState&) { return aclrtIpcMemClose(""); }, kNotSupported},
      {"3. no context", nullptr, true,
       [](IpcmState& s) { return aclrtIpcMemClose(s.listed.c_str()); }, kNoContext},
      {"3. no context before an empty key", nullptr, true,
       [](IpcmState&) { return aclrtIpcMemClose(""); }, kNoContext},
      {"5. empty key", nullptr, false, [](IpcmState&) { return aclrtIpcMemClose(""); }, kRtParam},
      {"5. no NUL in 65 bytes", nullptr, false,
       [](IpcmState&) { return aclrtIpcMemClose(std::string(65, 'a').c_str()); }, kRtParam},
      {"5. a live key with a 65th character", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemClose((s.listed + "0").c_str()); }, kRtParam},
      {"5. unknown key", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemClose(s.unknown.c_str()); }, kDrv},
      {"5. 64 characters, not a key", nullptr, false,
       [](IpcmState&) { return aclrtIpcMemClose(std::string(64, 'z').c_str()); }, kDrv},
      {"5. a live key's text changed", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemClose(s.malformed.c_str()); }, kDrv},
      {"5. closed after another process imported it", nullptr, false,
       [](IpcmState& s) {
         return aclrtIpcMemClose(ipcm_closed_held_elsewhere(s, kIpcmOpen).c_str());
       },
       kBadHandle},
      {"5. closed, no other process imported it", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemClose(s.closed.c_str()); }, kDrv},
      {"valid: the exporter's key", nullptr, false,
       [](IpcmState& s) { return aclrtIpcMemClose(s.listed.c_str()); }, kOk},
      {"valid on A3", kIpcmA3, false, [](IpcmState& s) { return aclrtIpcMemClose(s.open.c_str()); },
       kOk},
  };
  ipcm_run(rows);
}

// ---- §3.7 aclrtIpcMemSetAttr (A3 only)

// Passed straight through, as the memcpy tests pass a bad kind: an enum variable holding a
// value outside the enum would be a load UBSan reports in the test itself.
aclError ipcm_attr(const std::string& key, int type, uint64_t attr) {
  return aclrtIpcMemSetAttr(key.c_str(), static_cast<aclrtIpcMemAttrType>(type), attr);
}

TEST_F(IpcKeyMisuseTest, SetAttrChecksInOrderOnA3) {
  const std::vector<IpcmRow> rows = {
      {"key NULL (no ACL-layer check)", kIpcmA3, false,
       [](IpcmState&) { return aclrtIpcMemSetAttr(nullptr, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 0); },
       kRtParam},
      {"key NULL on A2 without a context", kIpcmA2, true,
       [](IpcmState&) { return aclrtIpcMemSetAttr(nullptr, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 0); },
       kRtParam},
      {"type 1", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, 1, 0); }, kRtParam},
      {"type -1", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, -1, 0); },
       kRtParam},
      {"attr 4", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 4); }, kRtParam},
      {"attr 2^63", kIpcmA3, false,
       [](IpcmState& s) { return ipcm_attr(s.listed, 0, uint64_t(1) << 63); }, kRtParam},
      {"attr 4 before the context", kIpcmA3, true,
       [](IpcmState& s) { return ipcm_attr(s.listed, 0, 4); }, kRtParam},
      {"attr 4 before the product", kIpcmA2, false,
       [](IpcmState& s) { return ipcm_attr(s.listed, 0, 4); }, kRtParam},
      {"no context", kIpcmA3, true, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 0); },
       kNoContext},
      {"no context before the product", kIpcmA2, true,
       [](IpcmState& s) { return ipcm_attr(s.listed, 0, 0); }, kNoContext},
      {"A2", kIpcmA2, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 0); }, kNotSupported},
      {"A2 before an empty key", kIpcmA2, false, [](IpcmState&) { return ipcm_attr("", 0, 0); },
       kNotSupported},
      {"EDGE", kIpcmEdge, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 1); },
       kNotSupported},
      {"empty key", kIpcmA3, false, [](IpcmState&) { return ipcm_attr("", 0, 0); }, kRtParam},
      {"no NUL in 65 bytes", kIpcmA3, false,
       [](IpcmState&) { return ipcm_attr(std::string(65, 'a'), 0, 0); }, kRtParam},
      {"empty key before the UB link", kIpcmA3, false,
       [](IpcmState&) { return ipcm_attr("", 0, 2); }, kRtParam},
      {"UB_ONE_PORT_PATH", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 2); },
       kDrv},
      {"UB_MULTI_PORT_PATH", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 3); },
       kDrv},
      {"unknown key", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.unknown, 0, 0); },
       kDrv},
      {"closed key", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.closed, 0, 1); }, kDrv},
      {"valid: SIO", kIpcmA3, false, [](IpcmState& s) { return ipcm_attr(s.listed, 0, 0); }, kOk},
      {"valid: HCCS on a no-whitelist key", kIpcmA3, false,
       [](IpcmState& s) { return ipcm_attr(s.open, 0, 1); }, kOk},
  };
  ipcm_run(rows);
}

// ---- §3.8 aclrtIpcMemImportPidInterServer (A3 only)

aclError ipcm_inter(const std::string& key, std::vector<aclrtServerPid> entries, size_t num) {
  return aclrtIpcMemImportPidInterServer(key.c_str(), entries.data(), num);
}

TEST_F(IpcKeyMisuseTest, ImportPidInterServerChecksInOrderOnA3) {
  static int32_t some[2] = {kIpcmSomePid, kIpcmSomePid + 1};
  static int32_t own[1] = {0};
  const aclrtServerPid one{0, some, 1};
  const aclrtServerPid nul{0, nullptr, 1};
  auto with_num = [](uint64_t n) { return aclrtServerPid{0, some, static_cast<size_t>(n)}; };
  const std::vector<IpcmRow> rows = {
      {"key NULL (no ACL-layer check)", kIpcmA3, false,
       [one](IpcmState&) {
         aclrtServerPid e = one;
         return aclrtIpcMemImportPidInterServer(nullptr, &e, 1);
       },
       kRtParam},
      {"serverPids NULL", kIpcmA3, false,
       [](IpcmState& s) { return aclrtIpcMemImportPidInterServer(s.listed.c_str(), nullptr, 1); },
       kRtParam},
      {"num 0", kIpcmA3, false, [one](IpcmState& s) { return ipcm_inter(s.listed, {one}, 0); },
       kRtParam},
      {"num 0 on A2 without a context", kIpcmA2, true,
       [one](IpcmState& s) { return ipcm_inter(s.listed, {one}, 0); }, kRtParam},
      {"an entry's pid NULL", kIpcmA3, false,
       [nul](IpcmState& s) { return ipcm_inter(s.listed, {nul}, 1); }, kRtParam},
      {"an entry's pid NULL before the product", kIpcmA2, false,
       [nul](IpcmState& s) { return ipcm_inter(s.listed, {nul}, 1); }, kRtParam},
      {"entry 0 is refused before entry 1's pid NULL is seen", kIpcmA3, false,
       [nul](IpcmState& s) {
         own[0] = ipcm_tgid();
         return ipcm_inter(s.listed, {aclrtServerPid{0, own, 1}, nul}, 2);
       },
       kDrv},
      {"entry 1's pid NULL after entry 0 was applied", kIpcmA3, false,
       [one, nul](IpcmState& s) {
         return ipcm_inter(s.listed, {one, nul}, 2);
       },
       kRtParam},
      {"A2", kIpcmA2, false, [one](IpcmState& s) { return ipcm_inter(s.listed, {one}, 1); },
       kNotSupported},
      {"A2 before an entry's num 0", kIpcmA2, false,
       [with_num](IpcmState& s) { return ipcm_inter(s.listed, {with_num(0)}, 1); }, kNotSupported},
      {"950", "Ascend950PR_9599", false,
       [one](IpcmState& s) { return ipcm_inter(s.listed, {one}, 1); }, kNotSupported},
      {"an entry's num 0", kIpcmA3, false,
       [with_num](IpcmState& s) { return ipcm_inter(s.listed, {with_num(0)}, 1); }, kRtParam},
      {"an entry's num 32", kIpcmA3, false,
       [with_num](IpcmState& s) { return ipcm_inter(s.listed, {with_num(32)}, 1); }, kRtParam},
      {"an entry's num 2^31 (0 in 31 bits)", kIpcmA3, false,
       [with_num](IpcmState& s) { return ipcm_inter(s.listed, {with_num(uint64_t(1) << 31)}, 1); },
       kRtParam},
      {"an entry's num 32 before an empty key", kIpcmA3, false,
       [with_num](IpcmState&) { return ipcm_inter("", {with_num(32)}, 1); }, kRtParam},
      {"empty key", kIpcmA3, false, [one](IpcmState&) { return ipcm_inter("", {one}, 1); },
       kRtParam},
      {"unknown key", kIpcmA3, false,
       [one](IpcmState& s) { return ipcm_inter(s.unknown, {one}, 1); }, kDrv},
      {"no-whitelist key", kIpcmA3, false,
       [one](IpcmState& s) { return ipcm_inter(s.open, {one}, 1); }, kIpcmNoPermission},
      {"closed after another process imported it", kIpcmA3, false,
       [one](IpcmState& s) { return ipcm_inter(ipcm_closed_held_elsewhere(s, 0), {one}, 1); },
       kBadHandle},
      {"closed, no other process imported it", kIpcmA3, false,
       [one](IpcmState& s) { return ipcm_inter(s.closed, {one}, 1); }, kDrv},
      {"only the exporter's own pid", kIpcmA3, false,
       [](IpcmState& s) {
         own[0] = ipcm_tgid();
         return ipcm_inter(s.listed, {aclrtServerPid{0, own, 1}}, 1);
       },
       kDrv},
      {"valid: two entries, sdid not checked", kIpcmA3, false,
       [one](IpcmState& s) {
         return ipcm_inter(s.listed, {one, aclrtServerPid{77, some + 1, 1}}, 2);
       },
       kOk},
      {"valid: an entry's num 2^31 + 2 (2 in 31 bits)", kIpcmA3, false,
       [with_num](IpcmState& s) {
         return ipcm_inter(s.listed, {with_num((uint64_t(1) << 31) + 2)}, 1);
       },
       kOk},
      {"valid: no context needed", kIpcmA3, true,
       [one](IpcmState& s) { return ipcm_inter(s.listed, {one}, 1); }, kOk},
      {"no context: the key's rules still apply", kIpcmA3, true,
       [one](IpcmState& s) { return ipcm_inter(s.unknown, {one}, 1); }, kDrv},
  };
  ipcm_run(rows);
}

// ---- §10 products

// The four calls on every family but EDGE; SetAttr and ImportPidInterServer on A3 only.
TEST_F(IpcKeyMisuseTest, ProductsOfEachCall) {
  for (const char* soc : aclvmm::testing::kFamilySoc) {
    SCOPED_TRACE(soc);
    ScopedEnvRuntime env("ACLVMM_SOC", soc);
    ASSERT_TRUE(env.ok());
    const bool edge = std::string(soc) == kIpcmEdge;
    const bool a3 = std::string(soc) == kIpcmA3;
    const aclError four = edge ? kNotSupported : kOk;
    const aclError two = a3 ? kOk : kNotSupported;
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    char listed[65] = "", open[65] = "";
    EXPECT_EQ(aclrtIpcMemGetExportKey(p, k2M, listed, sizeof listed, 0), four);
    EXPECT_EQ(aclrtIpcMemGetExportKey(p, k2M, open, sizeof open, kIpcmOpen), four);
    if (edge) {
      std::snprintf(listed, sizeof listed, "%s", ipcm_key_text(ipcm_tgid(), 1).c_str());
      std::snprintf(open, sizeof open, "%s", ipcm_key_text(ipcm_tgid(), 2).c_str());
    }
    int32_t pid = kIpcmSomePid;
    EXPECT_EQ(aclrtIpcMemSetImportPid(listed, &pid, 1), four);
    void* imp = nullptr;
    EXPECT_EQ(aclrtIpcMemImportByKey(&imp, open, 0), four);
    if (!edge) {
      EXPECT_EQ(ipcm_import(open, kIpcmPeer), kOk) << "counted on the first import, closed";
    }
    EXPECT_EQ(aclrtIpcMemSetAttr(listed, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 1), two);
    aclrtServerPid entry{0, &pid, 1};
    EXPECT_EQ(aclrtIpcMemImportPidInterServer(listed, &entry, 1), two);
    EXPECT_EQ(aclrtIpcMemClose(open), four);  // the import
    EXPECT_EQ(aclrtIpcMemClose(open), four);  // the export
    EXPECT_EQ(aclrtIpcMemClose(listed), four);
    EXPECT_EQ(live_count("ipc_keys"), 0);
    EXPECT_EQ(live_count("ipc_imports"), 0);
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// ---- another process (forked children): the whitelist decides who imports; only the exporter
// changes or closes a key.

class IpcKeyOtherProcessTest : public AclTest {};

TEST_F(IpcKeyOtherProcessTest, TheWhitelistDecidesWhoImports) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(p, pattern(4096, 51));
  char key[65];
  ASSERT_EQ(aclrtIpcMemGetExportKey(p, k2M, key, sizeof key, 0), kOk);
  auto importer = [&key] {
    if (aclrtSetDevice(0) != kOk) return 10;
    void* imp = nullptr;
    const aclError rc = aclrtIpcMemImportByKey(&imp, key, 0);
    if (rc == kDrv) return 20;  // refused
    if (rc != kOk) return 11;
    std::string back(4096, '\0');
    if (aclrtMemcpy(&back[0], 4096, imp, 4096, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return 12;
    if (back != pattern(4096, 51)) return 13;
    const std::string reply = pattern(4096, 52);
    if (aclrtMemcpy(imp, 4096, reply.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE) != kOk) return 14;
    // A key of another process: it closes imports only.
    int32_t pid = kIpcmSomePid;
    if (aclrtIpcMemSetImportPid(key, &pid, 1) != kDrv) return 15;
    if (aclrtIpcMemClose(key) != kOk) return 16;
    if (aclrtIpcMemClose(key) != kDrv) return 17;
    return 0;
  };
  IpcmChild listed = ipcm_fork_waiting(importer);
  IpcmChild other = ipcm_fork_waiting(importer);
  ASSERT_GT(listed.pid, 0);
  ASSERT_GT(other.pid, 0);
  int32_t pid = listed.pid;
  ASSERT_EQ(aclrtIpcMemSetImportPid(key, &pid, 1), kOk);
  const long long denied = stat_int(stats(), "ipc.imports_denied");
  const ChildResult a = ipcm_release(listed);
  EXPECT_EQ(a.signal, 0);
  EXPECT_EQ(a.exit_code, 0) << "the whitelisted child";
  EXPECT_EQ(ipcm_release(other).exit_code, 20) << "the child not listed is refused (507899)";
  EXPECT_EQ(stat_int(stats(), "ipc.imports_denied"), denied + 1);
  EXPECT_EQ(get(p, 4096), pattern(4096, 52)) << "the child's write through its import";
  EXPECT_EQ(aclrtIpcMemClose(key), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// The exporter closes a key while another process holds an import of it: the importer keeps the
// bytes (deliberate) and closes its import; the exporter's later close or set-pid is 107017.
TEST_F(IpcKeyOtherProcessTest, AKeyClosedWhileAnotherProcessHoldsAnImport) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(p, pattern(4096, 55));
  char key[65];
  ASSERT_EQ(aclrtIpcMemGetExportKey(p, k2M, key, sizeof key, 0), kOk);
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  IpcmChild child = ipcm_fork_waiting([&] {
    close(up[0]);
    close(down[1]);
    if (aclrtSetDevice(0) != kOk) return 10;
    void* imp = nullptr;
    const aclError rc = aclrtIpcMemImportByKey(&imp, key, 0);
    if (write(up[1], "i", 1) != 1) return 11;
    if (rc != kOk) return 12;
    char c = 0;
    if (read(down[0], &c, 1) != 1) return 13;  // the exporter has closed the key
    std::string back(4096, '\0');
    if (aclrtMemcpy(&back[0], 4096, imp, 4096, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return 14;
    if (back != pattern(4096, 55)) return 15;
    if (aclrtIpcMemClose(key) != kOk) return 16;   // its import
    if (aclrtIpcMemClose(key) != kDrv) return 17;  // nothing left of it here
    return 0;
  });
  close(up[1]);
  close(down[0]);
  ASSERT_GT(child.pid, 0);
  int32_t pid = child.pid;
  ASSERT_EQ(aclrtIpcMemSetImportPid(key, &pid, 1), kOk);
  EXPECT_EQ(write(child.gate, "g", 1), 1);
  char c = 0;
  EXPECT_EQ(read(up[0], &c, 1), 1);
  EXPECT_EQ(aclrtIpcMemClose(key), kOk);
  EXPECT_EQ(live_count("ipc_keys"), 0);
  EXPECT_EQ(aclrtIpcMemClose(key), kBadHandle);
  EXPECT_EQ(aclrtIpcMemSetImportPid(key, &pid, 1), kBadHandle);
  void* imp = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&imp, key, 0), kDrv);
  EXPECT_EQ(write(down[1], "c", 1), 1);
  close(down[1]);
  close(up[0]);
  close(child.gate);
  EXPECT_CHILD_OK(wait_child(child.pid));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A3: only the exporter sets a key's link (207006 elsewhere); ImportPidInterServer's entries
// before a NULL pid stay applied; a no-whitelist key is anyone's to import but not to change.
TEST_F(IpcKeyOtherProcessTest, OnlyTheExporterChangesAKeyAndEarlierEntriesStayApplied) {
  ScopedEnvRuntime env("ACLVMM_SOC", kIpcmA3);
  ASSERT_TRUE(env.ok());
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(p, pattern(4096, 53));
  char listed[65], open[65];
  ASSERT_EQ(aclrtIpcMemGetExportKey(p, k2M, listed, sizeof listed, 0), kOk);
  ASSERT_EQ(aclrtIpcMemGetExportKey(p, k2M, open, sizeof open, kIpcmOpen), kOk);
  IpcmChild child = ipcm_fork_waiting([&] {
    if (aclrtSetDevice(0) != kOk) return 10;
    if (aclrtIpcMemSetAttr(listed, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 1) != kIpcmNoPermission)
      return 11;
    if (aclrtIpcMemSetAttr(open, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 0) != kIpcmNoPermission)
      return 12;
    int32_t pid = kIpcmSomePid;
    if (aclrtIpcMemSetImportPid(open, &pid, 1) != kIpcmNoPermission) return 13;
    if (aclrtIpcMemSetImportPid(listed, &pid, 1) != kDrv) return 14;
    aclrtServerPid entry{0, &pid, 1};
    if (aclrtIpcMemImportPidInterServer(listed, &entry, 1) != kDrv) return 15;
    if (aclrtIpcMemClose(listed) != kDrv) return 16;
    void* imp = nullptr;
    if (aclrtIpcMemImportByKey(&imp, listed, 0) != kOk) return 17;  // listed by entry 0
    std::string back(4096, '\0');
    if (aclrtMemcpy(&back[0], 4096, imp, 4096, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return 18;
    if (back != pattern(4096, 53)) return 19;
    if (aclrtIpcMemClose(listed) != kOk) return 20;
    if (aclrtIpcMemImportByKey(&imp, open, 0) != kOk) return 21;
    if (aclrtIpcMemClose(open) != kOk) return 22;
    return 0;
  });
  ASSERT_GT(child.pid, 0);
  int32_t pid = child.pid;
  aclrtServerPid entries[2] = {{0, &pid, 1}, {0, nullptr, 1}};
  EXPECT_EQ(aclrtIpcMemImportPidInterServer(listed, entries, 2), kRtParam);
  EXPECT_CHILD_OK(ipcm_release(child));
  EXPECT_EQ(aclrtIpcMemClose(listed), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
