// aclrtMemGetAddressRange, aclrtPointerGetAttributes and aclrtDeviceGetBareTgid
// (behavior.md §9, §7 last paragraph; clients.md A13, A16).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

constexpr uint32_t kSentinel = 0xA5A5A5A5u;

size_t host_page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

aclrtPtrAttributes sentinel_attrs() {
  aclrtPtrAttributes a;
  std::memset(&a, 0xA5, sizeof a);
  return a;
}

// Owns what a table row allocates; released in reverse order at scope exit.
class Resources {
 public:
  ~Resources() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  }
  void* malloc_dev(size_t n, aclrtMemMallocPolicy policy) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMalloc(&p, n, policy), kOk);
    undo_.push_back([p] { aclrtFree(p); });
    return p;
  }
  void* malloc_host(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMallocHost(&p, n), kOk);
    undo_.push_back([p] { aclrtFreeHost(p); });
    return p;
  }
  void* reserve(size_t n) {
    void* va = nullptr;
    EXPECT_EQ(aclrtReserveMemAddress(&va, n, 0, nullptr, 0), kOk);
    undo_.push_back([va] { aclrtReleaseMemAddress(va); });
    return va;
  }
  aclrtDrvMemHandle physical(size_t n, aclrtPhysicalMemProp prop) {
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMallocPhysical(&h, n, &prop, 0), kOk);
    undo_.push_back([h] { aclrtFreePhysical(h); });
    return h;
  }
  void map(void* va, size_t n, aclrtDrvMemHandle h) {
    EXPECT_EQ(aclrtMapMem(va, n, 0, h, 0), kOk);
    undo_.push_back([va] { aclrtUnmapMem(va); });
  }
  // A reservation of `rsv` bytes with a `n`-byte mapping of fresh memory with `prop` at `off`.
  void* mapped(size_t rsv, size_t off, size_t n, aclrtPhysicalMemProp prop) {
    void* va = reserve(rsv);
    map(at(va, off), n, physical(n, prop));
    return va;
  }
  // The base of a reservation that was released again: unallocated device-window address.
  void* released() {
    void* va = nullptr;
    EXPECT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
    return va;
  }

 private:
  std::vector<std::function<void()>> undo_;
};

using QueryAddressRangeTest = AclTest;
using QueryPointerAttrTest = AclTest;
using QueryBareTgidTest = AclTest;

// ---------------------------------------------------------------------------------------------
// aclrtMemGetAddressRange

// §9: ptr NULL → 100000 (ACL, first); both outputs NULL → 107000 (runtime); unmapped part of a
// reservation and unknown memory (plain malloc, stack, released reservation) → 107000.
TEST_F(QueryAddressRangeTest, MisuseTable) {
  Resources res;
  void* mapped = res.mapped(8 * kMiB, 0, k2M, device_prop());
  std::vector<char> heap(4096);
  int stack_var = 0;
  struct Row {
    const char* name;
    void* ptr;
    bool want_base, want_size;
    aclError expected;
  };
  const Row rows[] = {
      {"ptr NULL", nullptr, true, true, kParam},
      {"ptr NULL and both outputs NULL", nullptr, false, false, kParam},
      {"both outputs NULL", mapped, false, false, kRtParam},
      {"unmapped part of a reservation", at(mapped, 4 * kMiB), true, true, kRtParam},
      {"first byte after the mapping", at(mapped, k2M), true, true, kRtParam},
      {"reserved, never mapped", res.reserve(k2M), true, true, kRtParam},
      {"plain malloc", heap.data(), true, true, kRtParam},
      {"stack", &stack_var, true, true, kRtParam},
      {"past the end of a small aclrtMalloc allocation",
       at(res.malloc_dev(4096, ACL_MEM_MALLOC_NORMAL_ONLY), kMiB), true, true, kRtParam},
      // Last: nothing allocated after it may reuse the address.
      {"released reservation", res.released(), true, true, kRtParam},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    void* base = reinterpret_cast<void*>(0x1234);
    size_t size = 0x5678;
    EXPECT_EQ(aclrtMemGetAddressRange(r.ptr, r.want_base ? &base : nullptr,
                                      r.want_size ? &size : nullptr),
              r.expected);
    EXPECT_EQ(base, reinterpret_cast<void*>(0x1234));
    EXPECT_EQ(size, 0x5678u);
  }
}

