// IPC memory sharing by key (runtime-extra.md §3, §11) in one process: the key's text (§3.1),
// what may be exported (§3.2), an own no-whitelist key imported as a second address for the
// same bytes (§3.5), import counts and closes (§3.6), what freeing, unmapping, the device's last
// reset and aclFinalize do to keys and imports, the statistics, the leak report, failure
// injection, and concurrent imports. The checks of each call in order are in
// ipc_key_misuse_test.cpp.
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr size_t kIpckKeyBytes = 65;
constexpr uint64_t kIpckOpen = ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION;  // no whitelist
constexpr uint64_t kIpckWhitelist = ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT;
constexpr char kIpckUntouched = 0x7f;  // what a key buffer holds before a call

// The key the export wrote (its 64 characters), or "" with a test failure.
std::string ipck_export(void* p, size_t size, uint64_t flags) {
  char buf[kIpckKeyBytes];
  std::memset(buf, kIpckUntouched, sizeof buf);
  const aclError rc = aclrtIpcMemGetExportKey(p, size, buf, sizeof buf, flags);
  EXPECT_EQ(rc, kOk) << recent_msg();
  if (rc != kOk) return "";
  EXPECT_EQ(buf[64], '\0');
  return std::string(buf, strnlen(buf, sizeof buf));
}

// The import's address, or nullptr with a test failure.
void* ipck_import(const std::string& key, uint64_t flags = ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT) {
  void* p = nullptr;
  const aclError rc = aclrtIpcMemImportByKey(&p, key.c_str(), flags);
  EXPECT_EQ(rc, kOk) << recent_msg();
  EXPECT_NE(p, nullptr);
  return p;
}

// aclrtIpcMemImportByKey's code; *devPtr must stay untouched when it fails.
aclError ipck_import_rc(const std::string& key, uint64_t flags = 0) {
  void* p = reinterpret_cast<void*>(0x5a5a);
  const aclError rc = aclrtIpcMemImportByKey(&p, key.c_str(), flags);
  if (rc != kOk) {
    EXPECT_EQ(p, reinterpret_cast<void*>(0x5a5a)) << "output written by a failed import";
  }
  return rc;
}

aclError ipck_set_pid(const std::string& key, int32_t pid) {
  return aclrtIpcMemSetImportPid(key.c_str(), &pid, 1);
}

int32_t ipck_tgid() {
  int32_t tgid = 0;
  EXPECT_EQ(aclrtDeviceGetBareTgid(&tgid), kOk);
  return tgid;
}

// §3.1's text for the given fields.
std::string ipck_expected_key(int32_t tgid, uint64_t counter, int32_t phys) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "%08x%016llx%02x00", static_cast<uint32_t>(tgid),
                static_cast<unsigned long long>(counter), static_cast<unsigned>(phys));
  std::string s(buf);
  s.resize(64, '0');
  return s;
}
uint64_t ipck_counter(const std::string& key) {
  return key.size() == 64 ? std::strtoull(key.substr(8, 16).c_str(), nullptr, 16) : 0;
}

aclrtPtrAttributes ipck_attributes(const void* p) {
  aclrtPtrAttributes a{};
  EXPECT_EQ(aclrtPointerGetAttributes(p, &a), kOk);
  return a;
}

struct IpckRange {
  void* base = nullptr;
  size_t size = 0;
};
IpckRange ipck_range(void* p) {
  IpckRange r;
  EXPECT_EQ(aclrtMemGetAddressRange(p, &r.base, &r.size), kOk);
  return r;
}

// "" when `got` is `want`, else where they first differ (keeps failures of 2 MiB compares short).
std::string ipck_diff(const std::string& got, const std::string& want) {
  if (got == want) return "";
  if (got.size() != want.size()) {
    return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size());
  }
  size_t i = 0;
  while (got[i] == want[i]) ++i;
  return "first difference at byte " + std::to_string(i);
}

long long ipck_keys() { return live_count("ipc_keys"); }
long long ipck_imports() { return live_count("ipc_imports"); }
long long ipck_denied() { return stat_int(stats(), "ipc.imports_denied"); }

// A kernel of `stream`'s device writing `text` at a device address; the stream's code.
struct IpckKernelArgs {
  void* at;
  char text[16];
};
aclError ipck_kernel_write(aclrtStream stream, IpckKernelArgs* args) {
  const aclError rc = aclvmmLaunchKernel(
      stream,
      [](aclvmmKernelContext* ctx, void* raw) {
        auto* a = static_cast<IpckKernelArgs*>(raw);
        (void)aclvmmKernelWrite(ctx, a->at, a->text, sizeof a->text);
      },
      args);
  if (rc != kOk) return rc;
  return aclrtSynchronizeStream(stream);
}

class IpcKeyTest : public AllocTest {
 protected:
  // A VMM mapping of `size` bytes of a fresh device handle in its own reservation.
  struct Vmm {
    void* va = nullptr;
    aclrtDrvMemHandle h = nullptr;
    size_t size = 0;
  };
  Vmm vmm(size_t size, uint32_t device = 0) {
    Vmm m;
    m.size = size;
    m.va = reserve(size);
    m.h = make_handle(size, device);
    EXPECT_EQ(aclrtMapMem(m.va, size, 0, m.h, 0), kOk);
    return m;
  }
  void unvmm(const Vmm& m) {
    EXPECT_EQ(aclrtUnmapMem(m.va), kOk);
    EXPECT_EQ(aclrtFreePhysical(m.h), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(m.va), kOk);
  }
  // Writes a pattern through `a`, reads it through `b`, then the other way round.
  void expect_shared(void* a, void* b, size_t n, unsigned seed) {
    const std::string one = pattern(n, seed), two = pattern(n, seed + 1);
    h2d(a, one);
    EXPECT_EQ(ipck_diff(get(b, n), one), "")
        << "a write through the first address, read through the second";
    h2d(b, two);
    EXPECT_EQ(ipck_diff(get(a, n), two), "")
        << "a write through the second address, read through the first";
  }
};

