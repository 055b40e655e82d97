// Managed memory: aclrtMemManagedPrefetchAsync / ...BatchAsync (behavior.md §10; emulation.md §6:
// prefetch migrates ahead of use, on the stream, in stream order; §8 statistics).
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

// LAST_PREFETCH_LOCATION, _TYPE and _ID of [p, p+size) (behavior.md §10 encodings).
std::vector<int32_t> last_prefetch(const void* p, size_t size) {
  std::vector<int32_t> out;
  for (auto a : {ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                 ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID}) {
    int32_t v = 12345;
    EXPECT_EQ(aclrtMemManagedGetAttr(a, p, size, &v, sizeof v), kOk);
    out.push_back(v);
  }
  return out;
}
using V = std::vector<int32_t>;

// An emulated kernel that holds its stream until the test opens the gate.
void gate_kernel(aclvmmKernelContext*, void* raw) {
  auto* open = static_cast<std::atomic<bool>*>(raw);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!open->load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

class ManagedPrefetchTest : public ManagedTest {
 protected:
  void SetUp() override {
    ManagedTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(aclrtCreateStream(&stream_), kOk);
  }
  void TearDown() override {
    if (stream_) {
      EXPECT_EQ(aclrtDestroyStream(stream_), kOk);
    }
    ManagedTest::TearDown();
  }
  aclrtStream stream_ = nullptr;
};

// Prefetch to device 0 on a created stream and on the NULL (default) stream: pages move ahead of
// use, so a following device memset faults nothing; the attributes name device 0.
TEST_F(ManagedPrefetchTest, ToDeviceOnCreatedAndNullStream) {
  for (aclrtStream s : {stream_, aclrtStream(nullptr)}) {
    SCOPED_TRACE(s ? "created stream" : "NULL stream");
    char* p = managed(8 * kMiB);
    ASSERT_NE(p, nullptr);
    REQUIRE_MANAGED_TRACKING();
    const std::string pat = pattern(8 * kMiB, 4);
    std::memcpy(p, pat.data(), pat.size());
    EXPECT_EQ(last_prefetch(p, 8 * kMiB), (V{-2, 0, -2})) << "never prefetched";
    ManagedDelta d;
    ManagedDelta::Expect two_prefetched;  // two pages to the device, by prefetching
    two_prefetched.to_device = 2;
    two_prefetched.prefetch = 2;
    // [1 MiB, 3 MiB) covers pages 0 and 1 (rounded to whole pages).
    ASSERT_EQ(aclrtMemManagedPrefetchAsync(p + kMiB, k2M, kDev0, 0, s), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    d.expect(two_prefetched, "pages 0-1 to device 0");
    EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
    EXPECT_EQ(last_prefetch(p, 8 * kMiB), (V{-2, 0, -2})) << "pages 2-3 were not prefetched";
    ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, 8 * kMiB, kDev0, 0, s), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    d.expect(two_prefetched, "only pages 2-3 still had to move");
    EXPECT_EQ(last_prefetch(p, 8 * kMiB), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
    EXPECT_EQ(get(p, 8 * kMiB), pat) << "the device reads the CPU's bytes";
    ASSERT_EQ(aclrtMemset(p, 8 * kMiB, 0x3c, 8 * kMiB), kOk);
    d.expect(0, 0, 0, 0, "the copy and the memset find every page on device 0");
    EXPECT_TRUE(all_bytes(std::string(p, 8 * kMiB), 0x3c));
    d.expect(4, 0, 0, 4, "the CPU pulls the pages back");
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// Prefetch to the host brings device-resident pages back, so CPU reads fault nothing; HOST_NUMA
// node 0 and HOST_NUMA_CURRENT also mean the host (§10 conversion of the location).
TEST_F(ManagedPrefetchTest, ToHostBringsPagesBackBeforeTheCpuReads) {
  struct Case {
    const char* name;
    aclrtMemManagedLocation where;
    V attrs;  // LAST_PREFETCH_LOCATION, _TYPE, _ID
  } cases[] = {
      {"HOST", kHost, {-1, ACL_MEM_LOCATIONTYPE_HOST, -2}},
      {"HOST_NUMA 0", mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0), {-1, ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    char* p = managed(6 * kMiB);
    ASSERT_NE(p, nullptr);
    REQUIRE_MANAGED_TRACKING();
    ManagedDelta d;
    ASSERT_EQ(aclrtMemset(p, 6 * kMiB, 0x71, 4 * kMiB), kOk);
    d.expect(0, 2, 2, 0, "memset of pages 0-1");
    ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, 6 * kMiB, c.where, 0, stream_), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), kOk);
    ManagedDelta::Expect back;
    back.to_host = 2;
    back.prefetch = 2;
    d.expect(back, "pages 0-1 back; page 2 was on the host already");
    EXPECT_EQ(last_prefetch(p, 6 * kMiB), c.attrs);
    EXPECT_TRUE(all_bytes(std::string(p, 4 * kMiB), 0x71));
    EXPECT_TRUE(all_bytes(std::string(p + 4 * kMiB, k2M), '\0'));
    d.expect(0, 0, 0, 0, "CPU reads of prefetched pages do not fault");
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// The prefetch is a task of its stream: queued behind a memsetAsync on the same stream, it runs
// after it (the pages end on the host with the memset's bytes), and nothing runs before the
// stream gets there.
TEST_F(ManagedPrefetchTest, RunsInStreamOrder) {
  char* p = managed(8 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  std::atomic<bool> open{false};
  ManagedDelta d;
  ASSERT_EQ(aclvmmLaunchKernel(stream_, gate_kernel, &open), kOk);
  ASSERT_EQ(aclrtMemsetAsync(p, 8 * kMiB, 0x6e, 8 * kMiB, stream_), kOk);
  ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, 8 * kMiB, kHost, 0, stream_), kOk);
  ASSERT_EQ(aclrtMemManagedPrefetchAsync(p + 4 * kMiB, 4 * kMiB, kDev0, 0, stream_), kOk);
  d.expect(0, 0, 0, 0, "nothing ran yet: the stream is held by the gate kernel");
  EXPECT_EQ(last_prefetch(p, 8 * kMiB), (V{-2, 0, -2}));
  open.store(true);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), kOk);
  // memset: 4 pages in; prefetch host: 4 pages out; prefetch device: pages 2-3 in again.
  ManagedDelta::Expect in_order;
  in_order.device_faults = 4;
  in_order.to_device = 6;
  in_order.to_host = 4;
  in_order.prefetch = 6;
  d.expect(in_order, "memset, then both prefetches, in order");
  EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2}));
  EXPECT_EQ(last_prefetch(p + 4 * kMiB, 4 * kMiB), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
  EXPECT_TRUE(all_bytes(std::string(p, 4 * kMiB), 0x6e));
  d.expect(0, 0, 0, 0, "pages 0-1 are on the host");
  EXPECT_TRUE(all_bytes(std::string(p + 4 * kMiB, 4 * kMiB), 0x6e));
  d.expect(2, 0, 0, 2, "pages 2-3 were on device 0");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A prefetch to device 1 charges device 1 and reports id 1; a device-0 operation then takes the
// pages over (device faults), and aclrtFree returns every charge.
TEST_F(ManagedPrefetchTest, ToAnotherDevice) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  const long long used1 = device_used(stats(), 1);
  ManagedDelta d;
  ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, 4 * kMiB, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 1), 0, stream_), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), kOk);
  ManagedDelta::Expect to_device1;
  to_device1.to_device = 2;
  to_device1.prefetch = 2;
  d.expect(to_device1, "to device 1");
  EXPECT_EQ(device_used(stats(), 1), used1 + 2 * kManagedPage);
  EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{1, ACL_MEM_LOCATIONTYPE_DEVICE, 1}));
  ASSERT_EQ(aclrtMemset(p, k2M, 1, k2M), kOk);  // on device 0
  d.expect(0, 1, 1, 0, "device 0 takes page 0 from device 1");
  EXPECT_EQ(device_used(stats(), 1), used1 + kManagedPage);
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(device_used(stats(), 1), used1);
}

