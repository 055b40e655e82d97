// Reservations, mappings, reference counts and access (hal.md §3.2, §3.3, §3.4, §3.7, §7.1).
#include <gtest/gtest.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

// A device handle of `size` bytes on `device`, created for one case.
drv_mem_handle_t* make_handle(uint32_t device, size_t size) {
  const drv_mem_prop prop = device_prop(device);
  drv_mem_handle_t* h = nullptr;
  return halMemCreate(&h, size, &prop, 0) == DRV_ERROR_NONE ? h : nullptr;
}

void* reserve(size_t size, uint64_t fixed = 0, uint64_t flags = 0) {
  void* va = nullptr;
  return halMemAddressReserve(&va, size, 0, reinterpret_cast<void*>(fixed), flags) ==
                 DRV_ERROR_NONE
             ? va
             : nullptr;
}

struct ReserveCase {
  const char* what;
  size_t size;
  size_t alignment;
  uint64_t fixed_offset;  // from a free, 1 GiB-aligned address of the general part; ~0: none
  uint64_t flags;
  drvError_t expect;
};

constexpr uint64_t kNone = ~uint64_t{0};

TEST(FakeHalVmm, ReserveRules) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  // A free area for the fixed-address cases: reserved and given back.
  void* probe = reserve(8 * kGiB);
  ASSERT_NE(probe, nullptr);
  const uint64_t free_base = reinterpret_cast<uint64_t>(probe);
  ASSERT_EQ(free_base % kGiB, 0u);
  ASSERT_EQ(halMemAddressFree(probe), DRV_ERROR_NONE);
  const ReserveCase cases[] = {
      {"size 0", 0, 0, kNone, 0, DRV_ERROR_INVALID_VALUE},
      {"alignment", 2 * kMiB, 4096, kNone, 0, DRV_ERROR_INVALID_VALUE},
      {"fixed not 2 MiB aligned", 2 * kMiB, 0, kMiB, 0, DRV_ERROR_INVALID_VALUE},
      {"fixed 4 MiB at 2 MiB", 4 * kMiB, 0, 2 * kMiB, 0, DRV_ERROR_INVALID_VALUE},
      {"fixed 3 MiB at 2 MiB (next power 4 MiB)", 3 * kMiB, 0, 2 * kMiB, 0,
       DRV_ERROR_INVALID_VALUE},
      {"fixed 600 MiB at 512 MiB", 600 * kMiB, 0, 512 * kMiB, 0, DRV_ERROR_INVALID_VALUE},
      {"page type 3", 2 * kMiB, 0, kNone, 3, DRV_ERROR_INVALID_VALUE},
      {"no-UC without fixed address", kGiB, 0, kNone, MEM_RSV_TYPE_REMOTE_MAP,
       DRV_ERROR_NOT_SUPPORT},
      {"device share without fixed address", 2 * kMiB, 0, kNone, MEM_RSV_TYPE_DEVICE_SHARE,
       DRV_ERROR_NOT_SUPPORT},
      {"larger than the device window", l.device.size + 1, 0, kNone, 0,
       DRV_ERROR_OUT_OF_MEMORY},
      {"fixed 4 MiB at 4 MiB", 4 * kMiB, 0, 4 * kMiB, 0, DRV_ERROR_NONE},
      {"fixed 3 MiB at 4 MiB", 3 * kMiB, 0, 4 * kMiB, 1, DRV_ERROR_NONE},
      {"fixed 1 GiB at 1 GiB", kGiB, 0, kGiB, 0, DRV_ERROR_NONE},
      {"fixed 512 bytes at 2 MiB", 512, 0, 2 * kMiB, 0, DRV_ERROR_NONE},
  };
  for (const ReserveCase& c : cases) {
    void* va = nullptr;
    const uint64_t fixed = c.fixed_offset == kNone ? 0 : free_base + c.fixed_offset;
    EXPECT_EQ(halMemAddressReserve(&va, c.size, c.alignment, reinterpret_cast<void*>(fixed),
                                   c.flags),
              c.expect)
        << c.what;
    if (c.expect != DRV_ERROR_NONE) continue;
    EXPECT_EQ(reinterpret_cast<uint64_t>(va), fixed) << c.what;  // honoured exactly
    EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE) << c.what;
  }
  EXPECT_EQ(halMemAddressReserve(nullptr, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalVmm, ReservationsAreAlignedAndPlacedInTheGeneralPart) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  struct {
    size_t size, align, span;
  } const sizes[] = {{512, 2 * kMiB, 2 * kMiB},
                     {3 * kMiB, 4 * kMiB, 4 * kMiB},
                     {100 * kMiB, 128 * kMiB, 100 * kMiB},
                     {600 * kMiB, kGiB, kGiB}};
  for (const auto& s : sizes) {
    void* va = reserve(s.size);
    ASSERT_NE(va, nullptr) << s.size;
    const auto base = reinterpret_cast<uint64_t>(va);
    EXPECT_EQ(base % s.align, 0u) << s.size;
    EXPECT_TRUE(l.device_general.contains(base, s.span)) << s.size;
    // A fixed reservation over it is refused while it lives, honoured once it is given back.
    EXPECT_EQ(halMemAddressReserve(&va, s.size, 0, reinterpret_cast<void*>(base), 0),
              DRV_ERROR_BUSY);
    EXPECT_EQ(halMemAddressFree(reinterpret_cast<void*>(base)), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressReserve(&va, s.size, 0, reinterpret_cast<void*>(base), 0),
              DRV_ERROR_NONE);
    EXPECT_EQ(reinterpret_cast<uint64_t>(va), base);
    // The span ends where the size says (2 MiB granules; whole GiB above 512 MiB).
    void* after = reserve(2 * kMiB, base + s.span);
    EXPECT_NE(after, nullptr) << s.size;
    EXPECT_EQ(halMemAddressFree(after), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  }
}

TEST(FakeHalVmm, NoUcReservations) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer keeps the dynamic window's addresses for itself";
#endif
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const uint64_t at = 0x180000000000ull + 37 * kGiB;
  void* va = nullptr;
  EXPECT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, reinterpret_cast<void*>(at),
                                 MEM_RSV_TYPE_REMOTE_MAP),
            DRV_ERROR_INVALID_VALUE);  // not a whole GiB
  EXPECT_EQ(halMemAddressReserve(&va, kGiB, 0, reinterpret_cast<void*>(0x100000000000ull),
                                 MEM_RSV_TYPE_REMOTE_MAP),
            DRV_ERROR_INVALID_VALUE);  // below the dynamic window
  ASSERT_EQ(halMemAddressReserve(&va, kGiB, 0, reinterpret_cast<void*>(at),
                                 MEM_RSV_TYPE_REMOTE_MAP),
            DRV_ERROR_NONE);
  EXPECT_EQ(reinterpret_cast<uint64_t>(va), at);
  void* again = nullptr;
  EXPECT_EQ(halMemAddressReserve(&again, kGiB, 0, reinterpret_cast<void*>(at),
                                 MEM_RSV_TYPE_REMOTE_MAP),
            DRV_ERROR_BUSY);
  // Device memory mapped there is device memory to copies and queries.
  drv_mem_handle_t* h = make_handle(0, 2 * kMiB);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  const std::vector<uint8_t> bytes = pattern(2 * kMiB, 3);
  std::vector<uint8_t> back(2 * kMiB);
  EXPECT_EQ(drvMemcpy(ptr(va), 2 * kMiB, ptr(bytes.data()), 2 * kMiB), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemcpy(ptr(back.data()), 2 * kMiB, ptr(va), 2 * kMiB), DRV_ERROR_NONE);
  EXPECT_EQ(back, bytes);
  DVattribute attr{};
  EXPECT_EQ(drvMemGetAttribute(ptr(va), &attr), DRV_ERROR_NONE);
  EXPECT_EQ(attr.memType, static_cast<UINT32>(DV_MEM_LOCK_DEV));
  EXPECT_EQ(drvMemGetAttribute(ptr(va) + 4 * kMiB, &attr), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalVmm, AddressFreeRefusals) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  void* va = reserve(4 * kMiB);
  ASSERT_NE(va, nullptr);
  EXPECT_EQ(halMemAddressFree(static_cast<char*>(va) + 2 * kMiB), DRV_ERROR_INVALID_VALUE);
  void* block = nullptr;
  ASSERT_EQ(halMemAlloc(&block, 2 * kMiB, 0x2100000000924400ull), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(block), DRV_ERROR_INVALID_VALUE);  // not a reservation
  EXPECT_EQ(halMemFree(block), DRV_ERROR_NONE);
  drv_mem_handle_t* h = make_handle(0, 2 * kMiB);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_BUSY);  // still mapped
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemAddressFree(reinterpret_cast<void*>(0x190000000000ull)),
            DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalVmm, MapChecks) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  drv_mem_handle_t* h = make_handle(0, 4 * kMiB);
  drv_mem_handle_t* other = make_handle(1, 2 * kMiB);
  const drv_mem_prop hp = host_prop();
  drv_mem_handle_t* host = nullptr;
  ASSERT_EQ(halMemCreate(&host, 2 * kMiB, &hp, 0), DRV_ERROR_NONE);
  ASSERT_TRUE(h != nullptr && other != nullptr);
  auto* va = static_cast<char*>(reserve(16 * kMiB));
  ASSERT_NE(va, nullptr);
  uint8_t plain[64];
  EXPECT_EQ(halMemMap(nullptr, 2 * kMiB, 0, h, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemMap(va, 0, 0, h, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 2 * kMiB, h, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemMap(plain, 2 * kMiB, 0, h, 0), DRV_ERROR_PARA_ERROR);  // no reservation
  EXPECT_EQ(halMemMap(va + kMiB, 2 * kMiB, 0, h, 0), DRV_ERROR_PARA_ERROR);  // misaligned
  EXPECT_EQ(halMemMap(va, 3 * kMiB, 0, h, 0), DRV_ERROR_PARA_ERROR);  // not whole granules
  EXPECT_EQ(halMemMap(va + 14 * kMiB, 4 * kMiB, 0, h, 0), DRV_ERROR_PARA_ERROR);  // past the end
  EXPECT_EQ(halMemMap(va, 6 * kMiB, 0, h, 0), DRV_ERROR_OUT_OF_MEMORY);  // larger than h
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);  // smaller than h: allowed
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_IOCRL_FAIL);  // EADDRINUSE
  EXPECT_EQ(halMemMap(va + 2 * kMiB, 2 * kMiB, 0, other, 0), DRV_ERROR_PARA_ERROR);  // device 0's
  EXPECT_EQ(halMemMap(va + 2 * kMiB, 2 * kMiB, 0, host, 0), DRV_ERROR_PARA_ERROR);
  ASSERT_EQ(halMemMap(va + 4 * kMiB, 4 * kMiB, 0, h, 0), DRV_ERROR_NONE);  // mapped twice
  EXPECT_EQ(halMemUnmap(va + kMiB), DRV_ERROR_PARA_ERROR);  // interior
  EXPECT_EQ(halMemUnmap(va + 2 * kMiB), DRV_ERROR_PARA_ERROR);  // never mapped
  EXPECT_EQ(halMemUnmap(nullptr), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemUnmap(va + 4 * kMiB), DRV_ERROR_NONE);
  for (drv_mem_handle_t* x : {h, other, host}) EXPECT_EQ(halMemRelease(x), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalVmm, ReferenceCounts) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  drv_mem_prop got{};
  // Free while mapped: the release succeeds, the unmap frees.
  drv_mem_handle_t* h = make_handle(0, 2 * kMiB);
  void* va = reserve(2 * kMiB);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);  // ref 2, map_ref 1
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);                  // ref 1
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_INVALID_VALUE);          // released more than retained
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);                    // ref 0: freed
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_INVALID_VALUE);
  // Retain: the same handle with one more reference, balanced by a release.
  h = make_handle(0, 2 * kMiB);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);  // ref 2, map_ref 1
  drv_mem_handle_t* r = nullptr;
  EXPECT_EQ(halMemRetainAllocationHandle(&r, va), DRV_ERROR_NONE);  // ref 3
  EXPECT_EQ(r, h);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);  // ref 2
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);  // ref 1
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemRetainAllocationHandle(&r, va), DRV_ERROR_NONE);  // ref 2
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);  // ref 1, map_ref 0: the retain keeps it
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);  // freed
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_INVALID_VALUE);
  // Two mappings of one handle: each holds a reference.
  h = make_handle(0, 2 * kMiB);
  void* va2 = reserve(2 * kMiB);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemMap(va2, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);  // ref 3, map_ref 2
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);                    // ref 2
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_INVALID_VALUE);            // ref 2 <= map_ref 2
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va2), DRV_ERROR_NONE);
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va2), DRV_ERROR_NONE);
}

