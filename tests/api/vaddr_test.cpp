// aclrtReserveMemAddress / aclrtReserveMemAddressNoUCMemory / aclrtReleaseMemAddress
// (behavior.md §2 and "Also required"; clients.md A2, A4, A5, A6, A7b).
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

constexpr size_t kTiB = size_t(1) << 40;
constexpr uintptr_t kNoUcStart = 0x180000000000ull;

void* as_ptr(uintptr_t v) { return reinterpret_cast<void*>(v); }

// A row of the aclrtReserveMemAddress / ...NoUCMemory misuse tables (virPtr is &out or NULL).
struct ReserveCase {
  const char* name;
  void** virPtr;
  size_t size, alignment;
  uintptr_t expect;
  uint64_t flags;
  aclError expected;
};

using VaddrReserveTest = AclTest;

// "Also required": PyTorch's feature probe (512 bytes, flags 1) succeeds and reserves 2 MiB.
TEST_F(VaddrReserveTest, PyTorchProbeReserves2MiB) {
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, 512, 0, nullptr, 1), kOk);
  ASSERT_NE(va, nullptr);
  EXPECT_EQ(u64(va) % k2M, 0u);
  aclrtDrvMemHandle h = make_handle();
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);  // the whole 2 MiB is usable
  const std::string in = pattern(k2M, 1);
  EXPECT_EQ(put(va, in), kOk);
  EXPECT_TRUE(get(va, in.size()) == in);
  EXPECT_EQ(aclrtMapMem(static_cast<char*>(va) + k2M, k2M, 0, h, 0), kDrv);  // but no more
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// "Also required", A7b: bases are 2 MiB aligned; reservations of 1 GiB or more 1 GiB aligned.
// Flags 0 and 1 both work (A4). Reservations never overlap.
TEST_F(VaddrReserveTest, BasesAreAligned) {
  struct Case {
    size_t size;
    uint64_t flags;
    size_t align;
  } cases[] = {{1, 0, k2M},           {k2M, 1, k2M},         {3 * kMiB, 0, k2M},
               {20 * kMiB, 1, k2M},   {kGiB, 0, kGiB},       {kGiB + k2M, 1, kGiB},
               {3 * kGiB, 0, kGiB},   {5 * kMiB, 1, k2M},    {kGiB - k2M, 0, k2M}};
  std::vector<std::pair<uintptr_t, size_t>> taken;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.size) + " flags " + std::to_string(c.flags));
    void* va = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va, c.size, 0, nullptr, c.flags), kOk);
    EXPECT_EQ(u64(va) % c.align, 0u);
    for (auto& [b, s] : taken) EXPECT_TRUE(u64(va) + c.size <= b || b + s <= u64(va)) << std::hex << u64(va);
    taken.emplace_back(u64(va), c.size);
  }
  for (auto& [b, s] : taken) EXPECT_EQ(aclrtReleaseMemAddress(as_ptr(b)), kOk);
}

// A5: very large reservations are cheap (no backing) and usable at their far end.
TEST_F(VaddrReserveTest, OneTebibyteReservationIsCheap) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total), kOk);
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, kTiB, 0, nullptr, 1), kOk);
  EXPECT_EQ(u64(va) % kGiB, 0u);
  size_t free_after = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total), kOk);
  EXPECT_EQ(free_after, free_before);
  aclrtDrvMemHandle h = make_handle();
  char* last = static_cast<char*>(va) + kTiB - k2M;
  ASSERT_EQ(aclrtMapMem(last, k2M, 0, h, 0), kOk);
  const std::string in = pattern(4096, 9);
  EXPECT_EQ(put(last + k2M - 4096, in), kOk);
  EXPECT_TRUE(get(last + k2M - 4096, 4096) == in);
  EXPECT_EQ(aclrtUnmapMem(last), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §2, A6 (shmem): reserve, release, re-reserve at the same address, then at prev_end for
// contiguous reservations.
TEST_F(VaddrReserveTest, ExpectPtrIsHonouredForContiguousReservations) {
  void* first = reserve(kGiB);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(aclrtReleaseMemAddress(first), kOk);
  std::vector<void*> pes;
  uintptr_t next = u64(first);
  for (int pe = 0; pe < 4; ++pe) {
    SCOPED_TRACE(pe);
    void* va = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va, kGiB, 0, as_ptr(next), 1), kOk);
    EXPECT_EQ(u64(va), next);
    pes.push_back(va);
    next += kGiB;
  }
  // The contiguous reservations are independent: map into each and read back through each.
  aclrtDrvMemHandle h = make_handle();
  for (size_t i = 0; i < pes.size(); ++i) ASSERT_EQ(aclrtMapMem(pes[i], k2M, 0, h, 0), kOk);
  const std::string in = pattern(k2M, 21);
  ASSERT_EQ(put(pes[0], in), kOk);
  EXPECT_TRUE(get(pes[3], k2M) == in);
  for (void* va : pes) EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  for (void* va : pes) EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  // Small reservations: the expectPtr must be aligned to the next power of two ≥ size.
  void* small = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&small, k2M, 0, as_ptr(u64(first) + 6 * kMiB), 0), kOk);
  EXPECT_EQ(u64(small), u64(first) + 6 * kMiB);
  void* four = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&four, 4 * kMiB, 0, as_ptr(u64(first) + 8 * kMiB), 0), kOk);
  EXPECT_EQ(u64(four), u64(first) + 8 * kMiB);
  EXPECT_EQ(aclrtReleaseMemAddress(small), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(four), kOk);
}

