// aclrtMemP2PMap: a peer device gains access to another device's memory (behavior.md §10 last
// paragraph; products.md: not on EDGE → 207000). Without it, a device operation of device 1 on
// device-0 memory is refused with 507899 (behavior.md "Where aclvmm differs": memcpy on memory the
// executing device may not access).
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/test_env.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

class ManagedP2PMapTest : public MappedTest {};

// VMM device memory of device 0 mapped in a reservation: device 1 may neither read nor write it
// until aclrtMemP2PMap(ptr, size, 1, 0); then it reads the bytes and its writes land. Device 2
// stays refused.
TEST_F(ManagedP2PMapTest, VmmMemoryOfDevice0BecomesReachableFromDevice1) {
  const std::string pat = pattern(k2M, 21);
  h2d(va_, pat);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclError rc = kOk;
  get(va_, 4096, &rc);
  EXPECT_EQ(rc, kDrv) << "device 1 before the P2P map (read)";
  EXPECT_EQ(put(va_, "x"), kDrv) << "device 1 before the P2P map (write)";
  EXPECT_EQ(aclrtMemP2PMap(va_, k2M, 1, 0), kOk);
  EXPECT_EQ(get(va_, k2M, &rc), pat);
  EXPECT_EQ(rc, kOk);
  EXPECT_EQ(put(at(va_, 100), "peer"), kOk);
  ASSERT_EQ(aclrtSetDevice(2), kOk);
  get(va_, 4096, &rc);
  EXPECT_EQ(rc, kDrv) << "device 2 was not named";
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(at(va_, 98), 8), pat.substr(98, 2) + "peer" + pat.substr(104, 2)) << "device 0 sees the peer's write";
}

// The grant follows the mappings in the range: in a 4 MiB reservation with two 2 MiB mappings,
// P2PMap of the second half leaves the first one closed to the peer.
TEST_F(ManagedP2PMapTest, OnlyMappingsInTheRangeAreGranted) {
  void* va = reserve(4 * kMiB);
  aclrtDrvMemHandle a = make_handle(), b = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, a, 0), kOk);
  ASSERT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, b, 0), kOk);
  h2d(va, pattern(4 * kMiB, 3));
  EXPECT_EQ(aclrtMemP2PMap(at(va, k2M), k2M, 1, 0), kOk);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclError rc = kOk;
  EXPECT_EQ(get(at(va, k2M), k2M, &rc), pattern(4 * kMiB, 3).substr(k2M));
  EXPECT_EQ(rc, kOk);
  get(va, 16, &rc);
  EXPECT_EQ(rc, kDrv) << "the first mapping was not in the range";
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(va, k2M)), kOk);
  EXPECT_EQ(aclrtFreePhysical(a), kOk);
  EXPECT_EQ(aclrtFreePhysical(b), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// aclrtMalloc memory of device 0: the same, for reads and writes.
TEST_F(ManagedP2PMapTest, MallocMemoryOfDevice0BecomesReachableFromDevice1) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const std::string pat = pattern(3 * kMiB, 8);
  h2d(d, pat);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclError rc = kOk;
  get(d, 4096, &rc);
  EXPECT_EQ(rc, kDrv) << "device 1 before the P2P map";
  EXPECT_EQ(aclrtMemP2PMap(d, 3 * kMiB, 1, 0), kOk);
  EXPECT_EQ(get(d, 3 * kMiB, &rc), pat);
  EXPECT_EQ(rc, kOk);
  EXPECT_EQ(put(d, "from device 1"), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(d, 13), "from device 1");
  EXPECT_EQ(aclrtFree(d), kOk);
}

// §10 aclrtMemP2PMap misuse: p NULL, size 0, flags ≠ 0 → 100000 (ACL layer, first); dstDevId →
// physical id, invalid → 107001; memory that is not device memory → 107000.
TEST_F(ManagedP2PMapTest, MisuseTable) {
  static char plain[4096];
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 4096), kOk);
  void* heap = std::malloc(4096);
  ASSERT_NE(heap, nullptr);
  struct Row {
    const char* name;
    void* ptr;
    size_t size;
    int32_t dst;
    uint64_t flags;
    aclError want;
  } rows[] = {
      {"ptr NULL", nullptr, k2M, 1, 0, kParam},
      {"size 0", va_, 0, 1, 0, kParam},
      {"flags 1", va_, k2M, 1, 1, kParam},
      {"flags 1 << 63", va_, k2M, 1, uint64_t(1) << 63, kParam},
      {"ptr NULL and dstDevId 8 (ACL layer first)", nullptr, k2M, 8, 0, kParam},
      {"flags 1 and dstDevId 8 (ACL layer first)", va_, k2M, 8, 1, kParam},
      {"dstDevId 8", va_, k2M, 8, 0, kBadDevice},
      {"dstDevId -1", va_, k2M, -1, 0, kBadDevice},
      {"dstDevId 64", va_, k2M, 64, 0, kBadDevice},
      {"host pointer (static)", plain, sizeof plain, 1, 0, kRtParam},
      {"host pointer (malloc)", heap, 4096, 1, 0, kRtParam},
      {"host pointer (aclrtMallocHost)", pinned, 4096, 1, 0, kRtParam},
      {"control row", va_, k2M, 1, 0, kOk},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(aclrtMemP2PMap(r.ptr, r.size, r.dst, r.flags), r.want);
  }
  std::free(heap);
  EXPECT_EQ(aclrtFreeHost(pinned), kOk);
}

class ManagedP2PMapProductTest : public AclTest {};

// products.md: not supported on EDGE (207000), supported on A3.
TEST_F(ManagedP2PMapProductTest, NotSupportedOnEdge) {
  struct Case {
    const char* soc;
    aclError want;
  } cases[] = {{"Ascend310B1", kNotSupported}, {"Ascend910_9391", kOk}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.soc);
    ScopedEnvRuntime env("ACLVMM_SOC", c.soc);
    ASSERT_TRUE(env.ok());
    void* d = nullptr;
    ASSERT_EQ(aclrtMalloc(&d, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    EXPECT_EQ(aclrtMemP2PMap(d, k2M, 1, 0), c.want);
    EXPECT_EQ(aclrtFree(d), kOk);
  }
}

}  // namespace
}  // namespace aclvmm_test