// §9 / A16: a VMM pointer (any byte of it) reports the mapping that contains it — not the
// reservation; either output may be NULL.
TEST_F(QueryAddressRangeTest, VmmPointerReportsItsMapping) {
  Resources res;
  void* rsv = res.reserve(16 * kMiB);
  res.map(rsv, k2M, res.physical(k2M, device_prop()));
  res.map(at(rsv, 2 * k2M), 2 * k2M, res.physical(2 * k2M, device_prop()));
  res.map(at(rsv, 8 * kMiB), k2M, res.physical(k2M, device_prop()));
  struct Row {
    const char* name;
    void* ptr;
    void* base;
    size_t size;
  };
  const Row rows[] = {
      {"first mapping, base", rsv, rsv, k2M},
      {"first mapping, interior", at(rsv, 12345), rsv, k2M},
      {"first mapping, last byte", at(rsv, k2M - 1), rsv, k2M},
      {"second mapping, base", at(rsv, 4 * kMiB), at(rsv, 4 * kMiB), 4 * kMiB},
      {"second mapping, interior", at(rsv, 5 * kMiB + 3), at(rsv, 4 * kMiB), 4 * kMiB},
      {"second mapping, last byte", at(rsv, 8 * kMiB - 1), at(rsv, 4 * kMiB), 4 * kMiB},
      {"third mapping (adjacent)", at(rsv, 8 * kMiB), at(rsv, 8 * kMiB), k2M},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    void* base = nullptr;
    size_t size = 0;
    ASSERT_EQ(aclrtMemGetAddressRange(r.ptr, &base, &size), kOk);
    EXPECT_EQ(base, r.base);
    EXPECT_EQ(size, r.size);
    base = nullptr;
    EXPECT_EQ(aclrtMemGetAddressRange(r.ptr, &base, nullptr), kOk);
    EXPECT_EQ(base, r.base);
    size = 0;
    EXPECT_EQ(aclrtMemGetAddressRange(r.ptr, nullptr, &size), kOk);
    EXPECT_EQ(size, r.size);
  }
}

// §9 / §13: an aclrtMalloc pointer (and any byte of it) reports its allocation: the base, and a
// page-rounded size that includes ACL's 32-byte alignment and 32-byte padding. aclrtMallocHost
// reports its block. Host physical memory mapped into a reservation reports the mapping.
TEST_F(QueryAddressRangeTest, MallocAndMallocHostReportTheirAllocation) {
  Resources res;
  struct Row {
    const char* name;
    void* p;
    size_t requested, page;
  };
  const Row rows[] = {
      {"aclrtMalloc 3 MiB HUGE_FIRST", res.malloc_dev(3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), 3 * kMiB, k2M},
      {"aclrtMalloc 2 MiB HUGE_FIRST", res.malloc_dev(k2M, ACL_MEM_MALLOC_HUGE_FIRST), k2M, k2M},
      {"aclrtMalloc 1000 B NORMAL_ONLY", res.malloc_dev(1000, ACL_MEM_MALLOC_NORMAL_ONLY), 1000, 4096},
      {"aclrtMalloc 1 B HUGE_ONLY", res.malloc_dev(1, ACL_MEM_MALLOC_HUGE_ONLY), 1, k2M},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    for (size_t off : {size_t(0), r.requested / 2, r.requested - 1}) {
      SCOPED_TRACE("offset " + std::to_string(off));
      void* base = nullptr;
      size_t size = 0;
      ASSERT_EQ(aclrtMemGetAddressRange(at(r.p, off), &base, &size), kOk);
      EXPECT_EQ(base, r.p);
      EXPECT_GE(size, round_up(r.requested, 32) + 32);
      EXPECT_EQ(size % r.page, 0u);
    }
  }
  void* hp = res.malloc_host(10000);
  for (size_t off : {size_t(0), size_t(9999)}) {
    SCOPED_TRACE("aclrtMallocHost, offset " + std::to_string(off));
    void* base = nullptr;
    size_t size = 0;
    ASSERT_EQ(aclrtMemGetAddressRange(at(hp, off), &base, &size), kOk);
    EXPECT_EQ(base, hp);
    EXPECT_GE(size, 10000u);
  }
  void* hv = res.mapped(4 * kMiB, k2M, k2M, host_prop());
  void* base = nullptr;
  size_t size = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(at(hv, 3 * kMiB), &base, &size), kOk);
  EXPECT_EQ(base, at(hv, k2M));
  EXPECT_EQ(size, k2M);
}

// ---------------------------------------------------------------------------------------------
// aclrtPointerGetAttributes

struct AttrRow {
  const char* name;
  std::function<const void*(Resources&)> make;
  aclError expected;
  aclrtMemLocationType type;
  uint32_t id;
  size_t page;  // 0: the host page size
};