TEST(FakeHalVmm, RetainLooksUpTheExactStart) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  drv_mem_handle_t* h = make_handle(0, 2 * kMiB);
  auto* va = static_cast<char*>(reserve(4 * kMiB));
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  drv_mem_handle_t* r = nullptr;
  uint8_t plain[16];
  EXPECT_EQ(halMemRetainAllocationHandle(&r, va + 4096), DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(halMemRetainAllocationHandle(&r, va + 2 * kMiB), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemRetainAllocationHandle(&r, plain), DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(halMemRetainAllocationHandle(
                &r, reinterpret_cast<void*>(l.device.base + l.device.size - 2 * kMiB)),
            DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(halMemRetainAllocationHandle(nullptr, va), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemRetainAllocationHandle(&r, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

drv_mem_access_desc rw(uint32_t id, drv_mem_side side) {
  return drv_mem_access_desc{MEM_ACCESS_TYPE_READWRITE, {id, side}, {0, 0}};
}

uint64_t access_of(void* va, uint32_t id, drv_mem_side side) {
  drv_mem_location loc{id, side};
  uint64_t flags = 99;
  return halMemGetAccess(va, &loc, &flags) == DRV_ERROR_NONE ? flags : 99;
}

TEST(FakeHalVmm, SetAndGetAccessRules) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  drv_mem_handle_t* h = make_handle(0, 4 * kMiB);
  auto* va = static_cast<char*>(reserve(4 * kMiB));
  ASSERT_EQ(halMemMap(va, 4 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  EXPECT_EQ(access_of(va, 0, MEM_DEV_SIDE), 3u);  // the owner
  EXPECT_EQ(access_of(va + 4096, 1, MEM_DEV_SIDE), 0u);
  EXPECT_EQ(access_of(va, 0, MEM_HOST_SIDE), 0u);
  struct {
    const char* what;
    drv_mem_access_desc desc;
    drvError_t expect;
  } const refused[] = {
      {"NONE", {MEM_ACCESS_TYPE_NONE, {1, MEM_DEV_SIDE}, {}}, DRV_ERROR_NOT_SUPPORT},
      {"READ", {MEM_ACCESS_TYPE_READ, {1, MEM_DEV_SIDE}, {}}, DRV_ERROR_NOT_SUPPORT},
      {"type 2", {static_cast<drv_mem_access_type>(2), {1, MEM_DEV_SIDE}, {}},
       DRV_ERROR_INVALID_VALUE},
      {"HOST id 1", rw(1, MEM_HOST_SIDE), DRV_ERROR_INVALID_VALUE},
      {"DEVICE 64", rw(64, MEM_DEV_SIDE), DRV_ERROR_INVALID_VALUE},
      {"HOST_NUMA", rw(0, MEM_HOST_NUMA_SIDE), DRV_ERROR_INVALID_VALUE},
  };
  for (const auto& c : refused) {
    drv_mem_access_desc d = c.desc;
    EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &d, 1), c.expect) << c.what;
  }
  drv_mem_access_desc d1 = rw(1, MEM_DEV_SIDE);
  EXPECT_EQ(halMemSetAccess(nullptr, 4 * kMiB, &d1, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, nullptr, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &d1, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetAccess(va + 2 * kMiB, 2 * kMiB, &d1, 1), DRV_ERROR_PARA_ERROR);  // interior
  EXPECT_EQ(halMemSetAccess(va, 2 * kMiB, &d1, 1), DRV_ERROR_PARA_ERROR);  // not the mapping
  EXPECT_EQ(halMemSetAccess(va + 4 * kMiB, 4 * kMiB, &d1, 1), DRV_ERROR_PARA_ERROR);  // outside
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &d1, 1), DRV_ERROR_NONE);
  EXPECT_EQ(access_of(va + 3 * kMiB, 1, MEM_DEV_SIDE), 3u);
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &d1, 1), DRV_ERROR_NONE);  // the same again: skipped
  EXPECT_EQ(halMemSetAccess(va, 2 * kMiB, &d1, 1), DRV_ERROR_BUSY);  // set, another size
  // The owner: nothing to change, whatever the size; it never becomes "set".
  drv_mem_access_desc d0 = rw(0, MEM_DEV_SIDE);
  EXPECT_EQ(halMemSetAccess(va, 2 * kMiB, &d0, 1), DRV_ERROR_NONE);
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &d0, 1), DRV_ERROR_NONE);
  // Descriptor by descriptor, no rollback: device 2 is granted before device 9 (none) fails.
  drv_mem_access_desc two[] = {rw(2, MEM_DEV_SIDE), rw(9, MEM_DEV_SIDE)};
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, two, 2), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(access_of(va, 2, MEM_DEV_SIDE), 3u);
  // HOST on device memory: the CPU then reads it.
  const std::vector<uint8_t> bytes = pattern(4 * kMiB, 5);
  ASSERT_EQ(drvMemcpy(ptr(va), 4 * kMiB, ptr(bytes.data()), 4 * kMiB), DRV_ERROR_NONE);
  drv_mem_access_desc dh = rw(0, MEM_HOST_SIDE);
  EXPECT_EQ(halMemSetAccess(va, 4 * kMiB, &dh, 1), DRV_ERROR_NONE);
  EXPECT_EQ(access_of(va, 0, MEM_HOST_SIDE), 3u);
  EXPECT_EQ(std::memcmp(va, bytes.data(), bytes.size()), 0);
  drv_mem_location bad{0, static_cast<drv_mem_side>(3)};
  uint64_t flags = 0;
  EXPECT_EQ(halMemGetAccess(va, &bad, &flags), DRV_ERROR_INVALID_VALUE);
  drv_mem_location loc{0, MEM_DEV_SIDE};
  EXPECT_EQ(halMemGetAccess(va, &loc, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetAccess(va + 4 * kMiB, &loc, &flags), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalVmm, AccessToHostMemory) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = host_prop();
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  auto* va = static_cast<char*>(reserve(2 * kMiB));
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  EXPECT_EQ(access_of(va, 0, MEM_HOST_SIDE), 3u);  // §7.1 #3
  EXPECT_EQ(access_of(va, 0, MEM_DEV_SIDE), 0u);
  drv_mem_access_desc dh = rw(0, MEM_HOST_SIDE);
  EXPECT_EQ(halMemSetAccess(va, 2 * kMiB, &dh, 1), DRV_ERROR_NOT_SUPPORT);
  drv_mem_access_desc d0 = rw(0, MEM_DEV_SIDE);
  EXPECT_EQ(halMemSetAccess(va, 2 * kMiB, &d0, 1), DRV_ERROR_NONE);
  EXPECT_EQ(access_of(va, 0, MEM_DEV_SIDE), 3u);
  std::memset(va, 0x5A, 2 * kMiB);  // the CPU reaches mapped host memory
  uint8_t byte = 0;
  EXPECT_EQ(drvMemcpy(ptr(&byte), 1, ptr(va) + 12345, 1), DRV_ERROR_NONE);
  EXPECT_EQ(byte, 0x5A);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalVmm, PeerMap) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  drv_mem_handle_t* h = make_handle(0, 2 * kMiB);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  uint8_t plain[16];
  EXPECT_EQ(drvMemPrefetchToDevice(ptr(va), 2 * kMiB, 1), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemPrefetchToDevice(ptr(va), 2 * kMiB, 66), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemPrefetchToDevice(ptr(plain), 16, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemPrefetchToDevice(ptr(va), 2 * kMiB, kDevices), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(drvMemPrefetchToDevice(ptr(va) + 2 * kMiB, 2 * kMiB, 1), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

}  // namespace
}  // namespace fakehal_test