// ---- §3.1 the key

TEST_F(IpcKeyTest, ExportWritesAll65BytesInTheDocumentedLayout) {
  char* block = dev(4 * kMiB);
  char buf[80];
  std::memset(buf, kIpckUntouched, sizeof buf);
  ASSERT_EQ(aclrtIpcMemGetExportKey(block, k2M, buf, sizeof buf, kIpckWhitelist), kOk);
  const std::string first(buf, strnlen(buf, sizeof buf));
  ASSERT_EQ(first.size(), 64u);
  EXPECT_EQ(buf[64], '\0');
  for (size_t i = 65; i < sizeof buf; ++i) {
    EXPECT_EQ(buf[i], kIpckUntouched) << "byte " << i << " past the 65 of the key was written";
  }
  const uint64_t counter = ipck_counter(first);
  EXPECT_GE(counter, 1u);
  int32_t phys0 = -1;
  ASSERT_EQ(aclrtGetPhyDevIdByLogicDevId(0, &phys0), kOk);
  EXPECT_EQ(first, ipck_expected_key(ipck_tgid(), counter, phys0));

  // The counter goes up by one per export of this process, whatever the flags and memory.
  EXPECT_EQ(ipck_export(block + k2M, k2M, kIpckOpen),
            ipck_expected_key(ipck_tgid(), counter + 1, phys0));
  EXPECT_EQ(ipck_export(block, 4 * kMiB, kIpckWhitelist),
            ipck_expected_key(ipck_tgid(), counter + 2, phys0));

  // The device is the one holding the memory (physical id), not the current one.
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  char* other = dev(k2M);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  int32_t phys1 = -1;
  ASSERT_EQ(aclrtGetPhyDevIdByLogicDevId(1, &phys1), kOk);
  EXPECT_EQ(ipck_export(other, k2M, kIpckWhitelist),
            ipck_expected_key(ipck_tgid(), counter + 3, phys1));
  EXPECT_EQ(ipck_keys(), 4);
}

// In a fresh process the counter starts at 1; the text names that process's bare tgid.
TEST_F(IpcKeyTest, AFreshProcessCountsFromOne) {
  EXPECT_CHILD_OK(run_in_child([] {
    if (aclrtSetDevice(0) != kOk) return 10;
    void* p = nullptr;
    if (aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST) != kOk) return 11;
    int32_t tgid = 0;
    if (aclrtDeviceGetBareTgid(&tgid) != kOk || tgid != getpid()) return 12;
    for (uint64_t n = 1; n <= 2; ++n) {
      char key[kIpckKeyBytes];
      if (aclrtIpcMemGetExportKey(p, k2M, key, sizeof key, n - 1) != kOk) return 13;
      if (std::memcmp(key, ipck_expected_key(tgid, n, 0).c_str(), kIpckKeyBytes) != 0) {
        return 20 + static_cast<int>(n);
      }
    }
    return 0;
  }));
}

// The same range exported twice gives two different keys; both stay valid.
TEST_F(IpcKeyTest, TheSameRangeExportedTwiceGivesTwoValidKeys) {
  char* block = dev(k2M);
  const std::string a = ipck_export(block, k2M, kIpckOpen);
  const std::string b = ipck_export(block, k2M, kIpckOpen);
  EXPECT_NE(a, b);
  EXPECT_EQ(ipck_keys(), 2);
  void* ia = ipck_import(a);
  void* ib = ipck_import(b);
  EXPECT_NE(ia, ib) << "two keys are two imports";
  EXPECT_EQ(ipck_imports(), 2);
  expect_shared(ia, ib, 4096, 1);
  expect_shared(block, ib, 4096, 3);
  for (const std::string* k : {&a, &b}) {
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);  // the import
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);  // the export
  }
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(ipck_imports(), 0);
}

// ---- §3.2 / §3.5 what may be exported, and the import of an own no-whitelist key

