// halMemAlloc / halMemFree with the runtime's flag words (hal.md §3.12, §3.9), pointer
// attributes and address ranges per kind of memory (§3.7, §3.10, behavior.md §9), and what a
// device's close takes with it (§2).
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

constexpr uint64_t kHugeFirst = 0x2100000000924400ull;   // H + d
constexpr uint64_t kNormalOnly = 0x2100000000904400ull;  // N + d
constexpr uint64_t kP2p = 0x2100000002900400ull;
constexpr uint64_t kGiant = 0x2100000080004400ull;
constexpr uint64_t kGiantP2p = 0x2100000082004400ull;
constexpr uint64_t kHost = 0x2100000000900800ull;
constexpr uint64_t kManaged = 0x21C00ull;

struct Kind {
  UINT32 type = 0, device = 0, page = 0;
};

Kind kind_of(const void* p) {
  DVattribute a{};
  EXPECT_EQ(drvMemGetAttribute(ptr(p), &a), DRV_ERROR_NONE);
  return Kind{a.memType, a.devId, a.pageSize};
}

struct Range {
  DVdeviceptr base = 0;
  size_t size = 0;
};

Range range_of(const void* p) {
  Range r;
  EXPECT_EQ(halMemGetAddressRange(ptr(p), &r.base, &r.size), DRV_ERROR_NONE);
  return r;
}

TEST(FakeHalAlloc, TheRuntimesFlagWords) {
  OpenDevices open({0, 2});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  const auto host_page = static_cast<UINT32>(sysconf(_SC_PAGESIZE));
  struct {
    const char* what;
    uint64_t flags;
    size_t size;
    Kind kind;
    size_t extent;
    const Window* window;
  } const cases[] = {
      {"huge on device 2", kHugeFirst + 2, 3 * kMiB + 64, {DV_MEM_LOCK_DEV, 2, 2 * kMiB}, 4 * kMiB,
       &l.device_general},
      {"normal on device 0", kNormalOnly, 10000 + 64, {DV_MEM_LOCK_DEV, 0, 4096},
       round_up_bytes(10064, 4096), &l.device_general},
      {"P2P on device 2", kP2p + 2, 2 * kMiB, {DV_MEM_LOCK_DEV, 2, 4096}, 2 * kMiB,
       &l.device_general},
      {"giant on device 0", kGiant, 5 * kMiB, {DV_MEM_LOCK_DEV, 0, static_cast<UINT32>(kGiB)},
       kGiB, &l.device_general},
      {"giant P2P on device 2", kGiantP2p + 2, 6 * kMiB,
       {DV_MEM_LOCK_DEV, 2, static_cast<UINT32>(kGiB)}, kGiB, &l.device_general},
      {"host", kHost, 4096 + 32, {DV_MEM_LOCK_HOST, 0, host_page}, round_up_bytes(4128, host_page),
       &l.host_pinned},
      {"managed", kManaged, 3 * kMiB, {DV_MEM_UVM, 0, 2 * kMiB}, 4 * kMiB, &l.managed},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    void* p = nullptr;
    ASSERT_EQ(halMemAlloc(&p, c.size, c.flags), DRV_ERROR_NONE);
    const auto a = reinterpret_cast<uint64_t>(p);
    EXPECT_EQ(a % (2 * kMiB), 0u);
    EXPECT_TRUE(c.window->contains(a, c.extent));
    const Kind k = kind_of(static_cast<char*>(p) + c.size - 1);
    EXPECT_EQ(k.type, c.kind.type);
    EXPECT_EQ(k.device, c.kind.device);
    EXPECT_EQ(k.page, c.kind.page);
    const Range r = range_of(static_cast<char*>(p) + c.size / 2);
    EXPECT_EQ(r.base, a);
    EXPECT_EQ(r.size, c.extent);
    // The bytes through copies.
    const std::vector<uint8_t> bytes = pattern(c.size, 11);
    std::vector<uint8_t> back(c.size);
    EXPECT_EQ(drvMemcpy(a, c.size, ptr(bytes.data()), c.size), DRV_ERROR_NONE);
    EXPECT_EQ(drvMemcpy(ptr(back.data()), c.size, a, c.size), DRV_ERROR_NONE);
    EXPECT_EQ(back, bytes);
    // Host and managed memory: the CPU sees the same bytes.
    if (c.kind.type != DV_MEM_LOCK_DEV) {
      EXPECT_EQ(std::memcmp(p, bytes.data(), c.size), 0);
    }
    EXPECT_EQ(halMemFree(static_cast<char*>(p) + 4096), DRV_ERROR_INVALID_VALUE);
    EXPECT_EQ(halMemFree(p), DRV_ERROR_NONE);
    EXPECT_EQ(halMemFree(p), DRV_ERROR_INVALID_VALUE);
  }
}

