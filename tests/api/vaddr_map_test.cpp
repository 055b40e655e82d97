// aclrtMapMem / aclrtMemMapNoAccess / aclrtUnmapMem (behavior.md §3 and the decisions table;
// emulation.md §2, §4; clients.md A7, A10).
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

using VaddrMapTest = AclTest;

// §3 misuse of aclrtMapMem and aclrtMemMapNoAccess: ACL 100000 → driver offset/handle 107000 →
// kernel geometry 507899 → physical size 207001. A failed map changes nothing.
TEST_F(VaddrMapTest, MisuseTable) {
  void* va = reserve(8 * kMiB);
  char* base = static_cast<char*>(va);
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  aclrtDrvMemHandle small = make_handle(k2M);
  aclrtDrvMemHandle stale = make_handle();
  ASSERT_EQ(aclrtFreePhysical(stale), kOk);
  aclrtDrvMemHandle dev1 = make_handle(k2M, 1);
  aclrtDrvMemHandle occupant = make_handle(k2M);
  ASSERT_EQ(aclrtMapMem(base + 6 * kMiB, k2M, 0, occupant, 0), kOk);  // binds the reservation to device 0
  void* other_res = reserve(4 * kMiB);
  void* dev_ptr = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev_ptr, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  static char host_buffer[8 * 1024 * 1024];
  struct Case {
    std::string name;
    void* va;
    size_t size, offset;
    aclrtDrvMemHandle h;
    uint64_t flags;
    aclError expected;
  };
  const Case cases[] = {
      {"virPtr NULL with offset", nullptr, k2M, k2M, h, 0, kParam},
      {"handle NULL with offset", base, k2M, k2M, nullptr, 0, kParam},
      {"size 0 with offset", base, 0, k2M, h, 0, kParam},
      {"flags 1 with offset", base, k2M, k2M, h, 1, kParam},
      {"offset 2 MiB on a bad VA", base + 1, k2M, k2M, h, 0, kRtParam},
      {"stale handle on a bad VA", base + 1, k2M, 0, stale, 0, kRtParam},
      {"forged handle", base, k2M, 0, reinterpret_cast<aclrtDrvMemHandle>(uintptr_t{0x77}), 0, kRtParam},
      {"VA past the reservation", base + 8 * kMiB + 64 * kMiB, k2M, 0, h, 0, kDrv},
      {"VA of plain host memory", host_buffer, k2M, 0, h, 0, kDrv},
      {"VA of an aclrtMalloc block", dev_ptr, k2M, 0, h, 0, kDrv},
      {"VA misaligned by 4 KiB", base + 4096, k2M, 0, h, 0, kDrv},
      {"size misaligned (2 MiB + 4 KiB)", base, k2M + 4096, 0, h, 0, kDrv},
      {"size 4 KiB", base, 4096, 0, h, 0, kDrv},
      {"runs past the end", static_cast<char*>(other_res) + k2M, 4 * kMiB, 0, h, 0, kDrv},
      {"overlaps a mapping (same start)", base + 6 * kMiB, k2M, 0, h, 0, kDrv},
      {"overlaps a mapping (ends inside)", base + 4 * kMiB, 4 * kMiB, 0, h, 0, kDrv},
      {"other device's handle into a device-0 reservation", base, k2M, 0, dev1, 0, kDrv},
      {"size larger than the handle", base, 4 * kMiB, 0, small, 0, kNoMemory},
      {"size larger than the handle (other reservation)", other_res, 4 * kMiB, 0, small, 0, kNoMemory},
  };
  for (bool no_access : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + (no_access ? " (MapNoAccess)" : " (MapMem)"));
      aclError rc = no_access ? aclrtMemMapNoAccess(c.va, c.size, c.offset, c.h, c.flags)
                              : aclrtMapMem(c.va, c.size, c.offset, c.h, c.flags);
      EXPECT_EQ(rc, c.expected);
      if (rc == kOk) aclrtUnmapMem(c.va);
    }
  }
  // Nothing was mapped by the failures: the reservation's free parts still take mappings, and
  // each handle is released by exactly one free.
  EXPECT_EQ(aclrtMapMem(base, 4 * kMiB, 0, h, 0), kOk);
  EXPECT_EQ(aclrtUnmapMem(base), kOk);
  EXPECT_EQ(aclrtUnmapMem(base + 6 * kMiB), kOk);
  for (aclrtDrvMemHandle x : {h, small, dev1, occupant}) {
    EXPECT_EQ(aclrtFreePhysical(x), kOk);
    EXPECT_EQ(aclrtFreePhysical(x), kRtParam);
  }
  EXPECT_EQ(aclrtFree(dev_ptr), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(other_res), kOk);
}

