// Managed memory: oversubscription (emulation.md §6: device residency counts against device
// memory; when a device is full, least recently used managed pages are evicted to the host).
// The acceptance line: 256 MiB of managed memory through a 64 MiB device, byte-exact.
#include <cstring>
#include <string>

#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

constexpr size_t kDevice = 64 * kMiB;
constexpr size_t kTotal = 256 * kMiB;
constexpr size_t kPiece = 32 * kMiB;
constexpr long long kPiecePages = kPiece / k2M;
constexpr long long kDevicePages = kDevice / k2M;

class ManagedOversubscriptionTest : public ManagedTest {
 protected:
  // Device 0 never holds more than its 64 MiB: aclrtGetMemInfo and the statistics agree.
  void expect_within_device(const std::string& when) {
    SCOPED_TRACE(when);
    const MemInfo m = mem_info(ACL_HBM_MEM);
    EXPECT_EQ(m.total, kDevice);
    EXPECT_LE(m.free, m.total) << "used > total wraps free around";
    const long long used = device_used(stats(), 0);
    EXPECT_GE(used, 0);
    EXPECT_LE(used, static_cast<long long>(kDevice));
    EXPECT_EQ(static_cast<long long>(m.total - m.free), used);
  }
};

TEST_F(ManagedOversubscriptionTest, FourTimesTheDeviceByteExactWithEvictions) {
  ScopedEnvRuntime env("ACLVMM_DEVICE_MEMORY", "64M");
  ASSERT_TRUE(env.ok());
  void* vp = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&vp, kTotal, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  char* p = static_cast<char*>(vp);
  REQUIRE_MANAGED_TRACKING();
  ASSERT_EQ(device_used(stats(), 0), 0);
  const std::string pat = pattern(kTotal, 77);
  std::memcpy(p, pat.data(), kTotal);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);

  // Prefetch to device 0 in 32 MiB pieces: each piece moves in whole, evicting the oldest.
  const ManagedCounters start = managed_counters();
  for (size_t off = 0; off < kTotal; off += kPiece) {
    const ManagedCounters before = managed_counters();
    ASSERT_EQ(aclrtMemManagedPrefetchAsync(p + off, kPiece, kDev0, 0, s), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    const ManagedCounters after = managed_counters();
    EXPECT_EQ(after.prefetch - before.prefetch, kPiecePages * kManagedPage) << "piece at " << off;
    EXPECT_EQ(after.to_device - before.to_device, kPiecePages * kManagedPage) << "piece at " << off;
    expect_within_device("after the piece at " + std::to_string(off >> 20) + " MiB");
  }
  const long long moved = (kTotal / kPiece) * kPiecePages;
  ManagedCounters d = managed_counters();
  EXPECT_GT(d.evictions - start.evictions, 0);
  EXPECT_EQ(d.evictions - start.evictions, moved - kDevicePages) << "every page beyond 64 MiB evicts one";
  EXPECT_EQ(d.to_host - start.to_host, (moved - kDevicePages) * kManagedPage);
  EXPECT_EQ(d.device_faults - start.device_faults, 0);
  EXPECT_EQ(device_used(stats(), 0), static_cast<long long>(kDevice));

  // The last two pieces are the ones on the device; the first ones were evicted to the host.
  ManagedCounters before = managed_counters();
  EXPECT_EQ(get(p + kTotal - 2 * kPiece, 2 * kPiece), pat.substr(kTotal - 2 * kPiece));
  EXPECT_EQ(managed_counters().device_faults - before.device_faults, 0) << "the newest pieces are resident";
  before = managed_counters();
  EXPECT_EQ(std::memcmp(p, pat.data(), kPiece), 0);
  EXPECT_EQ(managed_counters().host_faults - before.host_faults, 0) << "the oldest piece was evicted";

  // Every byte from the CPU.
  EXPECT_EQ(std::memcmp(p, pat.data(), kTotal), 0) << "CPU view";
  expect_within_device("after the CPU check");
  // Every byte from device 0, piece by piece.
  for (size_t off = 0; off < kTotal; off += kPiece) {
    ASSERT_EQ(get(p + off, kPiece), pat.substr(off, kPiece)) << "D2H of the piece at " << off;
    expect_within_device("after the D2H copy at " + std::to_string(off >> 20) + " MiB");
  }
  // One copy larger than the device: pages come and go during the copy, the bytes stay exact.
  EXPECT_TRUE(get(p, kTotal) == pat) << "one 256 MiB D2H copy";
  expect_within_device("after the 256 MiB copy");
  // The device writes everything (4x its size), the CPU checks.
  ASSERT_EQ(aclrtMemset(p, kTotal, 0xa5, kTotal), kOk);
  expect_within_device("after the 256 MiB memset");
  EXPECT_TRUE(all_bytes(std::string(p, kTotal), '\xa5'));
  EXPECT_GT(managed_counters().evictions - d.evictions, 0);
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(device_used(stats(), 0), 0) << "aclrtFree gives the device memory back";
}