// A huge-page block's second 2 MiB: a second address (in the aclrtMalloc window, aligned to the
// exporter's page size) showing the same bytes to copies, fills and kernels.
TEST_F(IpcKeyTest, AnOwnNoWhitelistKeyGivesASecondAddressForTheSameBytes) {
  char* block = dev(4 * kMiB);
  char* part = block + k2M;
  const std::string key = ipck_export(part, k2M, kIpckOpen);
  EXPECT_EQ(ipck_keys(), 1);
  EXPECT_EQ(ipck_imports(), 0);
  char* imp = static_cast<char*>(ipck_import(key));
  ASSERT_NE(imp, nullptr);
  EXPECT_NE(imp, part);
  EXPECT_EQ(u64(imp) % k2M, 0u) << "aligned to the exporter's page size";
  EXPECT_EQ(ipck_imports(), 1);
  EXPECT_EQ(ipck_keys(), 1);

  // Queries.
  const aclrtPtrAttributes a = ipck_attributes(imp + 100);
  EXPECT_EQ(load_raw(a.location.type), ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(a.location.id, 0u);
  EXPECT_EQ(a.pageSize, ipck_attributes(part).pageSize);
  EXPECT_EQ(a.pageSize, k2M);
  const IpckRange r = ipck_range(imp + k2M - 1);
  EXPECT_EQ(r.base, imp);
  EXPECT_EQ(r.size, k2M);

  // Copies both ways, device-to-device, fills.
  expect_shared(part, imp, k2M, 5);
  expect_shared(imp + kMiB + 4096, part + kMiB + 4096, 8192, 7);
  ASSERT_EQ(aclrtMemset(imp + 64, 64, 0x3c, 64), kOk);
  EXPECT_EQ(get(part + 64, 64), std::string(64, 0x3c));
  char* copy = dev(4096);
  ASSERT_EQ(aclrtMemcpy(copy, 4096, imp, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE), kOk);
  EXPECT_EQ(ipck_diff(get(copy, 4096), get(part, 4096)), "");
  ASSERT_EQ(aclrtMemcpy(imp + 8192, 4096, block, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE), kOk);
  EXPECT_EQ(ipck_diff(get(part + 8192, 4096), get(block, 4096)), "");

  // Asynchronous copies and fills, and a kernel, on a stream.
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  ASSERT_EQ(aclrtMemsetAsync(imp + 4096, 128, 0x11, 128, s), kOk);
  const std::string bytes = pattern(256, 9);
  char* host = pinned(256);
  std::memcpy(host, bytes.data(), bytes.size());
  ASSERT_EQ(aclrtMemcpyAsync(imp + 12288, 256, host, 256, ACL_MEMCPY_HOST_TO_DEVICE, s), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(get(part + 4096, 128), std::string(128, 0x11));
  EXPECT_EQ(ipck_diff(get(part + 12288, 256), bytes), "");
  IpckKernelArgs args{imp + 20000, "by a kernel"};
  EXPECT_EQ(ipck_kernel_write(s, &args), kOk);
  EXPECT_EQ(get(part + 20000, 12), std::string("by a kernel", 12));
  EXPECT_EQ(aclrtDestroyStream(s), kOk);

  // aclrtFree of the import address: 107000 and nothing changes (deliberate).
  const LiveCounts before = live_counts();
  EXPECT_EQ(aclrtFree(imp), kRtParam);
  EXPECT_EQ(live_counts(), before)
      << "before: " << describe(before) << "\nafter: " << describe(live_counts());
  EXPECT_EQ(get(imp + 64, 64), std::string(64, 0x3c)) << "the import still reads";

  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(ipck_keys(), 1);
  aclError rc = kOk;
  (void)get(imp, 16, &rc);
  EXPECT_EQ(rc, kDrv) << "the closed import's address still reads";
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
}

// An export's size is rounded up to the page size: the import covers whole pages.
TEST_F(IpcKeyTest, TheImportCoversTheSizeRoundedUpToThePageSize) {
  char* block = dev(4 * kMiB);
  h2d(block + k2M, pattern(4096, 11));
  const std::string one = ipck_export(block, 1, kIpckOpen);
  const std::string three = ipck_export(block, 3 * kMiB, kIpckOpen);
  char* i1 = static_cast<char*>(ipck_import(one));
  char* i3 = static_cast<char*>(ipck_import(three));
  EXPECT_EQ(ipck_range(i1).size, k2M);
  EXPECT_EQ(ipck_range(i3).size, 4 * kMiB);
  EXPECT_EQ(ipck_diff(get(i3 + k2M, 4096), pattern(4096, 11)), "");
  expect_shared(i1 + k2M - 4096, block + k2M - 4096, 4096, 13);
  for (const std::string* k : {&one, &three}) {
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);
  }
}

// A normal-page (4 KiB) block may be exported at a 4 KiB offset; the import has 4 KiB pages.
TEST_F(IpcKeyTest, ANormalPageBlockIsExportableAtA4KiBOffset) {
  void* raw = nullptr;
  ASSERT_EQ(aclrtMalloc(&raw, 64 * 1024, ACL_MEM_MALLOC_NORMAL_ONLY), kOk);
  char* block = static_cast<char*>(raw);
  ASSERT_EQ(ipck_attributes(block).pageSize, 4096u);
  const std::string key = ipck_export(block + 4096, 8192, kIpckOpen);
  ASSERT_FALSE(key.empty());
  void* imp = nullptr;
  const aclError rc = aclrtIpcMemImportByKey(&imp, key.c_str(), 0);
  EXPECT_EQ(rc, kOk) << recent_msg();
  if (rc == kOk) {
    EXPECT_EQ(u64(imp) % 4096, 0u);
    EXPECT_EQ(ipck_attributes(imp).pageSize, 4096u);
    EXPECT_EQ(ipck_range(imp).size, 8192u);
    expect_shared(block + 4096, imp, 8192, 15);
    EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  }
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(block), kOk);
}