// §9 table (A16): what each kind of memory reports; errors leave the output alone; rsv[] is never
// written.
TEST_F(QueryPointerAttrTest, Table) {
  static int static_var = 0;
  const auto D = ACL_MEM_LOCATION_TYPE_DEVICE;
  const auto H = ACL_MEM_LOCATION_TYPE_HOST;
  const auto U = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
  const std::vector<AttrRow> rows = {
      {"aclrtMalloc 2 MiB HUGE_FIRST",
       [](Resources& r) { return r.malloc_dev(k2M, ACL_MEM_MALLOC_HUGE_FIRST); }, kOk, D, 0, k2M},
      {"aclrtMalloc 1 MiB HUGE_FIRST, interior",
       [](Resources& r) { return at(r.malloc_dev(kMiB, ACL_MEM_MALLOC_HUGE_FIRST), 4097); }, kOk, D,
       0, k2M},
      {"aclrtMalloc 4 KiB NORMAL_ONLY",
       [](Resources& r) { return r.malloc_dev(4096, ACL_MEM_MALLOC_NORMAL_ONLY); }, kOk, D, 0, 4096},
      {"aclrtMalloc 100 B NORMAL_ONLY, last byte",
       [](Resources& r) { return at(r.malloc_dev(100, ACL_MEM_MALLOC_NORMAL_ONLY), 99); }, kOk, D, 0,
       4096},
      {"aclrtMallocHost", [](Resources& r) { return r.malloc_host(100); }, kOk, H, 0, 0},
      {"aclrtMallocHost, interior", [](Resources& r) { return at(r.malloc_host(3 * 4096), 5000); },
       kOk, H, 0, 0},
      {"VMM device handle, base",
       [](Resources& r) { return r.mapped(k2M, 0, k2M, device_prop()); }, kOk, D, 0, k2M},
      {"VMM device handle, interior of an inner mapping",
       [](Resources& r) { return at(r.mapped(8 * kMiB, 4 * kMiB, 4 * kMiB, device_prop()), 5 * kMiB); },
       kOk, D, 0, k2M},
      {"VMM handle of device 1",
       [](Resources& r) { return at(r.mapped(k2M, 0, k2M, device_prop(1)), 64); }, kOk, D, 1, k2M},
      {"VMM handle of device 3", [](Resources& r) { return r.mapped(k2M, 0, k2M, device_prop(3)); },
       kOk, D, 3, k2M},
      {"VMM host handle", [](Resources& r) { return at(r.mapped(k2M, 0, k2M, host_prop()), 100); },
       kOk, H, 0, 0},
      {"VMM reserved, never mapped", [](Resources& r) { return r.reserve(k2M); }, kBadHandle, D, 0,
       0},
      {"static data", [](Resources&) { return static_cast<const void*>(&static_var); }, kOk, U, 0, 0},
      {"stack", [](Resources&) { return static_cast<const void*>(__builtin_frame_address(0)); }, kOk,
       U, 0, 0},
      {"released reservation base", [](Resources& r) { return r.released(); }, kDrv, D, 0, 0},
      {"past the end of a small aclrtMalloc allocation",
       [](Resources& r) { return at(r.malloc_dev(4096, ACL_MEM_MALLOC_NORMAL_ONLY), kMiB); }, kDrv, D,
       0, 0},
      {"freed aclrtMalloc pointer",
       [](Resources&) {
         void* p = nullptr;
         EXPECT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
         EXPECT_EQ(aclrtFree(p), kOk);
         return static_cast<const void*>(p);
       },
       kDrv, D, 0, 0},
  };
  std::vector<char> heap(256);  // plain heap memory, checked separately below
  for (const AttrRow& r : rows) {
    SCOPED_TRACE(r.name);
    Resources res;
    const void* p = r.make(res);
    aclrtPtrAttributes a = sentinel_attrs();
    ASSERT_EQ(aclrtPointerGetAttributes(p, &a), r.expected);
    for (uint32_t v : a.rsv) EXPECT_EQ(v, kSentinel);
    if (r.expected != kOk) {
      EXPECT_EQ(a.location.id, kSentinel);
      EXPECT_EQ(load_raw(a.location.type), kSentinel);  // bytes: not a valid enum value
      EXPECT_EQ(a.pageSize, kSentinel);
      continue;
    }
    EXPECT_EQ(a.location.type, r.type);
    EXPECT_EQ(a.location.id, r.id);
    EXPECT_EQ(a.pageSize, r.page ? r.page : host_page());
  }
  aclrtPtrAttributes a = sentinel_attrs();
  ASSERT_EQ(aclrtPointerGetAttributes(heap.data(), &a), kOk);
  EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  EXPECT_EQ(a.location.id, 0u);
  EXPECT_EQ(a.pageSize, host_page());
}

