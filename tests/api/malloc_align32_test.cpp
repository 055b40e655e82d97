// aclrtMallocAlign32 (runtime-extra.md §6): aclrtMalloc without the 32-byte padding, except on
// 950 where the two are one call; a size whose rounding to 32 would wrap is 100000. The bytes a
// block takes show in its address range and in the device's used memory.
#include <cstdint>

#include "api/test_util.h"

namespace aclvmm_test {
namespace {

struct Taken {
  aclError rc = -1;
  size_t range = 0;  // aclrtMemGetAddressRange's size
  size_t used = 0;   // what the device's free memory fell by
};

Taken take(size_t size, aclrtMemMallocPolicy policy, bool align32) {
  Taken t;
  const size_t before = hbm_free();
  void* p = nullptr;
  t.rc = align32 ? aclrtMallocAlign32(&p, size, policy) : aclrtMalloc(&p, size, policy);
  if (t.rc != ACL_SUCCESS) return t;
  t.used = before - hbm_free();
  void* base = nullptr;
  if (aclrtMemGetAddressRange(p, &base, &t.range) != ACL_SUCCESS) t.range = 0;
  (void)aclrtFree(p);
  return t;
}

using MallocAlign32 = AclTest;

// Rows: a size, the policy, what aclrtMalloc takes and what aclrtMallocAlign32 takes (A2).
TEST_F(MallocAlign32, NoPaddingOutside950) {
  struct Row {
    size_t size;
    aclrtMemMallocPolicy policy;
    size_t malloc_bytes, align32_bytes;
  };
  const Row rows[] = {
      {4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST, 6 * kMiB, 4 * kMiB},      // the padding needs a page
      {2 * kMiB - 16, ACL_MEM_MALLOC_HUGE_ONLY, 4 * kMiB, 2 * kMiB},  // 32-rounding only
      {4096, ACL_MEM_MALLOC_NORMAL_ONLY, 8192, 4096},
      {4064, ACL_MEM_MALLOC_NORMAL_ONLY, 4096, 4096},  // 4064 + 32 still fits a page
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.size);
    const Taken m = take(r.size, r.policy, false);
    ASSERT_EQ(m.rc, kOk);
    EXPECT_EQ(m.range, r.malloc_bytes);
    EXPECT_EQ(m.used, r.malloc_bytes);
    const Taken a = take(r.size, r.policy, true);
    ASSERT_EQ(a.rc, kOk);
    EXPECT_EQ(a.range, r.align32_bytes);
    EXPECT_EQ(a.used, r.align32_bytes);
  }
}

// §6: devPtr NULL, size 0 and a size whose 32-byte rounding wraps are the ACL layer's 100000;
// aclrtMalloc answers such a size "out of memory" (207001).
TEST_F(MallocAlign32, ChecksInOrder) {
  void* p = nullptr;
  EXPECT_EQ(aclrtMallocAlign32(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST), kParam);
  EXPECT_EQ(aclrtMallocAlign32(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), kParam);
  EXPECT_EQ(aclrtMallocAlign32(&p, SIZE_MAX - 31, ACL_MEM_MALLOC_HUGE_FIRST), kParam);
  EXPECT_EQ(aclrtMallocAlign32(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE1G_ONLY), kParam);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX - 31, ACL_MEM_MALLOC_HUGE_FIRST), kNoMemory);
  EXPECT_EQ(p, nullptr);
}

// On 950 aclrtMallocAlign32 is aclrtMalloc: the padding is there.
TEST(MallocAlign32On950, PadsAsAclrtMalloc) {
  EXPECT_CHILD_OK(run_in_child([] {
    setenv("ACLVMM_SOC", "Ascend950PR_9599", 1);
    if (aclrtSetDevice(0) != ACL_SUCCESS) return 10;
    const Taken m = take(4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST, false);
    const Taken a = take(4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST, true);
    if (m.rc != ACL_SUCCESS || a.rc != ACL_SUCCESS) return 11;
    if (m.range != 6 * kMiB || a.range != 6 * kMiB) return 12;
    return 0;
  }));
}

}  // namespace
}  // namespace aclvmm_test
