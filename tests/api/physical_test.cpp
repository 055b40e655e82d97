// aclrtMallocPhysical / aclrtFreePhysical (behavior.md §0, §1 and the decisions table; clients.md A2, A3).
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

size_t hbm_total() { return mem_info(ACL_HBM_MEM).total; }

// Calls aclrtMallocPhysical and frees the handle again if the call (unexpectedly) succeeded.
aclError try_malloc(const aclrtPhysicalMemProp& p, size_t size = k2M, uint64_t flags = 0) {
  aclrtDrvMemHandle h = nullptr;
  aclError rc = aclrtMallocPhysical(&h, size, &p, flags);
  if (rc == kOk) {
    EXPECT_NE(h, nullptr);
    aclrtFreePhysical(h);
  }
  return rc;
}

aclrtPhysicalMemProp with_reserve(aclrtPhysicalMemProp p, uint64_t r) {
  p.reserve = r;
  return p;
}

using PhysicalMallocTest = AclTest;

// A device-0 allocation of `size` bytes with `attr`, and what it must cost the device.
struct ChargeCase {
  const char* name;
  aclrtMemAttr attr;
  size_t size, charged;
};
// Allocates each case, checks the charge, frees it and checks that the charge is gone.
void expect_charges(const std::vector<ChargeCase>& cases) {
  for (const ChargeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t before = hbm_free();
    aclrtPhysicalMemProp p = device_prop(0, c.attr);
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, c.size, &p, 0), kOk);
    EXPECT_NE(h, nullptr);
    EXPECT_EQ(before - hbm_free(), c.charged);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(hbm_free(), before);
  }
}

// §1: every accepted device attribute allocates, charged to the device in 2 MiB (1 GiB for the
// 1G attributes) units; HBM_MEM_NORMAL is allocated as huge pages (2 MiB).
TEST_F(PhysicalMallocTest, DeviceAttributesAllocateAndChargeTheDevice) {
  expect_charges({
      {"HBM_MEM_HUGE", ACL_HBM_MEM_HUGE, k2M, k2M},
      {"HBM_MEM_NORMAL", ACL_HBM_MEM_NORMAL, k2M, k2M},
      {"HBM_MEM_HUGE1G", ACL_HBM_MEM_HUGE1G, kGiB, kGiB},
      {"MEM_NORMAL", ACL_MEM_NORMAL, 4 * kMiB, 4 * kMiB},
      {"MEM_HUGE", ACL_MEM_HUGE, 4 * kMiB, 4 * kMiB},
      {"MEM_HUGE1G", ACL_MEM_HUGE1G, kGiB, kGiB},
      {"MEM_P2P_NORMAL", ACL_MEM_P2P_NORMAL, k2M, k2M},
      {"MEM_P2P_HUGE", ACL_MEM_P2P_HUGE, 6 * kMiB, 6 * kMiB},
  });
}

// Decisions table: sizes that are not a multiple of 2 MiB are rounded up (A2: torch_memory_saver
// passes raw sizes); 1G attributes round up to 1 GiB (§1 driver).
TEST_F(PhysicalMallocTest, SizesAreRoundedUpToTheGranularity) {
  expect_charges({
      {"1 byte", ACL_HBM_MEM_HUGE, 1, k2M},
      {"2 MiB + 1", ACL_HBM_MEM_HUGE, k2M + 1, 4 * kMiB},
      {"3 MiB", ACL_HBM_MEM_HUGE, 3 * kMiB, 4 * kMiB},
      {"20 MiB (torch_npu large pool)", ACL_HBM_MEM_HUGE, 20 * kMiB, 20 * kMiB},
      {"4097 bytes NORMAL", ACL_HBM_MEM_NORMAL, 4097, k2M},
      {"2 MiB HUGE1G", ACL_HBM_MEM_HUGE1G, k2M, kGiB},
      {"1 GiB + 1 HUGE1G", ACL_HBM_MEM_HUGE1G, kGiB + 1, 2 * kGiB},
      {"1 byte MEM_HUGE1G", ACL_MEM_HUGE1G, 1, kGiB},
  });
}