// §9: NULLs → 100000 (ACL layer), the output untouched.
TEST_F(QueryPointerAttrTest, NullArguments) {
  Resources res;
  void* p = res.malloc_dev(k2M, ACL_MEM_MALLOC_HUGE_FIRST);
  struct Row {
    const char* name;
    const void* ptr;
    bool with_out;
  };
  const Row rows[] = {{"ptr NULL", nullptr, true}, {"attributes NULL", p, false}, {"both NULL", nullptr, false}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    aclrtPtrAttributes a = sentinel_attrs();
    EXPECT_EQ(aclrtPointerGetAttributes(r.ptr, r.with_out ? &a : nullptr), kParam);
    EXPECT_EQ(a.location.id, kSentinel);
    EXPECT_EQ(a.pageSize, kSentinel);
  }
}

// §9: before any device was opened in the process every address is 107017 (driver SVM state is
// created by aclrtSetDevice); afterwards the same pointer answers normally.
TEST_F(QueryPointerAttrTest, BeforeAnyDeviceIsOpened) {
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  ASSERT_EQ(aclInit(nullptr), kOk);
  std::vector<char> heap(64);
  int stack_var = 0;
  const void* ptrs[] = {heap.data(), &stack_var, reinterpret_cast<const void*>(0x12C000000000ull)};
  for (const void* p : ptrs) {
    SCOPED_TRACE(u64(p));
    aclrtPtrAttributes a = sentinel_attrs();
    EXPECT_EQ(aclrtPointerGetAttributes(p, &a), kBadHandle);
    EXPECT_EQ(a.pageSize, kSentinel);
  }
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  aclrtPtrAttributes a = sentinel_attrs();
  EXPECT_EQ(aclrtPointerGetAttributes(heap.data(), &a), kOk);
  EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
}

// §9 / emulation.md §2: location.id is the user device id; with ASCEND_RT_VISIBLE_DEVICES=2,3
// memory of user device 1 (driver device 3) reports 1, for VMM mappings and aclrtMalloc alike.
TEST_F(QueryPointerAttrTest, VisibleDevicesReportUserIds) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,3");
  ASSERT_TRUE(env.ok());
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), kOk);
  EXPECT_EQ(count, 2u);
  {
    Resources res;
    struct Row {
      const char* name;
      const void* p;
      uint32_t id;
      size_t page;
    };
    const void* vmm0 = res.mapped(k2M, 0, k2M, device_prop(0));
    const void* vmm1 = at(res.mapped(k2M, 0, k2M, device_prop(1)), 4096);
    ASSERT_EQ(aclrtSetDevice(1), kOk);
    const void* mal1 = res.malloc_dev(k2M, ACL_MEM_MALLOC_HUGE_FIRST);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
    const Row rows[] = {{"VMM on user device 0", vmm0, 0, k2M},
                        {"VMM on user device 1", vmm1, 1, k2M},
                        {"aclrtMalloc on user device 1", mal1, 1, k2M}};
    for (const Row& r : rows) {
      SCOPED_TRACE(r.name);
      aclrtPtrAttributes a = sentinel_attrs();
      ASSERT_EQ(aclrtPointerGetAttributes(r.p, &a), kOk);
      EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
      EXPECT_EQ(a.location.id, r.id);
      EXPECT_EQ(a.pageSize, r.page);
      for (uint32_t v : a.rsv) EXPECT_EQ(v, kSentinel);
    }
  }
  aclrtResetDeviceForce(1);
}

// ---------------------------------------------------------------------------------------------
// aclrtDeviceGetBareTgid

// §7: NULL → 100000; otherwise 0 and the process's tgid in the initial PID namespace, which is
// getpid() outside containers (A13: clients whitelist getpid()).
TEST_F(QueryBareTgidTest, ReturnsThisProcessPid) {
  EXPECT_EQ(aclrtDeviceGetBareTgid(nullptr), kParam);
  int32_t pid = -7;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&pid), kOk);
  EXPECT_EQ(pid, static_cast<int32_t>(getpid()));
  int32_t again = -7;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&again), kOk);
  EXPECT_EQ(again, pid);
}

// The value is per process: a forked child (after the parent cached its own) reports its pid.
TEST_F(QueryBareTgidTest, ForkedChildReportsItsOwnPid) {
  int32_t parent = -1;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&parent), kOk);
  EXPECT_CHILD_OK(run_in_child([parent] {
                    int32_t pid = -1;
                    if (aclrtDeviceGetBareTgid(&pid) != kOk) return 3;
                    if (pid == parent) return 2;
                    return pid == static_cast<int32_t>(getpid()) ? 0 : 1;
                  }),
                  "1: neither pid, 2: the parent's pid, 3: call failed");
}

// No runtime state is needed: it also works before aclInit / after aclFinalize.
TEST_F(QueryBareTgidTest, WorksWithoutInitialisedRuntime) {
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  int32_t pid = -1;
  EXPECT_EQ(aclrtDeviceGetBareTgid(&pid), kOk);
  EXPECT_EQ(pid, static_cast<int32_t>(getpid()));
  ASSERT_EQ(aclInit(nullptr), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
}

}  // namespace