TEST(FakeHalAlloc, Refusals) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  void* p = nullptr;
  struct {
    const char* what;
    uint64_t flags;
    unsigned long long size;
    drvError_t expect;
  } const cases[] = {
      {"size 0", kHugeFirst, 0, DRV_ERROR_INVALID_VALUE},
      {"MEM_SVM", 0x2100000000020000ull, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"MEM_DVPP", 0x2100000000000c00ull, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"MEM_HOST_AGENT", 0x2100000000001000ull, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"MEM_RESERVE", 0x2100000000001400ull, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"MEM_HOST_UVA", 0x2100000000001800ull, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"read-only", kHugeFirst | MEM_READONLY, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"host read-write, device read-only", kHugeFirst | MEM_HOST_RW_DEV_RO, 2 * kMiB,
       DRV_ERROR_NOT_SUPPORT},
      {"copy only", kHugeFirst | MEM_DEV_CP_ONLY, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"giant host", kHost | MEM_PAGE_GIANT, 2 * kMiB, DRV_ERROR_NOT_SUPPORT},
      {"device out of range", kHugeFirst + kDevices, 2 * kMiB, DRV_ERROR_INVALID_DEVICE},
      {"device not opened", kHugeFirst + 3, 2 * kMiB, DRV_ERROR_INVALID_DEVICE},
      {"out of device memory", kHugeFirst, 65 * kGiB, DRV_ERROR_OUT_OF_MEMORY},
      {"larger than the managed window", kManaged, 1ull << 50, DRV_ERROR_OUT_OF_MEMORY},
  };
  for (const auto& c : cases) EXPECT_EQ(halMemAlloc(&p, c.size, c.flags), c.expect) << c.what;
  EXPECT_EQ(halMemAlloc(nullptr, 2 * kMiB, kHugeFirst), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemFree(nullptr), DRV_ERROR_INVALID_VALUE);
  uint8_t plain[8];
  EXPECT_EQ(halMemFree(plain), DRV_ERROR_INVALID_VALUE);
  // Memory runs out and comes back: the huge -> normal retry of §3.12 sees the same.
  MemInfo info{};
  ASSERT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, &info), DRV_ERROR_NONE);
  ASSERT_EQ(halMemAlloc(&p, info.phy_info.huge_free - kMiB, kHugeFirst), DRV_ERROR_NONE);
  void* q = nullptr;
  EXPECT_EQ(halMemAlloc(&q, 4 * kMiB, kHugeFirst), DRV_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(halMemAlloc(&q, 4 * kMiB, kNormalOnly), DRV_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(halMemFree(p), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAlloc(&q, 4 * kMiB, kHugeFirst), DRV_ERROR_NONE);
  EXPECT_EQ(halMemFree(q), DRV_ERROR_NONE);
}

TEST(FakeHalAlloc, PointerAttributesPerKind) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  const auto host_page = static_cast<UINT32>(sysconf(_SC_PAGESIZE));
  drv_mem_handle_t* dh = nullptr;
  drv_mem_handle_t* hh = nullptr;
  const drv_mem_prop dp = device_prop(1), hp = host_prop();
  ASSERT_EQ(halMemCreate(&dh, 2 * kMiB, &dp, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemCreate(&hh, 2 * kMiB, &hp, 0), DRV_ERROR_NONE);
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 8 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  char* v = static_cast<char*>(va);
  ASSERT_EQ(halMemMap(v, 2 * kMiB, 0, dh, 0), DRV_ERROR_NONE);
  void* hva = nullptr;
  ASSERT_EQ(halMemAddressReserve(&hva, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemMap(hva, 2 * kMiB, 0, hh, 0), DRV_ERROR_NONE);
  Kind k = kind_of(v + 100);
  EXPECT_EQ(k.type, static_cast<UINT32>(DV_MEM_LOCK_DEV));
  EXPECT_EQ(k.device, 1u);
  EXPECT_EQ(k.page, 2 * kMiB);
  k = kind_of(static_cast<char*>(hva) + 100);
  EXPECT_EQ(k.type, static_cast<UINT32>(DV_MEM_LOCK_HOST));
  EXPECT_EQ(k.device, 0u);
  EXPECT_EQ(k.page, host_page);
  EXPECT_EQ(range_of(v + 100).base, ptr(v));
  EXPECT_EQ(range_of(v + 100).size, 2 * kMiB);
  DVattribute a{};
  DVdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(drvMemGetAttribute(ptr(v) + 2 * kMiB, &a), DRV_ERROR_INVALID_HANDLE);  // reserved
  EXPECT_EQ(halMemGetAddressRange(ptr(v) + 2 * kMiB, &base, &size), DRV_ERROR_INVALID_VALUE);
  const uint64_t hole = l.device.base + l.device.size - 2 * kMiB;  // nothing allocated there
  EXPECT_EQ(drvMemGetAttribute(hole, &a), DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(drvMemGetAttribute(l.host_pinned.base + l.host_pinned.size - 4096, &a),
            DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(drvMemGetAttribute(l.managed.base + l.managed.size - 4096, &a), DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(drvMemGetAttribute(0, &a), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemGetAttribute(ptr(v), nullptr), DRV_ERROR_INVALID_VALUE);
  uint8_t plain[32];
  EXPECT_EQ(halMemGetAddressRange(ptr(plain), &base, &size), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetAddressRange(ptr(v), nullptr, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetAddressRange(ptr(v), nullptr, &size), DRV_ERROR_NONE);  // either may be NULL
  EXPECT_EQ(size, 2 * kMiB);
  // Plain process memory: LOCK_HOST until the process asks FEATURE_SVM_GET_USER_MALLOC_ATTR,
  // USER_MALLOC after (a process-wide switch: asked in a fresh child).
  const pid_t child = fork();
  if (child == 0) {
    int failures = 0;
    failures += open_device(0) != DRV_ERROR_NONE;
    DVattribute c{};
    failures += drvMemGetAttribute(ptr(plain), &c) != DRV_ERROR_NONE;
    failures += c.memType != DV_MEM_LOCK_HOST || c.pageSize != host_page;
    failures += !halSupportFeature(0, FEATURE_SVM_GET_USER_MALLOC_ATTR);
    failures += drvMemGetAttribute(ptr(plain), &c) != DRV_ERROR_NONE;
    failures += c.memType != DV_MEM_USER_MALLOC || c.devId != 0;
    _exit(failures);
  }
  EXPECT_EQ(wait_child(Child{child}), 0);
  EXPECT_EQ(halMemUnmap(v), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(hva), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(dh), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(hh), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(hva), DRV_ERROR_NONE);
}

TEST(FakeHalAlloc, ClosingADeviceDestroysItsMemory) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open_device(1), DRV_ERROR_NONE);
  void* block = nullptr;
  void* kept = nullptr;
  ASSERT_EQ(halMemAlloc(&block, 2 * kMiB, kHugeFirst + 1), DRV_ERROR_NONE);
  ASSERT_EQ(halMemAlloc(&kept, 2 * kMiB, kHugeFirst), DRV_ERROR_NONE);
  drv_mem_handle_t* h = nullptr;
  const drv_mem_prop prop = device_prop(1);
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  drv_mem_handle_t* held = nullptr;
  ASSERT_EQ(halMemCreate(&held, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemRelease(h), DRV_ERROR_NONE);  // the mapping holds the last reference
  ASSERT_EQ(close_device(1), DRV_ERROR_NONE);
  DVattribute a{};
  EXPECT_EQ(drvMemGetAttribute(ptr(block), &a), DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(halMemFree(block), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemGetAttribute(ptr(va), &a), DRV_ERROR_INVALID_HANDLE);  // reserved, unmapped
  drv_mem_prop got{};
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, held), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemGetAttribute(ptr(kept), &a), DRV_ERROR_NONE);  // device 0's stays
  // The reservation is free for another device now.
  drv_mem_handle_t* h0 = nullptr;
  const drv_mem_prop prop0 = device_prop(0);
  ASSERT_EQ(halMemCreate(&h0, 2 * kMiB, &prop0, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h0, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(held), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemFree(kept), DRV_ERROR_NONE);
}

}  // namespace
}  // namespace fakehal_test