// §3: the reservation's device is fixed by its first map; once it is empty again it is still
// device 0's (the rule is about the reservation), and another reservation takes device 1.
TEST_F(VaddrMapTest, AnotherDevicesHandleNeedsItsOwnReservation) {
  void* va0 = reserve(4 * kMiB);
  void* va1 = reserve(4 * kMiB);
  aclrtDrvMemHandle h0 = make_handle(k2M, 0);
  aclrtDrvMemHandle h1 = make_handle(k2M, 1);
  ASSERT_EQ(aclrtMapMem(va0, k2M, 0, h0, 0), kOk);
  EXPECT_EQ(aclrtMapMem(static_cast<char*>(va0) + k2M, k2M, 0, h1, 0), kDrv);
  EXPECT_EQ(aclrtMapMem(va1, k2M, 0, h1, 0), kOk);
  EXPECT_EQ(aclrtMapMem(static_cast<char*>(va1) + k2M, k2M, 0, h0, 0), kDrv);
  EXPECT_EQ(aclrtUnmapMem(va0), kOk);
  EXPECT_EQ(aclrtUnmapMem(va1), kOk);
  EXPECT_EQ(aclrtFreePhysical(h0), kOk);
  EXPECT_EQ(aclrtFreePhysical(h1), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va0), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va1), kOk);
}

// §3: a size smaller than the handle maps its first pages.
TEST_F(VaddrMapTest, SizeSmallerThanTheHandleMapsItsFirstPages) {
  aclrtDrvMemHandle h = make_handle(6 * kMiB);
  void* whole = reserve(6 * kMiB);
  void* part = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(whole, 6 * kMiB, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMapMem(part, k2M, 0, h, 0), kOk);
  const std::string in = pattern(6 * kMiB, 7);
  ASSERT_EQ(put(whole, in), kOk);
  EXPECT_TRUE(get(part, k2M) == in.substr(0, k2M));
  aclError rc = kOk;
  get(static_cast<char*>(part) + k2M - 16, 32, &rc);  // past the partial mapping
  EXPECT_EQ(rc, kDrv);
  EXPECT_EQ(aclrtUnmapMem(part), kOk);
  EXPECT_EQ(aclrtUnmapMem(whole), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(whole), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(part), kOk);
}