// aclrtMallocAlign32 blocks and VMM mappings of device handles (2 MiB pages) are exportable.
TEST_F(IpcKeyTest, MallocAlign32BlocksAndVmmMappingsAreExportable) {
  void* a32 = nullptr;
  ASSERT_EQ(aclrtMallocAlign32(&a32, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const std::string ka = ipck_export(a32, k2M, kIpckOpen);
  void* ia = ipck_import(ka);
  expect_shared(a32, ia, 4096, 17);

  const Vmm m = vmm(4 * kMiB);
  const std::string kv = ipck_export(at(m.va, k2M), k2M, kIpckOpen);
  char* iv = static_cast<char*>(ipck_import(kv));
  EXPECT_EQ(ipck_attributes(iv).pageSize, k2M);
  EXPECT_EQ(load_raw(ipck_attributes(iv).location.type), ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(ipck_range(iv).size, k2M);
  expect_shared(at(m.va, k2M), iv, k2M, 19);
  EXPECT_EQ(ipck_imports(), 2);
  for (const std::string* k : {&ka, &kv}) {
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);
    EXPECT_EQ(aclrtIpcMemClose(k->c_str()), kOk);
  }
  EXPECT_EQ(aclrtFree(a32), kOk);
  unvmm(m);
}

// §3.2's refusals: 507899, the key buffer untouched, no key left.
TEST_F(IpcKeyTest, WhatMayNotBeExportedIs507899) {
  char* block = dev(4 * kMiB);
  const size_t block_size = ipck_range(block).size;
  void* normal = nullptr;
  ASSERT_EQ(aclrtMalloc(&normal, 64 * 1024, ACL_MEM_MALLOC_NORMAL_ONLY), kOk);
  std::vector<char> process(3 * k2M);
  char* process_memory = reinterpret_cast<char*>(round_up(u64(process.data()), k2M));
  char* host_block = pinned(k2M);
  void* managed = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&managed, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  const std::string open_key = ipck_export(block, k2M, kIpckOpen);
  void* imported = ipck_import(open_key);
  // A handle exported as a shareable handle, mapped.
  const Vmm shared = vmm(k2M);
  uint64_t token = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(shared.h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            kOk);
  // A handle imported from a shareable handle (our own, onto device 1), mapped.
  aclrtDrvMemHandle imported_handle = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(token, 1, &imported_handle), kOk);
  void* imported_va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(imported_va, k2M, 0, imported_handle, 0), kOk);
  // Host memory mapped into a reservation.
  aclrtPhysicalMemProp hp = host_prop();
  aclrtDrvMemHandle host_handle = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&host_handle, k2M, &hp, 0), kOk);
  void* host_va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(host_va, k2M, 0, host_handle, 0), kOk);
  // Two mappings side by side in one reservation, and an unmapped tail.
  void* two = reserve(6 * kMiB);
  aclrtDrvMemHandle h1 = make_handle(), h2 = make_handle();
  ASSERT_EQ(aclrtMapMem(two, k2M, 0, h1, 0), kOk);
  ASSERT_EQ(aclrtMapMem(at(two, k2M), k2M, 0, h2, 0), kOk);
  // A freed block.
  void* freed = nullptr;
  ASSERT_EQ(aclrtMalloc(&freed, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtFree(freed), kOk);

  const struct {
    const char* name;
    void* p;
    size_t size;
  } rows[] = {
      {"process memory", process_memory, 4096},
      {"aclrtMallocHost memory", host_block, 4096},
      {"managed memory", managed, k2M},
      {"an IPC import", imported, k2M},
      {"a mapping of a handle exported as a shareable handle", shared.va, k2M},
      {"a mapping of a handle imported from a shareable handle", imported_va, k2M},
      {"a mapping of host memory", host_va, k2M},
      {"a range leaving the aclrtMalloc block", block + k2M, block_size - k2M + 1},
      {"a range leaving the normal-page block", normal, ipck_range(normal).size + 1},
      {"a range leaving its mapping into the next", two, k2M + 1},
      {"a range leaving its mapping into unmapped pages", at(two, k2M), k2M + 4096},
      {"devPtr inside a huge page", block + 4096, 4096},
      {"devPtr inside a 4 KiB page", static_cast<char*>(normal) + 100, 100},
      {"devPtr inside a mapping's 2 MiB page", at(two, 4096), 4096},
      {"reserved, nothing mapped", at(two, 4 * kMiB), k2M},
      {"a freed block", freed, k2M},
  };
  const long long keys = ipck_keys();
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    char buf[kIpckKeyBytes];
    std::memset(buf, kIpckUntouched, sizeof buf);
    EXPECT_EQ(aclrtIpcMemGetExportKey(r.p, r.size, buf, sizeof buf, kIpckOpen), kDrv);
    EXPECT_EQ(std::string(buf, sizeof buf), std::string(sizeof buf, kIpckUntouched))
        << "a refused export wrote the key buffer";
    EXPECT_EQ(ipck_keys(), keys) << "a refused export left a key";
  }
  EXPECT_EQ(aclrtIpcMemClose(open_key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open_key.c_str()), kOk);
  EXPECT_EQ(aclrtUnmapMem(two), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(two, k2M)), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(two), kOk);
  for (aclrtDrvMemHandle h : {h1, h2}) EXPECT_EQ(aclrtFreePhysical(h), kOk);
  for (void* va : {host_va, imported_va}) {
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
  EXPECT_EQ(aclrtFreePhysical(host_handle), kOk);
  EXPECT_EQ(aclrtFreePhysical(imported_handle), kOk);
  unvmm(shared);
  EXPECT_EQ(aclrtFree(managed), kOk);
  EXPECT_EQ(aclrtFree(normal), kOk);
}

// The exporter is never on its own whitelist: its whitelisted key does not import here, whatever
// is listed; the refusal is counted.
TEST_F(IpcKeyTest, AnOwnWhitelistedKeyCannotBeImported) {
  char* block = dev(k2M);
  const std::string key = ipck_export(block, k2M, kIpckWhitelist);
  const long long denied = ipck_denied();
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  EXPECT_EQ(ipck_denied(), denied + 1);
  int32_t pids[] = {ipck_tgid(), 1};
  EXPECT_EQ(aclrtIpcMemSetImportPid(key.c_str(), pids, 2), kOk);
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  EXPECT_EQ(ipck_import_rc(key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
}

// ---- §3.5 step 7 and §3.6: counts and closes

TEST_F(IpcKeyTest, ImportingAgainGivesTheSameAddressAndEachImportNeedsItsClose) {
  char* block = dev(k2M);
  h2d(block, pattern(4096, 21));
  const std::string key = ipck_export(block, k2M, kIpckOpen);
  void* first = ipck_import(key);
  void* second = ipck_import(key);
  void* third = ipck_import(key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS);
  EXPECT_EQ(second, first);
  EXPECT_EQ(third, first);
  EXPECT_EQ(ipck_imports(), 1) << "one address, counted once";
  EXPECT_EQ(ipck_keys(), 1);
  for (int left = 2; left >= 1; --left) {
    EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
    EXPECT_EQ(ipck_imports(), 1) << left << " import(s) still open";
    EXPECT_EQ(ipck_keys(), 1);
    EXPECT_EQ(ipck_diff(get(first, 4096), pattern(4096, 21)), "") << "the address stays valid";
  }
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);  // the last import
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(ipck_keys(), 1) << "closing imports leaves the export";
  aclError rc = kOk;
  (void)get(first, 16, &rc);
  EXPECT_NE(rc, kOk) << "the last close left the address mapped";
  // Now the close is the exporter's: the key ends.
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  // Closed, and no importer holds it (this process closed its own): the export is gone.
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kDrv);
  EXPECT_EQ(ipck_diff(get(block, 4096), pattern(4096, 21)), "")
      << "closing touched the exporter's memory";
}

