// Managed memory: allocation, queries, freeing, misuse and product gating (behavior.md §9, §10;
// emulation.md §3 UVM window, §6; products.md "Managed memory").
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/managed_util.h"
#include "api/test_env.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {
namespace {

constexpr uint64_t kTiB = uint64_t(1) << 40;
constexpr uint64_t kUvmBase = 0x90000000000ull;
constexpr uint64_t kUvmSize = 3 * kTiB;

// Runs fn with no current context on this thread, then makes device 0's context current again.
aclError without_context(const std::function<aclError()>& fn) {
  aclrtContext c = nullptr;
  EXPECT_EQ(aclrtCreateContext(&c, 0), kOk);
  EXPECT_EQ(aclrtDestroyContext(c), kOk);  // it was current: now there is none
  const aclError e = fn();
  EXPECT_EQ(aclrtSetDevice(0), kOk);
  return e;
}

class ManagedAllocTest : public ManagedTest {};

// §10: the size is rounded up to 2 MiB; §9: the range of an interior pointer is the whole
// allocation (its UVM node, 2 MiB rounded).
TEST_F(ManagedAllocTest, SizeIsRoundedUpToTwoMiBAndRangeCoversIt) {
  struct Case {
    uint64_t request, rounded;
  } cases[] = {{1, k2M}, {k2M - 1, k2M}, {k2M, k2M}, {k2M + 1, 2 * k2M}, {3 * kMiB + 5, 4 * kMiB},
               {10 * kMiB, 10 * kMiB}};
  for (const Case& c : cases) {
    SCOPED_TRACE("request " + std::to_string(c.request));
    char* p = managed(c.request);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(u64(p) % k2M, 0u) << "managed allocations start on a 2 MiB page";
    for (uint64_t off : {uint64_t(0), c.request / 2, c.request - 1, c.rounded - 1}) {
      void* base = nullptr;
      size_t size = 0;
      ASSERT_EQ(aclrtMemGetAddressRange(p + off, &base, &size), kOk) << "offset " << off;
      EXPECT_EQ(base, p) << "offset " << off;
      EXPECT_EQ(size, c.rounded) << "offset " << off;
    }
    // Either output may be NULL (§9).
    size_t size = 0;
    EXPECT_EQ(aclrtMemGetAddressRange(p + 1, nullptr, &size), kOk);
    EXPECT_EQ(size, c.rounded);
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// emulation.md §3: allocations lie in the UVM window (relocated under a sanitizer); §9: the
// pointer attributes say MANAGED, id 0, 2 MiB pages, rsv untouched.
TEST_F(ManagedAllocTest, LivesInTheUvmWindowAndReportsManagedAttributes) {
  char* a = managed(5 * kMiB);
  char* b = managed(k2M);
  ASSERT_TRUE(a && b);
  // Sanitizers move the UVM window (AddressSanitizer's shadow covers the vendor address) and
  // ThreadSanitizer also shrinks it (address_space.cpp).
  if (!kSanitized) {
    for (char* p : {a, b}) {
      EXPECT_GE(u64(p), kUvmBase);
      EXPECT_LE(u64(p) + k2M, kUvmBase + kUvmSize);
    }
  }
  EXPECT_TRUE(u64(b) >= u64(a) + 6 * kMiB || u64(b) + k2M <= u64(a)) << "allocations overlap";
  for (size_t off : {size_t(0), size_t(12345), 6 * kMiB - 1}) {
    aclrtPtrAttributes attr;
    std::memset(&attr, 0xab, sizeof attr);
    ASSERT_EQ(aclrtPointerGetAttributes(a + off, &attr), kOk) << off;
    EXPECT_EQ(load_raw(attr.location.type), uint32_t(ACL_MEM_LOCATION_TYPE_MANAGED)) << off;
    EXPECT_EQ(attr.location.id, 0u) << off;
    EXPECT_EQ(attr.pageSize, k2M) << off;
    for (uint32_t r : attr.rsv) EXPECT_EQ(r, 0xababababu) << "rsv[] must stay untouched";
  }
  EXPECT_EQ(live_count("managed_allocations"), 2);
  EXPECT_EQ(aclrtFree(a), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 1);
  EXPECT_EQ(aclrtFree(b), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 0);
}

// emulation.md §6: the CPU reads and writes managed memory directly; fresh memory reads as zeros.
TEST_F(ManagedAllocTest, CpuReadsAndWritesItDirectly) {
  const size_t n = 6 * kMiB + 100;
  char* p = managed(n);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(all_bytes(std::string(p, 6 * kMiB + 2 * kMiB), '\0')) << "fresh memory reads zeros";
  const std::string pat = pattern(n, 3);
  std::memcpy(p, pat.data(), n);
  EXPECT_EQ(std::memcmp(p, pat.data(), n), 0);
  p[n - 1] = 'z';
  EXPECT_EQ(p[n - 1], 'z');
  // A device read (D2H copy) sees what the CPU wrote.
  std::string back = get(p, n);
  EXPECT_EQ(back.substr(0, n - 1), pat.substr(0, n - 1));
  EXPECT_EQ(back[n - 1], 'z');
  EXPECT_EQ(aclrtFree(p), kOk);
}

// §10: freed with aclrtFree; a double free or an interior pointer → 107000; the freed range
// is unallocated afterwards (§9: 507899 for pointer attributes in the UVM window).
TEST_F(ManagedAllocTest, FreeDoubleFreeAndInteriorPointer) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(aclrtFree(p + k2M), kRtParam) << "interior pointer";
  EXPECT_EQ(aclrtFree(p + 1), kRtParam) << "interior pointer";
  EXPECT_EQ(live_count("managed_allocations"), 1) << "a refused free changes nothing";
  p[4 * kMiB - 1] = 7;  // still mapped
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 0);
  EXPECT_EQ(aclrtFree(p), kRtParam) << "double free";
  aclrtPtrAttributes attr{};
  EXPECT_EQ(aclrtPointerGetAttributes(p, &attr), kDrv) << "§9: unallocated address in the UVM window";
  void* base = nullptr;
  size_t size = 0;
  EXPECT_EQ(aclrtMemGetAddressRange(p, &base, &size), kRtParam) << "§9: unknown → 107000";
  // The range is reusable.
  char* q = managed(4 * kMiB);
  ASSERT_NE(q, nullptr);
  q[0] = 1;
  EXPECT_EQ(aclrtFree(q), kOk);
}

// §10 aclrtMemAllocManaged misuse: p NULL → 100000; flag ≠ ACL_RT_MEM_ATTACH_GLOBAL → 100000;
// size 0 → 107000 (runtime); no current context → 107002.
TEST_F(ManagedAllocTest, MisuseTable) {
  struct Row {
    const char* name;
    std::function<aclError(void**)> call;
    aclError want;
  };
  const Row rows[] = {
      {"ptr NULL", [](void**) { return aclrtMemAllocManaged(nullptr, k2M, ACL_RT_MEM_ATTACH_GLOBAL); }, kParam},
      {"flag 0", [](void** p) { return aclrtMemAllocManaged(p, k2M, 0); }, kParam},
      {"flag 2", [](void** p) { return aclrtMemAllocManaged(p, k2M, 2); }, kParam},
      {"flag 3", [](void** p) { return aclrtMemAllocManaged(p, k2M, 3); }, kParam},
      {"flag 0xffffffff", [](void** p) { return aclrtMemAllocManaged(p, k2M, 0xffffffffu); }, kParam},
      {"size 0", [](void** p) { return aclrtMemAllocManaged(p, 0, ACL_RT_MEM_ATTACH_GLOBAL); }, kRtParam},
      {"flag 0 and size 0 (ACL layer first)", [](void** p) { return aclrtMemAllocManaged(p, 0, 0); }, kParam},
      {"no current context",
       [](void** p) {
         return without_context([p] { return aclrtMemAllocManaged(p, k2M, ACL_RT_MEM_ATTACH_GLOBAL); });
       },
       kNoContext},
      {"size 2^64-1 (cannot be rounded)",
       [](void** p) { return aclrtMemAllocManaged(p, UINT64_MAX, ACL_RT_MEM_ATTACH_GLOBAL); }, kNoMemory},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    void* p = reinterpret_cast<void*>(0x1234);
    EXPECT_EQ(r.call(&p), r.want);
    EXPECT_EQ(p, reinterpret_cast<void*>(0x1234)) << "a refused call leaves *ptr alone";
    EXPECT_EQ(live_count("managed_allocations"), 0);
  }
}

// products.md: at most 3 TiB of managed virtual memory per process; beyond → 207001. The
// allocations are sparse, so terabytes cost nothing until touched. Runs in a child with a time
// limit: every step (allocation, touch, free) must be cheap, and a hang must not stall the suite.
TEST_F(ManagedAllocTest, MoreThanThreeTiBInTotalIsOutOfMemory) {
  if (kTsan) GTEST_SKIP() << "ThreadSanitizer builds shrink the UVM window";
  const ChildResult r = run_in_child([] {
    alarm(20);
    // A forked child inherits no context (docs/architecture.md, "fork").
    CHILD_CHECK(aclrtSetDevice(0) == kOk, 14);
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    const uint32_t g = ACL_RT_MEM_ATTACH_GLOBAL;
    CHILD_CHECK(aclrtMemAllocManaged(&a, 2 * kTiB, g) == kOk, 1);
    CHILD_CHECK(aclrtMemAllocManaged(&b, 2 * kTiB, g) == kNoMemory, 2);
    CHILD_CHECK(b == nullptr, 3);
    CHILD_CHECK(aclrtMemAllocManaged(&b, 3 * kTiB + 1, g) == kNoMemory, 4);  // alone too
    CHILD_CHECK(live_count("managed_allocations") == 1, 5);
    // The rest of the 3 TiB is available: 1 TiB, then nothing more.
    CHILD_CHECK(aclrtMemAllocManaged(&b, kTiB, g) == kOk, 6);
    CHILD_CHECK(aclrtMemAllocManaged(&c, k2M, g) == kNoMemory, 7);
    // Sparse and usable at both ends.
    static_cast<char*>(a)[0] = 1;
    static_cast<char*>(a)[2 * kTiB - 1] = 2;
    static_cast<char*>(b)[kTiB - 1] = 3;
    CHILD_CHECK(static_cast<char*>(a)[2 * kTiB - 1] == 2, 8);
    CHILD_CHECK(aclrtFree(a) == kOk, 9);
    CHILD_CHECK(aclrtMemAllocManaged(&c, 2 * kTiB, g) == kOk, 10);  // freed space returns
    CHILD_CHECK(aclrtFree(b) == kOk, 11);
    CHILD_CHECK(aclrtFree(c) == kOk, 12);
    CHILD_CHECK(live_count("managed_allocations") == 0, 13);
    return 0;
  });
  EXPECT_EQ(r.signal, 0) << (r.signal == SIGALRM ? "timed out after 20 s (a step hangs)" : "crashed");
  EXPECT_EQ(r.exit_code, 0) << "see the child's message on stderr";
}

// products.md: the managed calls are A2-only; elsewhere 207000 (with otherwise valid arguments).
TEST_F(ManagedAllocTest, OtherProductsAnswerNotSupported) {
  for (const char* soc : {"Ascend910_9391", "Ascend310B1", "Ascend910A"}) {
    SCOPED_TRACE(soc);
    ScopedEnvRuntime env("ACLVMM_SOC", soc);
    ASSERT_TRUE(env.ok());
    ASSERT_STREQ(aclrtGetSocName(), soc);
    void* p = nullptr;
    EXPECT_EQ(aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kNotSupported);
    EXPECT_EQ(p, nullptr);
    // A window address stands in for a pointer (none can be allocated here).
    const void* fake = reinterpret_cast<void*>(kUvmBase);
    aclrtStream s = nullptr;
    EXPECT_EQ(aclrtMemManagedAdvise(fake, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kNotSupported);
    int32_t v = 0;
    EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, fake, k2M, &v, 4), kNotSupported);
    aclrtMemManagedRangeAttribute attrs[] = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY};
    void* data[] = {&v};
    size_t sizes[] = {4};
    EXPECT_EQ(aclrtMemManagedGetAttrs(attrs, 1, fake, k2M, data, sizes), kNotSupported);
    EXPECT_EQ(aclrtMemManagedPrefetchAsync(fake, k2M, kDev0, 0, s), kNotSupported);
    const void* ptrs[] = {fake};
    size_t psizes[] = {k2M};
    aclrtMemManagedLocation locs[] = {kHost};
    size_t idxs[] = {0};
    EXPECT_EQ(aclrtMemManagedPrefetchBatchAsync(ptrs, psizes, 1, locs, idxs, 1, 0, s), kNotSupported);
    EXPECT_EQ(live_count("managed_allocations"), 0);
  }
  // Back on the default A2 product it works again.
  void* p = nullptr;
  EXPECT_EQ(aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Every A2 SoC supports managed memory (products.md).
TEST_F(ManagedAllocTest, EveryA2SocSupportsIt) {
  for (const char* soc : {"Ascend910B2", "Ascend910B4"}) {
    SCOPED_TRACE(soc);
    ScopedEnvRuntime env("ACLVMM_SOC", soc);
    ASSERT_TRUE(env.ok());
    void* p = nullptr;
    ASSERT_EQ(aclrtMemAllocManaged(&p, 3 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    static_cast<char*>(p)[0] = 9;
    EXPECT_EQ(get(p, 1), std::string(1, '\x09'));
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

}  // namespace
}  // namespace aclvmm_test