// With ASCEND_RT_VISIBLE_DEVICES=2,3, user device 1 is physical device 3: a prefetch and advice
// name user ids, the attributes report user ids, the charge lands on physical device 3, and
// user id 2 is out of range (107000, §10).
TEST_F(ManagedPrefetchTest, VisibleDevicesRenumberTheLocations) {
  ASSERT_EQ(aclrtDestroyStream(stream_), kOk);
  stream_ = nullptr;
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,3");
  ASSERT_TRUE(env.ok());
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  const long long used3 = device_used(stats(), 3);
  const auto user1 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 1);
  ASSERT_EQ(aclrtMemManagedPrefetchAsync(p, 4 * kMiB, user1, 0, nullptr), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{1, ACL_MEM_LOCATIONTYPE_DEVICE, 1}));
  EXPECT_EQ(device_used(stats(), 3), used3 + 2 * kManagedPage) << "physical device 3 holds the pages";
  ASSERT_EQ(aclrtMemManagedAdvise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, user1), kOk);
  ASSERT_EQ(aclrtMemManagedAdvise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, user1), kOk);
  int32_t v = 0;
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, 4 * kMiB, &v, 4), kOk);
  EXPECT_EQ(v, 1);
  int32_t acc[2] = {0, 0};
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, 4 * kMiB, acc, sizeof acc), kOk);
  EXPECT_EQ(V(acc, acc + 2), (V{1, -2}));
  const auto user2 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 2);
  EXPECT_EQ(aclrtMemManagedPrefetchAsync(p, k2M, user2, 0, nullptr), kRtParam);
  EXPECT_EQ(aclrtMemManagedAdvise(p, k2M, ACL_MEM_ADVISE_SET_ACCESSED_BY, user2), kRtParam);
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(device_used(stats(), 3), used3);
}