// §2 misuse: ACL layer 100000 (NULL, size 0, flags ∉ {0,1}) before the driver's alignment
// (107000), expectPtr alignment (107000) and occupied expectPtr (507899).
TEST_F(VaddrReserveTest, MisuseTable) {
  void* held = reserve(kGiB);  // 1 GiB aligned, occupied
  ASSERT_NE(held, nullptr);
  const uintptr_t base = u64(held);
  void* out = nullptr;
  const ReserveCase cases[] = {
      {"virPtr NULL", nullptr, k2M, 0, 0, 0, kParam},
      {"size 0 with alignment", &out, 0, 4096, 0, 0, kParam},
      {"flags 2 with alignment", &out, k2M, 4096, 0, 2, kParam},
      {"flags 3", &out, k2M, 0, 0, 3, kParam},
      {"alignment 2 MiB", &out, k2M, k2M, 0, 0, kRtParam},
      {"alignment 1", &out, k2M, 1, 0, 1, kRtParam},
      {"1 GiB at a 2 MiB aligned expectPtr", &out, kGiB, 0, base + kGiB + k2M, 0, kRtParam},
      {"600 MiB at a 512 MiB aligned expectPtr", &out, 600 * kMiB, 0, base + kGiB + 512 * kMiB, 0, kRtParam},
      {"4 MiB at a 2 MiB (not 4 MiB) aligned expectPtr", &out, 4 * kMiB, 0, base + kGiB + k2M, 0, kRtParam},
      {"2 MiB at a 4 KiB aligned expectPtr", &out, k2M, 0, base + kGiB + 4096, 0, kRtParam},
      {"occupied expectPtr (start)", &out, kGiB, 0, base, 0, kDrv},
      {"occupied expectPtr (inside)", &out, k2M, 0, base + 4 * kMiB, 1, kDrv},
  };
  for (const ReserveCase& c : cases) {
    SCOPED_TRACE(c.name);
    out = nullptr;
    EXPECT_EQ(aclrtReserveMemAddress(c.virPtr, c.size, c.alignment, as_ptr(c.expect), c.flags), c.expected);
    EXPECT_EQ(out, nullptr);
    if (out) aclrtReleaseMemAddress(out);
  }
  EXPECT_EQ(aclrtReleaseMemAddress(held), kOk);
}

// §0/§2: before any device was opened the driver has no SVM state → 107017.
TEST_F(VaddrReserveTest, BeforeAnySetDeviceIs107017) {
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  ASSERT_EQ(aclInit(nullptr), kOk);
  void* va = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kBadHandle);
  EXPECT_EQ(aclrtReserveMemAddress(&va, 0, 0, nullptr, 0), kParam);
  EXPECT_EQ(va, nullptr);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

using VaddrReleaseTest = AclTest;

// §2 misuse: NULL 100000; not the start of a live reservation 107000; still mapped 507899.
TEST_F(VaddrReleaseTest, MisuseTable) {
  void* live = reserve(8 * kMiB);
  void* released = reserve(k2M);
  ASSERT_EQ(aclrtReleaseMemAddress(released), kOk);
  void* dev_ptr = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev_ptr, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  void* host_ptr = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host_ptr, 4096), kOk);
  int local = 0;
  struct Case {
    const char* name;
    void* va;
    aclError expected;
  } cases[] = {
      {"NULL", nullptr, kParam},
      {"interior pointer", static_cast<char*>(live) + k2M, kRtParam},
      {"interior pointer +1", static_cast<char*>(live) + 1, kRtParam},
      {"aclrtMalloc pointer", dev_ptr, kRtParam},
      {"aclrtMallocHost pointer", host_ptr, kRtParam},
      {"stack pointer", &local, kRtParam},
      {"already released", released, kRtParam},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtReleaseMemAddress(c.va), c.expected);
  }
  // The aclrtMalloc memory and the live reservation are untouched by the failed calls.
  EXPECT_EQ(aclrtFree(dev_ptr), kOk);
  EXPECT_EQ(aclrtFreeHost(host_ptr), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(live), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(live), kRtParam);  // double release
}