// A key that never served an import: after its close, close and set-pid find nothing (507899).
TEST_F(IpcKeyTest, AClosedKeyThatServedNoImportIsGone) {
  char* block = dev(k2M);
  const std::string key = ipck_export(block, k2M, kIpckWhitelist);
  EXPECT_EQ(ipck_set_pid(key, 12345), kOk);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kDrv);
  EXPECT_EQ(ipck_set_pid(key, 12345), kDrv);
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  const std::string open = ipck_export(block, k2M, kIpckOpen);
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);
  EXPECT_EQ(ipck_import_rc(open), kDrv);
  EXPECT_EQ(ipck_set_pid(open, 12345), kDrv);
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kDrv);
}

// A key of the same text layout but another counter names nothing.
TEST_F(IpcKeyTest, AWellFormedKeyNoExportMadeNamesNothing) {
  char* block = dev(k2M);
  const std::string key = ipck_export(block, k2M, kIpckOpen);
  const std::string other = ipck_expected_key(ipck_tgid(), ipck_counter(key) + 1000, 0);
  EXPECT_EQ(ipck_import_rc(other), kDrv);
  EXPECT_EQ(ipck_import_rc(other, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
  EXPECT_EQ(aclrtIpcMemClose(other.c_str()), kDrv);
  EXPECT_EQ(ipck_set_pid(other, 12345), kDrv);
  EXPECT_EQ(ipck_keys(), 1);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
}

// ---- the exporter's memory going away

// After aclrtFree of the exported block new imports fail, but the key lives until it is closed
// (0); an import made before keeps its bytes, and importing again counts on it (§3.5 step 7).
TEST_F(IpcKeyTest, AfterTheBlockIsFreedImportsFailAndTheKeyStillCloses) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtMalloc(&b, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(b, pattern(4096, 23));
  const std::string ka = ipck_export(a, k2M, kIpckOpen);
  const std::string kb = ipck_export(b, k2M, kIpckOpen);
  void* held = ipck_import(kb);
  ASSERT_EQ(aclrtFree(a), kOk);
  ASSERT_EQ(aclrtFree(b), kOk);
  EXPECT_EQ(ipck_keys(), 2) << "freeing keeps the keys";
  EXPECT_EQ(ipck_import_rc(ka), kDrv);
  EXPECT_EQ(ipck_import_rc(ka, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
  EXPECT_EQ(ipck_imports(), 1);
  EXPECT_EQ(aclrtIpcMemClose(ka.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 1);
  // The held import keeps the bytes (deliberate) and counts again.
  EXPECT_EQ(ipck_diff(get(held, 4096), pattern(4096, 23)), "");
  EXPECT_EQ(ipck_import(kb), held);
  EXPECT_EQ(aclrtIpcMemClose(kb.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(kb.c_str()), kOk);
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(ipck_import_rc(kb), kDrv);
  EXPECT_EQ(aclrtIpcMemClose(kb.c_str()), kOk) << "the export";
  EXPECT_EQ(ipck_keys(), 0);
}

// The same after aclrtUnmapMem of the exported VMM mapping; mapping the handle again does not
// bring the key back.
TEST_F(IpcKeyTest, AfterTheMappingIsUnmappedImportsFailAndTheKeyStillCloses) {
  const Vmm m = vmm(k2M);
  h2d(m.va, pattern(4096, 25));
  const std::string key = ipck_export(m.va, k2M, kIpckOpen);
  const std::string held_key = ipck_export(m.va, k2M, kIpckOpen);
  void* held = ipck_import(held_key);
  ASSERT_EQ(aclrtUnmapMem(m.va), kOk);
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  EXPECT_EQ(ipck_diff(get(held, 4096), pattern(4096, 25)), "");
  ASSERT_EQ(aclrtMapMem(m.va, k2M, 0, m.h, 0), kOk);
  EXPECT_EQ(ipck_import_rc(key), kDrv) << "a new mapping is not the exported one";
  EXPECT_EQ(ipck_keys(), 2);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(held_key.c_str()), kOk);  // the import
  EXPECT_EQ(aclrtIpcMemClose(held_key.c_str()), kOk);  // the export
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(ipck_imports(), 0);
  unvmm(m);
}

// ---- devices

// Imports onto another device work without peer access (deliberate); ENABLE_PEER_ACCESS also
// enables peer access between the two devices in both directions. One key is imported onto one
// device per process.
TEST_F(IpcKeyTest, ImportsOntoAnotherDeviceAndThePeerAccessFlag) {
  char* block = dev(k2M);
  char* unrelated0 = dev(4096);  // not exported: reachable from device 1 only with peer access
  h2d(unrelated0, pattern(4096, 27));
  const std::string key = ipck_export(block, k2M, kIpckOpen);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  char* unrelated1 = dev(4096);
  aclError rc = kOk;
  (void)get(unrelated0, 4096, &rc);
  ASSERT_EQ(rc, kDrv) << "device 1 reaches device 0's block before any peer access";

  void* imp = ipck_import(key);
  EXPECT_EQ(ipck_attributes(imp).location.id, 1u) << "the importing device";
  // Each side through its own device: written on device 1, read on device 0, and back.
  h2d(imp, pattern(4096, 29));
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(ipck_diff(get(block, 4096), pattern(4096, 29)), "");
  h2d(block, pattern(4096, 30));
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(ipck_diff(get(imp, 4096), pattern(4096, 30)), "");
  (void)get(unrelated0, 4096, &rc);
  EXPECT_EQ(rc, kDrv) << "an import without the flag enabled peer access";
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);

  // Already imported onto device 0: not onto device 1 as well.
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  void* on0 = ipck_import(key);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(ipck_import_rc(key), kDrv);
  EXPECT_EQ(ipck_import_rc(key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk) << "closes the import made on device 0";
  EXPECT_EQ(ipck_imports(), 0);
  (void)on0;

  void* peer = ipck_import(key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS);
  expect_shared(peer, block, 4096, 31);
  EXPECT_EQ(ipck_diff(get(unrelated0, 4096, &rc), pattern(4096, 27)), "")
      << "device 1 -> device 0 peer access";
  EXPECT_EQ(rc, kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  h2d(unrelated1, pattern(4096, 33));
  EXPECT_EQ(ipck_diff(get(unrelated1, 4096), pattern(4096, 33)), "")
      << "device 0 -> device 1 peer access";
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
}

// The device's last reset closes the imports onto it and destroys the keys exported from it
// (of memory it holds, whichever device was current); other devices' keys and imports stay.
TEST_F(IpcKeyTest, TheLastResetOfADeviceEndsItsImportsAndKeys) {
  void* b0 = nullptr;
  ASSERT_EQ(aclrtMalloc(&b0, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(b0, pattern(4096, 35));
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  void* b1 = nullptr;
  ASSERT_EQ(aclrtMalloc(&b1, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  const std::string k0 = ipck_export(b0, k2M, kIpckOpen);
  const std::string k0w = ipck_export(b0, k2M, kIpckWhitelist);
  const std::string k1 = ipck_export(b1, k2M, kIpckWhitelist);  // device 1's, exported on 0
  void* imp0 = ipck_import(k0);                                 // onto device 0
  ASSERT_EQ(aclrtSetDevice(1), kOk);                            // device 1's second reference
  const std::string k0b = ipck_export(b0, k2M, kIpckOpen);
  void* imp1 = ipck_import(k0b);  // device 0's memory imported onto device 1
  EXPECT_EQ(ipck_keys(), 4);
  EXPECT_EQ(ipck_imports(), 2);

  // Device 1's last reference: its key and its import go; device 0's stay.
  ASSERT_EQ(aclrtResetDevice(1), kOk);
  EXPECT_EQ(ipck_keys(), 4) << "device 1 is still referenced";
  EXPECT_EQ(ipck_imports(), 2);
  ASSERT_EQ(aclrtResetDevice(1), kOk);
  EXPECT_EQ(ipck_keys(), 3);
  EXPECT_EQ(ipck_imports(), 1);
  ASSERT_EQ(aclrtSetDevice(0), kOk);  // device 0: 3 references now
  EXPECT_EQ(ipck_set_pid(k1, 12345), kDrv) << "device 1's key was destroyed";
  EXPECT_EQ(aclrtIpcMemClose(k1.c_str()), kDrv);
  EXPECT_EQ(ipck_diff(get(imp0, 4096), pattern(4096, 35)), "");
  aclError rc = kOk;
  (void)get(imp1, 16, &rc);
  EXPECT_NE(rc, kOk) << "device 1's import is still mapped";
  EXPECT_EQ(ipck_import(k0), imp0) << "device 0's import and key are intact";
  EXPECT_EQ(aclrtIpcMemClose(k0.c_str()), kOk);

  // Device 0: until its last reference goes everything stays; then the rest ends.
  for (int refs = 3; refs > 1; --refs) {
    ASSERT_EQ(aclrtResetDevice(0), kOk);
    EXPECT_EQ(ipck_keys(), 3);
    EXPECT_EQ(ipck_imports(), 1);
  }
  ASSERT_EQ(aclrtResetDevice(0), kOk);
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(ipck_imports(), 0);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k0w.c_str()), kDrv) << "a destroyed key that served no import";
  EXPECT_EQ(ipck_set_pid(k0w, 12345), kDrv);
  EXPECT_EQ(ipck_import_rc(k0), kDrv);
  EXPECT_EQ(ipck_import_rc(k0b), kDrv);
  EXPECT_EQ(aclrtIpcMemClose(k0.c_str()), kDrv) << "a destroyed key that served imports";
  EXPECT_EQ(aclrtIpcMemClose(k0b.c_str()), kDrv);
}

// ---- statistics, aclFinalize, leak report

TEST_F(IpcKeyTest, FinalizeReleasesKeysAndImports) {
  void* block = nullptr;  // released by aclFinalize
  ASSERT_EQ(aclrtMalloc(&block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const std::string open = ipck_export(block, k2M, kIpckOpen);
  const std::string listed = ipck_export(block, k2M, kIpckWhitelist);
  (void)ipck_import(open);
  (void)ipck_import(open);
  EXPECT_EQ(ipck_keys(), 2);
  EXPECT_EQ(ipck_imports(), 1);
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  ASSERT_EQ(aclInit(nullptr), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(aclrtIpcMemClose(listed.c_str()), kDrv);
  EXPECT_EQ(ipck_import_rc(open), kDrv);
  EXPECT_EQ(ipck_set_pid(listed, 12345), kDrv);
}

// One WARNING line per key and per import still held at aclFinalize (a child with its log on
// stdout at level 2).
TEST_F(IpcKeyTest, FinalizeReportsEachKeyAndImportOnce) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    alarm(30);
    const int rc = child_body([] {
      (void)aclInit(nullptr);
      while (aclFinalize() == kOk) {
      }
      unsetenv("ASCEND_LOG_PRINT_TO_STDOUT");
      setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1", 1);
      setenv("ASCEND_GLOBAL_LOG_LEVEL", "2", 1);
      if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return 10;
      void* p = nullptr;
      if (aclrtMalloc(&p, 4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST) != kOk) return 11;
      char k1[kIpckKeyBytes], k2[kIpckKeyBytes];
      if (aclrtIpcMemGetExportKey(p, 3 * kMiB, k1, sizeof k1, kIpckOpen) != kOk) return 12;
      if (aclrtIpcMemGetExportKey(static_cast<char*>(p) + k2M, k2M, k2, sizeof k2, 0) != kOk)
        return 13;
      void* imp = nullptr;
      if (aclrtIpcMemImportByKey(&imp, k1, 0) != kOk) return 14;
      if (aclrtIpcMemImportByKey(&imp, k1, 0) != kOk) return 15;
      std::printf("KEYS %s %s %p\n", k1, k2, imp);
      fflush(stdout);
      return aclFinalize() == kOk ? 0 : 16;
    });
    fflush(stdout);
    _exit(rc);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  const ChildResult r = wait_child(pid);
  EXPECT_EQ(r.signal, 0);
  ASSERT_EQ(r.exit_code, 0) << out;
  char k1[80] = "", k2[80] = "", imp[40] = "";
  const size_t at_keys = out.find("KEYS ");
  ASSERT_NE(at_keys, std::string::npos) << out;
  ASSERT_EQ(std::sscanf(out.c_str() + at_keys, "KEYS %79s %79s %39s", k1, k2, imp), 3);
  auto count = [&](const std::string& needle) {
    int c = 0;
    for (size_t p = out.find(needle); p != std::string::npos; p = out.find(needle, p + 1)) ++c;
    return c;
  };
  auto lines_with = [&](const std::string& a, const std::string& b) {
    int c = 0;
    size_t start = 0;
    while (start < out.size()) {
      size_t end = out.find('\n', start);
      if (end == std::string::npos) end = out.size();
      const std::string line = out.substr(start, end - start);
      if (line.find("[WARNING]") != std::string::npos && line.find(a) != std::string::npos &&
          line.find(b) != std::string::npos) {
        ++c;
      }
      start = end + 1;
    }
    return c;
  };
  EXPECT_EQ(
      lines_with("aclFinalize: closing IPC key " + std::string(k1) + " of 3145728 bytes at 0x",
                 "aclrtIpcMemGetExportKey"),
      1)
      << out;
  EXPECT_EQ(
      lines_with("aclFinalize: closing IPC key " + std::string(k2) + " of 2097152 bytes at 0x",
                 "aclrtIpcMemGetExportKey"),
      1)
      << out;
  EXPECT_EQ(
      lines_with("aclFinalize: closing the import of IPC key " + std::string(k1) + " at " + imp,
                 "aclrtIpcMemImportByKey"),
      1)
      << "one line for an import made twice\n"
      << out;
  EXPECT_EQ(count("closing the import of IPC key"), 1) << out;
  EXPECT_EQ(count("closing IPC key"), 2) << out;
}

// ---- failure injection (§11): a failing call changes nothing

TEST_F(IpcKeyTest, InjectedApiFailuresLeaveNoKeyOrImport) {
  char* block = dev(k2M);
  h2d(block, pattern(4096, 37));
  const std::string open = ipck_export(block, k2M, kIpckOpen);
  const std::string listed = ipck_export(block, k2M, kIpckWhitelist);
  void* imp = ipck_import(open);

  // GetExportKey: no key, the buffer untouched; the retry's counter follows the last key's.
  LiveCounts before = live_counts();
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemGetExportKey", 1, 207001), kOk);
  char buf[kIpckKeyBytes];
  std::memset(buf, kIpckUntouched, sizeof buf);
  EXPECT_EQ(aclrtIpcMemGetExportKey(block, k2M, buf, sizeof buf, kIpckOpen), 207001);
  EXPECT_NE(recent_msg().find("injected"), std::string::npos);
  EXPECT_EQ(std::string(buf, sizeof buf), std::string(sizeof buf, kIpckUntouched));
  EXPECT_EQ(live_counts(), before) << describe(before) << "\n" << describe(live_counts());
  const std::string next = ipck_export(block, k2M, kIpckOpen);
  EXPECT_EQ(ipck_counter(next), ipck_counter(listed) + 1);
  EXPECT_EQ(aclrtIpcMemClose(next.c_str()), kOk);

  // ImportByKey: no import, *devPtr untouched, the count unchanged (one close ends it).
  before = live_counts();
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemImportByKey", 1, 507899), kOk);
  EXPECT_EQ(ipck_import_rc(open), kDrv);
  EXPECT_EQ(live_counts(), before);

  // Close: the import stays (still one count), readable.
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemClose", 1, 507899), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kDrv);
  EXPECT_EQ(live_counts(), before);
  EXPECT_EQ(ipck_diff(get(imp, 4096), pattern(4096, 37)), "");

  // SetImportPid, SetAttr and ImportPidInterServer fail with the injected code.
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemSetImportPid", 1, 207001), kOk);
  EXPECT_EQ(ipck_set_pid(listed, 12345), 207001);
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemSetAttr", 1, 207001), kOk);
  EXPECT_EQ(aclrtIpcMemSetAttr(listed.c_str(), ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 0), 207001);
  ASSERT_EQ(aclvmmInjectFault("aclrtIpcMemImportPidInterServer", 1, 207001), kOk);
  int32_t pid = 12345;
  aclrtServerPid entry{0, &pid, 1};
  EXPECT_EQ(aclrtIpcMemImportPidInterServer(listed.c_str(), &entry, 1), 207001);
  EXPECT_EQ(live_counts(), before);

  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);  // the one import
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(listed.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
}

// Device-level steps failing inside the calls: the call fails with the step's errno mapped,
// and no key, import or whitelist entry is left; the retry works.
TEST_F(IpcKeyTest, FailingDeviceStepsLeaveNoKeyOrImport) {
  void* block = nullptr;  // freed below
  ASSERT_EQ(aclrtMalloc(&block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(block, pattern(4096, 39));

  // dev.share.ipc_export: no key (ENOMEM -> 207001).
  LiveCounts before = live_counts();
  ASSERT_EQ(aclvmmInjectFault("dev.share.ipc_export", 1, ENOMEM), kOk);
  char buf[kIpckKeyBytes];
  std::memset(buf, kIpckUntouched, sizeof buf);
  EXPECT_EQ(aclrtIpcMemGetExportKey(block, k2M, buf, sizeof buf, kIpckOpen), 207001);
  EXPECT_EQ(std::string(buf, sizeof buf), std::string(sizeof buf, kIpckUntouched));
  EXPECT_EQ(live_counts(), before) << describe(before) << "\n" << describe(live_counts());
  const std::string open = ipck_export(block, k2M, kIpckOpen);
  const std::string listed = ipck_export(block, k2M, kIpckWhitelist);

  // dev.share.ipc_import, dev.va.reserve, dev.mmu.map, dev.mmu.set_access during an import: no
  // import is left, the retry gets one.
  for (const char* step :
       {"dev.share.ipc_import", "dev.va.reserve", "dev.mmu.map", "dev.mmu.set_access"}) {
    SCOPED_TRACE(step);
    before = live_counts();
    ASSERT_EQ(aclvmmInjectFault(step, 1, ENOMEM), kOk);
    EXPECT_EQ(ipck_import_rc(open), 207001);
    EXPECT_EQ(aclvmmFaultRemaining(step), 0u) << "the step was not reached";
    EXPECT_EQ(live_counts(), before) << describe(before) << "\n" << describe(live_counts());
  }
  void* imp = ipck_import(open);
  EXPECT_EQ(ipck_diff(get(imp, 4096), pattern(4096, 39)), "");
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);
  EXPECT_EQ(ipck_imports(), 0);

  // dev.share.ipc_set_pids: the code, the key still takes pids afterwards.
  ASSERT_EQ(aclvmmInjectFault("dev.share.ipc_set_pids", 1, ENOMEM), kOk);
  EXPECT_EQ(ipck_set_pid(listed, 12345), 207001);
  EXPECT_EQ(ipck_set_pid(listed, 12345), kOk);

  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(listed.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
  EXPECT_EQ(aclrtFree(block), kOk);
}

// dev.share.ipc_close failing inside aclrtIpcMemClose: the key stays alive (counted, importable,
// closable), and freeing its memory still ends what it gives.
TEST_F(IpcKeyTest, AFailedCloseLeavesTheKeyAlive) {
  void* block = nullptr;  // freed below
  ASSERT_EQ(aclrtMalloc(&block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const std::string open = ipck_export(block, k2M, kIpckOpen);
  const LiveCounts before = live_counts();
  ASSERT_EQ(aclvmmInjectFault("dev.share.ipc_close", 1, ENOMEM), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), 207001);
  EXPECT_EQ(live_counts(), before) << "a failed close ended the key's record\n"
                                   << describe(before) << "\n"
                                   << describe(live_counts());
  void* again = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&again, open.c_str(), 0), kOk) << "the key still imports";
  if (again) {
    EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk);
  }
  // Freeing the memory must still end what the key gives.
  EXPECT_EQ(aclrtFree(block), kOk);
  void* stale = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&stale, open.c_str(), 0), kDrv)
      << "an import of freed memory by a key whose close had failed";
  if (stale) {
    (void)aclrtIpcMemClose(open.c_str());
  }
  EXPECT_EQ(aclrtIpcMemClose(open.c_str()), kOk) << "the export";
  EXPECT_EQ(ipck_keys(), 0);
}

// An import whose mapping failed served nothing: once its key is closed, closing again is
// 507899 (a key that never served an import), not 107017.
TEST_F(IpcKeyTest, AFailedImportDoesNotCountAsServed) {
  char* block = dev(k2M);
  const std::string key = ipck_export(block, k2M, kIpckOpen);
  ASSERT_EQ(aclvmmInjectFault("dev.mmu.map", 1, ENOMEM), kOk);
  EXPECT_EQ(ipck_import_rc(key), 207001);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kDrv);
}

// ---- threads

// N threads importing one key at once all get the same address; the count is N, and the
// address goes with the Nth close only.
TEST_F(IpcKeyTest, ConcurrentImportsOfOneKeyShareOneAddress) {
  constexpr int kThreads = 8;
  char* block = dev(k2M);
  h2d(block, pattern(4096, 41));
  const std::string key = ipck_export(block, k2M, kIpckOpen);
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&ctx), kOk);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<void*> got(kThreads, nullptr);
  std::vector<aclError> rcs(kThreads, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      if (aclrtSetCurrentContext(ctx) != kOk) return;
      ++ready;
      while (!go.load()) std::this_thread::yield();
      rcs[i] = aclrtIpcMemImportByKey(&got[i], key.c_str(), 0);
    });
  }
  while (ready.load() < kThreads) std::this_thread::yield();
  go = true;
  for (auto& t : threads) t.join();
  threads.clear();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(rcs[i], kOk) << "thread " << i;
    EXPECT_EQ(got[i], got[0]) << "thread " << i;
  }
  EXPECT_EQ(ipck_imports(), 1);
  EXPECT_EQ(ipck_diff(get(got[0], 4096), pattern(4096, 41)), "");
  // N-1 closes from threads at once: the import stays.
  go = false;
  ready = 0;
  for (int i = 0; i < kThreads - 1; ++i) {
    threads.emplace_back([&, i] {
      if (aclrtSetCurrentContext(ctx) != kOk) return;
      ++ready;
      while (!go.load()) std::this_thread::yield();
      rcs[i] = aclrtIpcMemClose(key.c_str());
    });
  }
  while (ready.load() < kThreads - 1) std::this_thread::yield();
  go = true;
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads - 1; ++i) EXPECT_EQ(rcs[i], kOk) << "thread " << i;
  EXPECT_EQ(ipck_imports(), 1);
  EXPECT_EQ(ipck_keys(), 1);
  EXPECT_EQ(ipck_diff(get(got[0], 4096), pattern(4096, 41)), "");
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_imports(), 0);
  EXPECT_EQ(ipck_keys(), 1);
  EXPECT_EQ(aclrtIpcMemClose(key.c_str()), kOk);
  EXPECT_EQ(ipck_keys(), 0);
}

}  // namespace
}  // namespace aclvmm_test