// §3, emulation.md §4: one handle mapped at several VAs shares its bytes.
TEST_F(VaddrMapTest, OneHandleAtSeveralAddressesSharesBytes) {
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  void* a = reserve(4 * kMiB);
  void* b = reserve(16 * kMiB);
  char* b_inner = static_cast<char*>(b) + 8 * kMiB;
  ASSERT_EQ(aclrtMapMem(a, 4 * kMiB, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMapMem(b_inner, 4 * kMiB, 0, h, 0), kOk);
  const std::string one = pattern(4 * kMiB, 1);
  ASSERT_EQ(put(a, one), kOk);
  EXPECT_TRUE(get(b_inner, one.size()) == one);
  const std::string two = pattern(kMiB, 2);
  ASSERT_EQ(put(b_inner + 3 * kMiB, two), kOk);
  EXPECT_TRUE(get(static_cast<char*>(a) + 3 * kMiB, two.size()) == two);
  EXPECT_TRUE(get(a, 3 * kMiB) == one.substr(0, 3 * kMiB));
  // A device-to-device copy between the two views of the same memory.
  ASSERT_EQ(aclrtMemcpy(b_inner, kMiB, static_cast<char*>(a) + 3 * kMiB, kMiB, ACL_MEMCPY_DEVICE_TO_DEVICE), kOk);
  EXPECT_TRUE(get(a, kMiB) == two);
  EXPECT_EQ(aclrtUnmapMem(a), kOk);
  EXPECT_TRUE(get(b_inner + kMiB, kMiB) == one.substr(kMiB, kMiB));  // other view still alive
  EXPECT_EQ(aclrtUnmapMem(b_inner), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(a), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(b), kOk);
}

// A7: several handles back to back inside one reservation (including at a 1 GiB aligned inner
// offset, as Famem does); one memcpy spans all of them, and each handle holds its own slice.
TEST_F(VaddrMapTest, HandlesBackToBackAndOneCopySpanningThem) {
  constexpr int kCount = 5;
  void* va = reserve(2 * kGiB);
  char* start = static_cast<char*>(va) + kGiB - 2 * k2M;  // straddles the 1 GiB boundary
  std::vector<aclrtDrvMemHandle> hs;
  for (int i = 0; i < kCount; ++i) {
    hs.push_back(make_handle(k2M));
    ASSERT_EQ(aclrtMapMem(start + i * k2M, k2M, 0, hs.back(), 0), kOk);
  }
  const std::string in = pattern(kCount * k2M, 33);
  // Unaligned start and end: the copy begins and ends inside the first and last handle.
  ASSERT_EQ(put(start + 100, in.substr(100, in.size() - 200)), kOk);
  ASSERT_EQ(put(start, in.substr(0, 100)), kOk);
  ASSERT_EQ(put(start + in.size() - 100, in.substr(in.size() - 100)), kOk);
  EXPECT_TRUE(get(start, in.size()) == in);
  void* probe = reserve(k2M);
  for (int i = 0; i < kCount; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(aclrtMapMem(probe, k2M, 0, hs[i], 0), kOk);
    EXPECT_TRUE(get(probe, k2M) == in.substr(i * k2M, k2M));
    EXPECT_EQ(aclrtUnmapMem(probe), kOk);
  }
  // A copy that runs into the unmapped page after the last handle fails (507899).
  aclError rc = kOk;
  get(start + kCount * k2M - 8, 16, &rc);
  EXPECT_EQ(rc, kDrv);
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(aclrtUnmapMem(start + i * k2M), kOk);  // each mapping by its own start (A7)
    EXPECT_EQ(aclrtFreePhysical(hs[i]), kOk);
  }
  EXPECT_EQ(aclrtReleaseMemAddress(probe), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// A10 and emulation.md §2: fresh physical memory reads as zeros; a new handle mapped where an old
// one was never shows the old bytes.
TEST_F(VaddrMapTest, NewHandleAtAnOldAddressReadsZeros) {
  void* va = reserve(8 * kMiB);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    aclrtDrvMemHandle h = make_handle(8 * kMiB);
    ASSERT_EQ(aclrtMapMem(va, 8 * kMiB, 0, h, 0), kOk);
    EXPECT_TRUE(all_bytes(get(va, 8 * kMiB), '\0'));
    ASSERT_EQ(aclrtMemset(va, 8 * kMiB, 0xcd, 8 * kMiB), kOk);
    ASSERT_EQ(put(va, pattern(kMiB, round)), kOk);
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
  // Sleep mode with "free while mapped" ordering (free first, unmap later) too.
  aclrtDrvMemHandle h = make_handle(8 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 8 * kMiB, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMemset(va, 8 * kMiB, 0x77, 8 * kMiB), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  aclrtDrvMemHandle fresh = make_handle(8 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 8 * kMiB, 0, fresh, 0), kOk);
  EXPECT_TRUE(all_bytes(get(va, 8 * kMiB), '\0'));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(fresh), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// Decisions table: MapNoAccess works; device 0 may not touch the memory (507899) until
// aclrtMemSetAccess grants it READWRITE.
TEST_F(VaddrMapTest, MapNoAccessNeedsSetAccessBeforeUse) {
  void* va = reserve(4 * kMiB);
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  ASSERT_EQ(aclrtMemMapNoAccess(va, 4 * kMiB, 0, h, 0), kOk);
  const std::string in = pattern(4 * kMiB, 8);
  EXPECT_EQ(put(va, in), kDrv);
  aclError rc = kOk;
  get(va, 4096, &rc);
  EXPECT_EQ(rc, kDrv);
  EXPECT_EQ(aclrtMemset(va, 4 * kMiB, 1, 4 * kMiB), kDrv);
  aclrtMemAccessDesc d = desc(kRW, dev(0));
  ASSERT_EQ(aclrtMemSetAccess(va, 4 * kMiB, &d, 1), kOk);
  EXPECT_EQ(put(va, in), kOk);
  EXPECT_TRUE(get(va, in.size()) == in);
  // The same physical memory mapped normally elsewhere was accessible all along.
  void* other = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(other, 4 * kMiB, 0, h, 0), kOk);
  EXPECT_TRUE(get(other, in.size()) == in);
  EXPECT_EQ(aclrtUnmapMem(other), kOk);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(other), kOk);
}

// Decisions table (quirk): the vendor driver has no halMemMapNoAccess → 207000 after the ACL checks.
TEST_F(VaddrMapTest, MapNoAccessIsUnsupportedInVendorQuirkMode) {
  ScopedEnvRuntime env("ACLVMM_QUIRKS", "vendor");
  ASSERT_TRUE(env.ok());
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  EXPECT_EQ(aclrtMemMapNoAccess(va, k2M, 0, h, 0), kNotSupported);
  EXPECT_EQ(aclrtMemMapNoAccess(nullptr, k2M, 0, h, 0), kParam);
  EXPECT_EQ(aclrtMemMapNoAccess(va, k2M, 0, h, 1), kParam);
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);  // the range was left untouched
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

using VaddrUnmapTest = AclTest;

// §3: unmap looks the mapping up by its exact start VA; anything else → 507899, NULL → 100000.
TEST_F(VaddrUnmapTest, MisuseTable) {
  void* va = reserve(8 * kMiB);
  char* base = static_cast<char*>(va);
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(base + k2M, 4 * kMiB, 0, h, 0), kOk);
  void* dev_ptr = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev_ptr, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  int local = 0;
  struct Case {
    const char* name;
    void* va;
    aclError expected;
  } cases[] = {
      {"NULL", nullptr, kParam},
      {"interior VA (2 MiB in)", base + 2 * k2M, kDrv},
      {"interior VA (+1)", base + k2M + 1, kDrv},
      {"reserved, never mapped", base, kDrv},
      {"reservation tail, never mapped", base + 6 * kMiB, kDrv},
      {"random stack pointer", &local, kDrv},
      {"aclrtMalloc pointer", dev_ptr, kDrv},
      {"unreserved device-window address", base + 8 * kMiB + kGiB, kDrv},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtUnmapMem(c.va), c.expected);
  }
  const std::string in = pattern(4 * kMiB, 12);
  EXPECT_EQ(put(base + k2M, in), kOk);  // the mapping survived
  EXPECT_TRUE(get(base + k2M, in.size()) == in);
  EXPECT_EQ(aclrtUnmapMem(base + k2M), kOk);
  EXPECT_EQ(aclrtUnmapMem(base + k2M), kDrv);  // double unmap
  aclError rc = kOk;
  get(base + k2M, 16, &rc);  // the range is really gone
  EXPECT_EQ(rc, kDrv);
  EXPECT_EQ(aclrtFree(dev_ptr), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §3: after an unmap the same range can be mapped again (with the same or another handle).
TEST_F(VaddrUnmapTest, RangeIsReusableAfterUnmap) {
  void* va = reserve(4 * kMiB);
  aclrtDrvMemHandle a = make_handle(4 * kMiB);
  aclrtDrvMemHandle b = make_handle(k2M);
  const std::string in = pattern(4 * kMiB, 2);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, a, 0), kOk);
  ASSERT_EQ(put(va, in), kOk);
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, b, 0), kOk);
  ASSERT_EQ(aclrtMapMem(static_cast<char*>(va) + k2M, k2M, 0, a, 0), kOk);  // a's first 2 MiB
  EXPECT_TRUE(all_bytes(get(va, k2M), '\0'));
  EXPECT_TRUE(get(static_cast<char*>(va) + k2M, k2M) == in.substr(0, k2M));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtUnmapMem(static_cast<char*>(va) + k2M), kOk);
  EXPECT_EQ(aclrtFreePhysical(a), kOk);
  EXPECT_EQ(aclrtFreePhysical(b), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