// Decisions table / §2: release while mapped → 507899 and nothing changes.
TEST_F(VaddrReleaseTest, ReleaseWhileMappedFailsAndChangesNothing) {
  void* va = reserve(4 * kMiB);
  char* base = static_cast<char*>(va);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(base + k2M, k2M, 0, h, 0), kOk);
  const std::string in = pattern(k2M, 4);
  ASSERT_EQ(put(base + k2M, in), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kDrv);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kDrv);
  // The mapping still works, the reservation still exists and can take more mappings.
  EXPECT_TRUE(get(base + k2M, k2M) == in);
  aclrtDrvMemHandle h2 = make_handle();
  EXPECT_EQ(aclrtMapMem(base, k2M, 0, h2, 0), kOk);
  aclrtDrvMemHandle r = nullptr;
  EXPECT_EQ(aclrtMemRetainAllocationHandle(base + k2M, &r), kOk);
  EXPECT_EQ(r, h);
  EXPECT_EQ(aclrtFreePhysical(r), kOk);
  void* other = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&other, k2M, 0, va, 0), kDrv);  // still occupied
  EXPECT_EQ(aclrtUnmapMem(base), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kDrv);  // one mapping left
  EXPECT_EQ(aclrtUnmapMem(base + k2M), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFreePhysical(h2), kOk);
}

using VaddrNoUcReserveTest = AclTest;

// products.md: ReserveMemAddressNoUCMemory is A3 only; the default SoC (Ascend910B1, A2) → 207000.
TEST_F(VaddrNoUcReserveTest, UnsupportedOnA2) {
  void* va = nullptr;
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, as_ptr(0x4E0000000000ull), 0), kNotSupported);
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, nullptr, 0), kNotSupported);
  EXPECT_EQ(va, nullptr);
  // The ACL checks come first (§2: "same ACL checks").
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(nullptr, kGiB, 0, nullptr, 0), kParam);
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&va, 0, 0, nullptr, 0), kParam);
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, nullptr, 2), kParam);
}

// §2 on A3 (Ascend910_9391), A6 (Mooncake at 78 TB): fixed-address 1 GiB granular reservations
// above 0x180000000000 that map device memory and are released normally.
TEST_F(VaddrNoUcReserveTest, FixedAddressReservationOnA3) {
  ScopedEnvRuntime env("ACLVMM_SOC", "Ascend910_9391");
  ASSERT_TRUE(env.ok());
  const uintptr_t target = (78 * (uintptr_t{1} << 40)) / kGiB * kGiB;  // 78 TB
  ASSERT_EQ(target, 0x4E0000000000ull);
  void* out = nullptr;
  const ReserveCase cases[] = {
      {"virPtr NULL", nullptr, kGiB, 0, target, 0, kParam},
      {"size 0", &out, 0, 0, target, 0, kParam},
      {"flags 2", &out, kGiB, 0, target, 2, kParam},
      {"expectPtr NULL", &out, kGiB, 0, 0, 0, kNotSupported},
      {"expectPtr 2 MiB aligned", &out, kGiB, 0, target + k2M, 0, kRtParam},
      {"size 2 MiB", &out, k2M, 0, target, 0, kRtParam},
      {"size 1 GiB + 2 MiB", &out, kGiB + k2M, 0, target, 0, kRtParam},
      {"alignment 1 GiB", &out, kGiB, kGiB, target, 0, kRtParam},
  };
  for (const ReserveCase& c : cases) {
    SCOPED_TRACE(c.name);
    out = nullptr;
    EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(c.virPtr, c.size, c.alignment, as_ptr(c.expect), c.flags),
              c.expected);
    EXPECT_EQ(out, nullptr);
  }

  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, as_ptr(target), 1), kOk);
  EXPECT_EQ(u64(va), target);
  EXPECT_GE(u64(va), kNoUcStart);
  void* again = nullptr;
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&again, kGiB, 0, as_ptr(target), 0), kDrv);  // occupied
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  char* inner = static_cast<char*>(va) + 512 * kMiB;
  ASSERT_EQ(aclrtMapMem(inner, 4 * kMiB, 0, h, 0), kOk);
  const std::string in = pattern(4 * kMiB, 78);
  ASSERT_EQ(put(inner, in), kOk);
  EXPECT_TRUE(get(inner, in.size()) == in);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kDrv);  // still mapped
  EXPECT_EQ(aclrtUnmapMem(inner), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kRtParam);  // dynamic range: unknown VA → 107000
  // Released: the same address can be reserved again, and a 2 GiB range right after it too.
  ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, as_ptr(target), 0), kOk);
  EXPECT_EQ(u64(va), target);
  void* next = nullptr;
  ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&next, 2 * kGiB, 0, as_ptr(target + kGiB), 0), kOk);
  EXPECT_EQ(u64(next), target + kGiB);
  EXPECT_EQ(aclrtReleaseMemAddress(next), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