// Batch: prefetchLocs[k] applies from ptrs[prefetchLocIdxs[k]] up to the next index: with
// indices {0, 2} over 4 ranges, ranges 0-1 go to device 0 and ranges 2-3 to the host.
TEST_F(ManagedPrefetchTest, BatchSplitsTheRangesByLocationIndex) {
  for (aclrtStream s : {stream_, aclrtStream(nullptr)}) {
    SCOPED_TRACE(s ? "created stream" : "NULL stream");
    char* a = managed(4 * kMiB);  // ranges 0 and 1: its two pages
    char* b = managed(k2M);       // range 2
    char* c = managed(3 * kMiB);  // range 3: both of its pages
    ASSERT_TRUE(a && b && c);
    REQUIRE_MANAGED_TRACKING();
    std::memset(a, 0x0a, 4 * kMiB);
    ManagedDelta d;
    ASSERT_EQ(aclrtMemset(b, k2M, 0x0b, k2M), kOk);
    ASSERT_EQ(aclrtMemset(c, 4 * kMiB, 0x0c, 3 * kMiB), kOk);
    d.expect(0, 3, 3, 0, "ranges 2-3 start on device 0, ranges 0-1 on the host");
    const void* ptrs[] = {a, a + k2M + 1, b, c};
    size_t sizes[] = {k2M, 100, k2M, 3 * kMiB};
    aclrtMemManagedLocation locs[] = {kDev0, kHost};
    size_t idxs[] = {0, 2};
    ASSERT_EQ(aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, 4, locs, idxs, 2, 0, s), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    ManagedDelta::Expect split;
    split.to_device = 2;
    split.to_host = 3;
    split.prefetch = 5;
    d.expect(split, "2 pages to device 0, 3 to the host");
    EXPECT_EQ(last_prefetch(a, 4 * kMiB), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
    EXPECT_EQ(last_prefetch(b, k2M), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2}));
    EXPECT_EQ(last_prefetch(c, 4 * kMiB), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2}));
    EXPECT_TRUE(all_bytes(std::string(b, k2M), 0x0b));
    EXPECT_TRUE(all_bytes(std::string(c, 3 * kMiB), 0x0c));
    d.expect(0, 0, 0, 0, "ranges 2-3 are on the host");
    EXPECT_TRUE(all_bytes(get(a, 4 * kMiB), 0x0a));
    d.expect(0, 0, 0, 0, "ranges 0-1 are on device 0");
    for (char* p : {a, b, c}) EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// §10 aclrtMemManagedPrefetchAsync: p NULL, size 0, flags ≠ 0 → 100000; a location type other
// than DEVICE/HOST/HOST_NUMA/HOST_NUMA_CURRENT or a DEVICE id out of range → 107000; driver-side
// failures (an address that is not managed memory) are only logged: the call and the stream
// synchronisation succeed and nothing moves.
TEST_F(ManagedPrefetchTest, MisuseTable) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const NotManaged n = not_managed();
  struct Row {
    const char* name;
    const void* ptr;
    size_t size;
    aclrtMemManagedLocation where;
    uint32_t flags;
    aclError want;
  } rows[] = {
      {"ptr NULL", nullptr, k2M, kDev0, 0, kParam},
      {"size 0", p, 0, kDev0, 0, kParam},
      {"flags 1", p, k2M, kDev0, 1, kParam},
      {"flags 0x80000000", p, k2M, kDev0, 0x80000000u, kParam},
      {"ptr NULL before a bad location", nullptr, k2M, mloc(0, 0), 0, kParam},
      {"type INVALID", p, k2M, mloc(ACL_MEM_LOCATIONTYPE_INVALID, 0), 0, kRtParam},
      {"type 5", p, k2M, mloc(5, 0), 0, kRtParam},
      {"type -1", p, k2M, mloc(-1, 0), 0, kRtParam},
      {"device id 8", p, k2M, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8), 0, kRtParam},
      {"device id -1", p, k2M, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, -1), 0, kRtParam},
      {"plain host memory (only logged)", n.plain, NotManaged::kPlainSize, kDev0, 0, kOk},
      {"freed managed range (only logged)", n.freed, k2M, kDev0, 0, kOk},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const ManagedCounters before = managed_counters();
    EXPECT_EQ(aclrtMemManagedPrefetchAsync(r.ptr, r.size, r.where, r.flags, stream_), r.want);
    EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk);
    const ManagedCounters after = managed_counters();
    EXPECT_EQ(after.prefetch, before.prefetch) << "nothing was prefetched";
    EXPECT_EQ(after.to_device, before.to_device);
  }
  EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{-2, 0, -2}));
  release(n);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// §10 aclrtMemManagedPrefetchBatchAsync: ACL layer (any array NULL, count 0, numPrefetchLocs 0,