// A rounded-up handle really has the rounded size: a map of the whole rounded size fits (§3).
TEST_F(PhysicalMallocTest, RoundedHandleCanBeMappedAtItsRoundedSize) {
  aclrtDrvMemHandle h = make_handle(3 * kMiB);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
  const std::string in = pattern(4 * kMiB, 3);
  ASSERT_EQ(aclrtMemcpy(va, in.size(), in.data(), in.size(), ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  std::string out(in.size(), '\0');
  ASSERT_EQ(aclrtMemcpy(out.data(), out.size(), va, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_TRUE(out == in);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §1 table, clients.md A3: host physical memory (torch_npu uses ACL_HBM_MEM_HUGE for host). It is
// not charged to the device, and once mapped the CPU reads and writes it directly.
TEST_F(PhysicalMallocTest, HostLocationAllocatesWithoutChargingTheDevice) {
  const aclrtMemAttr attrs[] = {ACL_MEM_HUGE,       ACL_DDR_MEM_HUGE,     ACL_HBM_MEM_HUGE,
                                ACL_DDR_MEM_NORMAL, ACL_DDR_MEM_P2P_HUGE, ACL_MEM_P2P_NORMAL};
  for (aclrtMemAttr attr : attrs) {
    SCOPED_TRACE(static_cast<int>(attr));
    const size_t before = hbm_free();
    aclrtPhysicalMemProp p = host_prop(attr);
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, 3 * kMiB, &p, 0), kOk);
    EXPECT_EQ(hbm_free(), before);
    void* va = reserve(4 * kMiB);
    ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);  // rounded up to 4 MiB
    auto* bytes = static_cast<unsigned char*>(va);
    bytes[0] = 0x5a;
    bytes[4 * kMiB - 1] = 0xa5;
    unsigned char out[2] = {0, 0};
    ASSERT_EQ(aclrtMemcpy(&out[0], 1, va, 1, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
    ASSERT_EQ(aclrtMemcpy(&out[1], 1, bytes + 4 * kMiB - 1, 1, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
    EXPECT_EQ(out[0], 0x5a);
    EXPECT_EQ(out[1], 0xa5);
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
}

// §1: misuse, in the exact check order (ACL layer 100000 → runtime 107001/107002 → driver). Each
// row breaks one rule and usually also a later one, so the code proves which check ran first.
TEST_F(PhysicalMallocTest, MisuseTableInCheckOrder) {
  const aclrtPhysicalMemProp dev = device_prop(0);
  const aclrtPhysicalMemProp host = host_prop();
  const aclrtPhysicalMemProp bad_dev = device_prop(99);
  aclrtDrvMemHandle h = nullptr;
  struct Case {
    std::string name;
    std::function<aclError()> call;
    aclError expected;
  };
  std::vector<Case> cases = {
      {"handle NULL and prop NULL", [&] { return aclrtMallocPhysical(nullptr, k2M, nullptr, 0); }, kParam},
      {"handle NULL", [&] { return aclrtMallocPhysical(nullptr, k2M, &dev, 0); }, kParam},
      {"prop NULL and size 0", [&] { return aclrtMallocPhysical(&h, 0, nullptr, 0); }, kParam},
      {"size 0 and flags 1", [&] { return aclrtMallocPhysical(&h, 0, &dev, 1); }, kParam},
      {"size 0 on a bad device", [&] { return aclrtMallocPhysical(&h, 0, &bad_dev, 0); }, kParam},
      {"flags 1", [&] { return try_malloc(dev, k2M, 1); }, kParam},
      {"flags 1 on a bad device", [&] { return try_malloc(bad_dev, k2M, 1); }, kParam},
  };
  {
    aclrtPhysicalMemProp p = bad_dev;
    p.handleType = ACL_MEM_HANDLE_TYPE_POSIX;
    cases.push_back({"handleType POSIX on a bad device", [=] { return try_malloc(p); }, kParam});
    p = with_reserve(device_prop(0), 1);
    p.allocationType = static_cast<aclrtMemAllocationType>(1);
    cases.push_back({"allocationType 1 with reserve", [=] { return try_malloc(p); }, kParam});
  }
  cases.push_back({"location UNREGISTERED with reserve",
                   [=] { return try_malloc(with_reserve(with_location(dev, 2, 0), 1)); }, kParam});
  cases.push_back({"location MANAGED with reserve",
                   [=] { return try_malloc(with_reserve(with_location(dev, 3, 0), 1)); }, kParam});
  for (aclrtMemAttr a : {ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL, ACL_DDR_MEM_P2P_HUGE, ACL_DDR_MEM_P2P_NORMAL}) {
    cases.push_back({"DEVICE with DDR attr " + std::to_string(a) + " on a bad device",
                     [=] { return try_malloc(device_prop(99, a)); }, kParam});
  }
  for (int a : {0, 1, 8, 9, 11, 18, -1}) {  // not all of them are aclrtMemAttr values: with_attr
    cases.push_back({"rejected attr " + std::to_string(a) + " on a bad device",
                     [=] { return try_malloc(with_attr(device_prop(99), a)); }, kParam});
    cases.push_back({"rejected attr " + std::to_string(a) + " on host",
                     [=] { return try_malloc(with_attr(host_prop(), a)); }, kParam});
  }
  cases.push_back({"bad device 8 with reserve", [=] { return try_malloc(with_reserve(device_prop(8), 1)); },
                   kBadDevice});
  cases.push_back({"bad device 0xFFFFFFFF", [=] { return try_malloc(device_prop(0xFFFFFFFFu)); }, kBadDevice});
  cases.push_back({"device reserve 1", [=] { return try_malloc(with_reserve(dev, 1)); }, kRtParam});
  cases.push_back({"host reserve 1 and id 5", [=] { return try_malloc(with_reserve(with_location(host, 0, 5), 1)); },
                   kRtParam});
  for (uint32_t id : {1u, 7u, 63u}) {
    cases.push_back({"host id " + std::to_string(id), [=] { return try_malloc(with_location(host, 0, id)); },
                     kNotSupported});
  }
  for (uint32_t id : {64u, 1000u}) {
    cases.push_back({"host id " + std::to_string(id), [=] { return try_malloc(with_location(host, 0, id)); },
                     kRtParam});
  }
  cases.push_back({"location type 5", [=] { return try_malloc(with_location(dev, 5, 0)); }, kRtParam});
  // §1 driver: host 1G pages exist only for P2P_DDR memory.
  cases.push_back({"host ACL_MEM_HUGE1G", [=] { return try_malloc(host_prop(ACL_MEM_HUGE1G), kGiB); },
                   kNotSupported});
  cases.push_back({"host ACL_HBM_MEM_HUGE1G", [=] { return try_malloc(host_prop(ACL_HBM_MEM_HUGE1G), kGiB); },
                   kNotSupported});

  const size_t before = hbm_free();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  EXPECT_EQ(hbm_free(), before);  // no failed call charged anything
}

// §1 runtime: HOST_NUMA needs a current context (107002) before anything else of the runtime.
TEST_F(PhysicalMallocTest, HostNumaWithoutContextIs107002) {
  ASSERT_EQ(aclrtResetDeviceForce(0), kOk);
  EXPECT_EQ(try_malloc(with_location(host_prop(ACL_DDR_MEM_HUGE), 4, 0)), kNoContext);
  EXPECT_EQ(try_malloc(with_location(host_prop(ACL_MEM_P2P_HUGE1G), 4, 0), kGiB), kNoContext);
}

// §0: the driver's SVM state exists only after a device was opened; before that halMemCreate
// answers DRV_ERROR_INVALID_HANDLE → 107017. The ACL (100000) and runtime (107001) checks still
// come first.
TEST_F(PhysicalMallocTest, BeforeAnySetDeviceIs107017) {
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  ASSERT_EQ(aclInit(nullptr), kOk);
  EXPECT_EQ(try_malloc(device_prop(0)), kBadHandle);
  EXPECT_EQ(try_malloc(host_prop()), kBadHandle);
  EXPECT_EQ(try_malloc(device_prop(0, ACL_DDR_MEM_HUGE)), kParam);
  EXPECT_EQ(try_malloc(device_prop(0), 0), kParam);
  EXPECT_EQ(try_malloc(device_prop(8)), kBadDevice);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(try_malloc(device_prop(0)), kOk);
}

// §2 emulation: capacity is real. 64 MiB devices: one byte more than the device → 207001, the
// whole device works, nothing is left for more, and freeing gives the memory back.
TEST_F(PhysicalMallocTest, CapacityIsEnforcedAndReturnedOnFree) {
  ScopedEnvRuntime env("ACLVMM_DEVICE_MEMORY", "64M");
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(hbm_total(), 64 * kMiB);
  ASSERT_EQ(hbm_free(), 64 * kMiB);
  aclrtPhysicalMemProp p = device_prop(0);
  aclrtDrvMemHandle h = nullptr, h2 = nullptr;
  EXPECT_EQ(aclrtMallocPhysical(&h, 64 * kMiB + 1, &p, 0), kNoMemory);
  EXPECT_EQ(aclrtMallocPhysical(&h, 128 * kMiB, &p, 0), kNoMemory);
  EXPECT_EQ(aclrtMallocPhysical(&h, kGiB, &p, 0), kNoMemory);
  aclrtPhysicalMemProp p1g = device_prop(0, ACL_HBM_MEM_HUGE1G);
  EXPECT_EQ(aclrtMallocPhysical(&h, 1, &p1g, 0), kNoMemory);  // rounds to 1 GiB
  EXPECT_EQ(hbm_free(), 64 * kMiB);
  ASSERT_EQ(aclrtMallocPhysical(&h, 64 * kMiB, &p, 0), kOk);
  EXPECT_EQ(hbm_free(), 0u);
  EXPECT_EQ(aclrtMallocPhysical(&h2, 1, &p, 0), kNoMemory);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(hbm_free(), 64 * kMiB);
  ASSERT_EQ(aclrtMallocPhysical(&h, 62 * kMiB, &p, 0), kOk);
  ASSERT_EQ(aclrtMallocPhysical(&h2, 1, &p, 0), kOk);  // the last 2 MiB
  EXPECT_EQ(hbm_free(), 0u);
  EXPECT_EQ(aclrtFreePhysical(h2), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  // Other devices have their own capacity.
  aclrtPhysicalMemProp p3 = device_prop(3);
  ASSERT_EQ(aclrtMallocPhysical(&h, 64 * kMiB, &p3, 0), kOk);
  EXPECT_EQ(hbm_free(), 64 * kMiB);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// Decisions table: in quirk mode a size that is not a multiple of 2 MiB is 507899.
TEST_F(PhysicalMallocTest, VendorQuirkRejectsUnalignedSizes) {
  ScopedEnvRuntime env("ACLVMM_QUIRKS", "vendor");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(try_malloc(device_prop(0), 3 * kMiB), kDrv);
  EXPECT_EQ(try_malloc(device_prop(0), 4 * kMiB), kOk);
}

using PhysicalFreeTest = AclTest;

// §1 and the decisions table: NULL 100000; double-freed or forged handles 107000, never a crash.
TEST_F(PhysicalFreeTest, MisuseTable) {
  aclrtDrvMemHandle freed = make_handle();
  ASSERT_EQ(aclrtFreePhysical(freed), kOk);
  aclrtDrvMemHandle live = make_handle();
  int local = 0;
  struct Case {
    const char* name;
    aclrtDrvMemHandle h;
    aclError expected;
  } cases[] = {
      {"NULL", nullptr, kParam},
      {"double free", freed, kRtParam},
      {"forged 0x1", reinterpret_cast<aclrtDrvMemHandle>(uintptr_t{1}), kRtParam},
      {"forged 0xdeadbeef", reinterpret_cast<aclrtDrvMemHandle>(uintptr_t{0xdeadbeef}), kRtParam},
      {"forged all ones", reinterpret_cast<aclrtDrvMemHandle>(~uintptr_t{0}), kRtParam},
      {"pointer to a stack variable", reinterpret_cast<aclrtDrvMemHandle>(&local), kRtParam},
      {"live handle + 1", reinterpret_cast<aclrtDrvMemHandle>(reinterpret_cast<uintptr_t>(live) + 1), kRtParam},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtFreePhysical(c.h), c.expected);
  }
  const size_t before = hbm_free();
  EXPECT_EQ(aclrtFreePhysical(live), kOk);  // the live handle survived all of the above
  EXPECT_EQ(hbm_free() - before, k2M);
  EXPECT_EQ(aclrtFreePhysical(live), kRtParam);
}

// §1: freeing a mapped handle succeeds and defers the release to the last unmap; a second free
// while still mapped is "released too many times" → 107000.
TEST_F(PhysicalFreeTest, FreeWhileMappedDefersReleaseToUnmap) {
  const size_t before = hbm_free();
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
  const std::string in = pattern(4 * kMiB, 11);
  ASSERT_EQ(aclrtMemcpy(va, in.size(), in.data(), in.size(), ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(before - hbm_free(), 4 * kMiB);  // still charged
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  // The mapping still works and still holds its bytes.
  std::string out(in.size(), '\0');
  ASSERT_EQ(aclrtMemcpy(out.data(), out.size(), va, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_TRUE(out == in);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(hbm_free(), before);  // released by the final unmap
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §1: with two mappings, the free is deferred until the last of them is unmapped.
TEST_F(PhysicalFreeTest, FreeWithTwoMappingsReleasesAtTheLastUnmap) {
  const size_t before = hbm_free();
  aclrtDrvMemHandle h = make_handle();
  void* va = reserve(4 * kMiB);
  char* base = static_cast<char*>(va);
  ASSERT_EQ(aclrtMapMem(base, k2M, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMapMem(base + k2M, k2M, 0, h, 0), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtUnmapMem(base), kOk);
  EXPECT_EQ(before - hbm_free(), k2M);
  EXPECT_EQ(aclrtUnmapMem(base + k2M), kOk);
  EXPECT_EQ(hbm_free(), before);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