// Managed residency shares the device with ordinary allocations: next to a 40 MiB aclrtMalloc, a
// 64 MiB managed copy evicts within the remaining space and never pushes the device over.
TEST_F(ManagedOversubscriptionTest, ManagedPagesNeverPushTheDeviceOverItsSize) {
  ScopedEnvRuntime env("ACLVMM_DEVICE_MEMORY", "64M");
  ASSERT_TRUE(env.ok());
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 40 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const long long used_by_malloc = device_used(stats(), 0);
  ASSERT_GE(used_by_malloc, static_cast<long long>(40 * kMiB));
  void* vp = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&vp, 64 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  char* p = static_cast<char*>(vp);
  REQUIRE_MANAGED_TRACKING();
  const std::string pat = pattern(64 * kMiB, 5);
  std::memcpy(p, pat.data(), pat.size());
  const long long evictions = managed_counters().evictions;
  // Only 24 MiB (minus the malloc's rounding) are left for managed pages: the copy still works.
  EXPECT_EQ(get(p, 64 * kMiB), pat);
  expect_within_device("after the 64 MiB managed copy next to a 40 MiB aclrtMalloc");
  EXPECT_GT(managed_counters().evictions - evictions, 0);
  EXPECT_EQ(aclrtFree(dev), kOk);
  EXPECT_EQ(std::memcmp(p, pat.data(), pat.size()), 0);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// The victim is the least recently *used* page, not the first one migrated: a device access
// refreshes a page, and pages of several allocations share one order.
TEST_F(ManagedOversubscriptionTest, EvictsTheLeastRecentlyUsedPage) {
  ScopedEnvRuntime env("ACLVMM_DEVICE_MEMORY", "8M");  // room for four managed pages
  ASSERT_TRUE(env.ok());
  void* va = nullptr;
  void* vb = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&va, 4 * k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  ASSERT_EQ(aclrtMemAllocManaged(&vb, 2 * k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  char* a = static_cast<char*>(va);
  char* b = static_cast<char*>(vb);
  REQUIRE_MANAGED_TRACKING();
  std::memset(a, 'a', 4 * k2M);
  std::memset(b, 'b', 2 * k2M);
  for (int i : {0, 1, 2, 3}) ASSERT_EQ(get(a + i * k2M, 1), "a");  // a0..a3 on the device
  ASSERT_EQ(get(a, 1), "a");                                        // a0 is now the newest
  const ManagedCounters before = managed_counters();
  ASSERT_EQ(get(b, 1), "b");  // evicts a1
  ASSERT_EQ(get(b + k2M, 1), "b");  // evicts a2
  EXPECT_EQ(managed_counters().evictions - before.evictions, 2);
  // Pages on the host are read by the CPU without a fault; device-resident ones fault back.
  auto cpu_faults = [&](const char* p) {
    const long long f = managed_counters().host_faults;
    EXPECT_EQ(*reinterpret_cast<const volatile char*>(p), 'a');
    return managed_counters().host_faults - f;
  };
  EXPECT_EQ(cpu_faults(a + k2M), 0) << "a1 was the least recently used";
  EXPECT_EQ(cpu_faults(a + 2 * k2M), 0) << "a2 came next";
  EXPECT_EQ(cpu_faults(a), 1) << "a0 was refreshed and stayed";
  EXPECT_EQ(cpu_faults(a + 3 * k2M), 1) << "a3 stayed";
  EXPECT_EQ(aclrtFree(va), kOk);
  EXPECT_EQ(aclrtFree(vb), kOk);
}

}  // namespace
}  // namespace aclvmm_test