// flags ≠ 0, count < numPrefetchLocs) → 100000; runtime (prefetchLocIdxs[0] ≠ 0, an index ≥ count
// or not strictly increasing, a NULL ptrs[i], a bad location) → 107000. A refused batch queues
// nothing.
TEST_F(ManagedPrefetchTest, BatchMisuseTable) {
  char* p = managed(8 * kMiB);
  ASSERT_NE(p, nullptr);
  struct Args {
    std::vector<const void*> ptrs;
    std::vector<size_t> sizes;
    std::vector<aclrtMemManagedLocation> locs;
    std::vector<size_t> idxs;
    size_t count, num;
    uint64_t flags;
    bool null_ptrs = false, null_sizes = false, null_locs = false, null_idxs = false;
  };
  auto good = [p] {
    Args a;
    a.ptrs = {p, p + k2M, p + 2 * k2M, p + 3 * k2M};
    a.sizes = {k2M, k2M, k2M, k2M};
    a.locs = {kDev0, kHost, kDev0};
    a.idxs = {0, 2, 3};
    a.count = 4;
    a.num = 2;
    a.flags = 0;
    return a;
  };
  struct Row {
    const char* name;
    std::function<void(Args&)> change;
    aclError want;
  } rows[] = {
      {"ptrs NULL", [](Args& a) { a.null_ptrs = true; }, kParam},
      {"sizes NULL", [](Args& a) { a.null_sizes = true; }, kParam},
      {"prefetchLocs NULL", [](Args& a) { a.null_locs = true; }, kParam},
      {"prefetchLocIdxs NULL", [](Args& a) { a.null_idxs = true; }, kParam},
      {"count 0", [](Args& a) { a.count = 0; }, kParam},
      {"numPrefetchLocs 0", [](Args& a) { a.num = 0; }, kParam},
      {"flags 1", [](Args& a) { a.flags = 1; }, kParam},
      {"count < numPrefetchLocs", [](Args& a) { a.count = 1; }, kParam},
      {"prefetchLocIdxs[0] = 1", [](Args& a) { a.idxs[0] = 1; }, kRtParam},
      {"indices not increasing {0, 0}", [](Args& a) { a.idxs[1] = 0; }, kRtParam},
      {"indices decreasing {0, 2, 1}", [](Args& a) { a.num = 3; a.idxs[2] = 1; }, kRtParam},
      {"index = count", [](Args& a) { a.idxs[1] = 4; }, kRtParam},
      {"ptrs[3] NULL", [](Args& a) { a.ptrs[3] = nullptr; }, kRtParam},
      {"ptrs[0] NULL", [](Args& a) { a.ptrs[0] = nullptr; }, kRtParam},
      {"location device id 8", [](Args& a) { a.locs[1] = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8); }, kRtParam},
      {"location device id -1", [](Args& a) { a.locs[0] = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, -1); }, kRtParam},
      {"location type INVALID", [](Args& a) { a.locs[1] = mloc(ACL_MEM_LOCATIONTYPE_INVALID, 0); }, kRtParam},
      {"location type 7", [](Args& a) { a.locs[0] = mloc(7, 0); }, kRtParam},
      {"valid (control row)", [](Args&) {}, kOk},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Args a = good();
    r.change(a);
    const ManagedCounters before = managed_counters();
    EXPECT_EQ(aclrtMemManagedPrefetchBatchAsync(a.null_ptrs ? nullptr : a.ptrs.data(),
                                                a.null_sizes ? nullptr : a.sizes.data(), a.count,
                                                a.null_locs ? nullptr : a.locs.data(),
                                                a.null_idxs ? nullptr : a.idxs.data(), a.num, a.flags,
                                                stream_),
              r.want);
    EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk);
    if (r.want != kOk) {
      EXPECT_EQ(managed_counters().prefetch, before.prefetch) << "a refused batch queues nothing";
      EXPECT_EQ(last_prefetch(p, 8 * kMiB), (V{-2, 0, -2}));
    }
  }
  // The control row ran: ranges 0-1 on device 0, ranges 2-3 on the host.
  EXPECT_EQ(last_prefetch(p, 4 * kMiB), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
  EXPECT_EQ(last_prefetch(p + 4 * kMiB, 4 * kMiB), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2}));
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
