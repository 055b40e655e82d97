// aclrtMemGetAllocationGranularity, aclrtMemRetainAllocationHandle,
// aclrtMemGetAllocationPropertiesFromHandle and teardown orders (behavior.md §1, §5, §6;
// clients.md A1, A9, A15).
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

aclError granularity(aclrtPhysicalMemProp p, aclrtMemGranularityOptions option, size_t* out) {
  return aclrtMemGetAllocationGranularity(&p, option, out);
}

// ---------------------------------------------------------------------------------------------
using PhysicalGranularityTest = AclTest;

// §5 values, clients.md A1: exactly 2 MiB for every non-1G attribute, exactly 1 GiB for the 1G
// ones, for MINIMUM and RECOMMENDED alike.
TEST_F(PhysicalGranularityTest, ValuesForEveryAcceptedAttributeAndOption) {
  struct Case {
    const char* name;
    aclrtPhysicalMemProp prop;
    size_t expected;
  } cases[] = {
      {"device HBM_MEM_HUGE", device_prop(0, ACL_HBM_MEM_HUGE), k2M},
      {"device HBM_MEM_NORMAL", device_prop(0, ACL_HBM_MEM_NORMAL), k2M},
      {"device HBM_MEM_HUGE1G", device_prop(0, ACL_HBM_MEM_HUGE1G), kGiB},
      {"device MEM_NORMAL", device_prop(0, ACL_MEM_NORMAL), k2M},
      {"device MEM_HUGE", device_prop(0, ACL_MEM_HUGE), k2M},
      {"device MEM_HUGE1G", device_prop(0, ACL_MEM_HUGE1G), kGiB},
      {"device MEM_P2P_NORMAL", device_prop(0, ACL_MEM_P2P_NORMAL), k2M},
      {"device MEM_P2P_HUGE", device_prop(0, ACL_MEM_P2P_HUGE), k2M},
      {"device 7 HBM_MEM_HUGE", device_prop(7, ACL_HBM_MEM_HUGE), k2M},
      {"host MEM_HUGE", host_prop(ACL_MEM_HUGE), k2M},
      {"host HBM_MEM_HUGE", host_prop(ACL_HBM_MEM_HUGE), k2M},
      {"host DDR_MEM_HUGE", host_prop(ACL_DDR_MEM_HUGE), k2M},
      {"host DDR_MEM_NORMAL", host_prop(ACL_DDR_MEM_NORMAL), k2M},
      {"host DDR_MEM_P2P_NORMAL", host_prop(ACL_DDR_MEM_P2P_NORMAL), k2M},
      {"host MEM_HUGE1G", host_prop(ACL_MEM_HUGE1G), kGiB},
      {"host NUMA DDR_MEM_HUGE", with_location(host_prop(ACL_DDR_MEM_HUGE), 4), k2M},
      {"UNREGISTERED location (accepted, §5)", with_location(device_prop(0), 2), k2M},
  };
  for (const Case& c : cases) {
    for (auto option : {ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED}) {
      SCOPED_TRACE(std::string(c.name) + (option ? " RECOMMENDED" : " MINIMUM"));
      size_t g = 12345;
      EXPECT_EQ(granularity(c.prop, option, &g), kOk);
      EXPECT_EQ(g, c.expected);
    }
  }
}

// §5 misuse: ACL layer (100000) → runtime device id (107001) → driver option (207000) →
// reserve / side (107000).
TEST_F(PhysicalGranularityTest, MisuseTable) {
  size_t g = 0;
  aclrtPhysicalMemProp dev = device_prop(0);
  const auto kMin = ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM;
  const auto kUndef = ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF;
  aclrtPhysicalMemProp reserved = dev;
  reserved.reserve = 1;
  aclrtPhysicalMemProp bad_reserved = device_prop(99);
  bad_reserved.reserve = 1;
  struct Case {
    std::string name;
    std::function<aclError()> call;
    aclError expected;
  };
  std::vector<Case> cases = {
      {"prop NULL", [&] { return aclrtMemGetAllocationGranularity(nullptr, kMin, &g); }, kParam},
      {"granularity NULL", [&] { return aclrtMemGetAllocationGranularity(&dev, kMin, nullptr); }, kParam},
      {"DEVICE with DDR_MEM_HUGE on a bad device",
       [&] { return granularity(device_prop(99, ACL_DDR_MEM_HUGE), kUndef, &g); }, kParam},
      {"DEVICE with DDR_MEM_P2P_NORMAL", [&] { return granularity(device_prop(0, ACL_DDR_MEM_P2P_NORMAL), kMin, &g); },
       kParam},
      {"bad device 8 with option UNDEF", [&] { return granularity(device_prop(8), kUndef, &g); }, kBadDevice},
      {"bad device 0xFFFFFFFF", [&] { return granularity(device_prop(0xFFFFFFFFu), kMin, &g); }, kBadDevice},
      {"bad device with reserve", [&] { return granularity(bad_reserved, kMin, &g); }, kBadDevice},
      {"option UNDEF with reserve", [&] { return granularity(reserved, kUndef, &g); }, kNotSupported},
      {"option 2", [&] { return granularity(dev, static_cast<aclrtMemGranularityOptions>(2), &g); },
       kNotSupported},
      {"reserve 1", [&] { return granularity(reserved, kMin, &g); }, kRtParam},
      {"MANAGED location", [&] { return granularity(with_location(dev, 3), kMin, &g); }, kRtParam},
  };
  for (int a : {0, 1, 8, 9, 11, 18}) {  // 18 is no aclrtMemAttr value: with_attr
    cases.push_back({"rejected attr " + std::to_string(a),
                     [&g, a] { return granularity(with_attr(device_prop(99), a), ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &g); },
                     kParam});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    g = 777;
    EXPECT_EQ(c.call(), c.expected);
    EXPECT_EQ(g, 777u);  // nothing written on failure
  }
}

// ---------------------------------------------------------------------------------------------
using PhysicalPropertiesTest = AclTest;

// §6: reverse lookup on (page type, memory type, host?), so round trips are not identity.
TEST_F(PhysicalPropertiesTest, ReverseLookupTable) {
  struct Case {
    const char* name;
    aclrtPhysicalMemProp created;
    aclrtMemAttr reported;
  } cases[] = {
      {"device HBM_MEM_HUGE", device_prop(0, ACL_HBM_MEM_HUGE), ACL_HBM_MEM_HUGE},
      {"device HBM_MEM_NORMAL (local handle stays NORMAL)", device_prop(0, ACL_HBM_MEM_NORMAL), ACL_HBM_MEM_NORMAL},
      {"device HBM_MEM_HUGE1G", device_prop(0, ACL_HBM_MEM_HUGE1G), ACL_HBM_MEM_HUGE1G},
      {"device MEM_HUGE", device_prop(0, ACL_MEM_HUGE), ACL_HBM_MEM_HUGE},
      {"device MEM_NORMAL", device_prop(0, ACL_MEM_NORMAL), ACL_HBM_MEM_NORMAL},
      {"device MEM_HUGE1G", device_prop(0, ACL_MEM_HUGE1G), ACL_HBM_MEM_HUGE1G},
      {"device MEM_P2P_NORMAL", device_prop(0, ACL_MEM_P2P_NORMAL), ACL_MEM_P2P_NORMAL},
      {"device MEM_P2P_HUGE", device_prop(0, ACL_MEM_P2P_HUGE), ACL_MEM_P2P_HUGE},
      {"host HBM_MEM_HUGE", host_prop(ACL_HBM_MEM_HUGE), ACL_HBM_MEM_HUGE},
      {"host HBM_MEM_NORMAL", host_prop(ACL_HBM_MEM_NORMAL), ACL_HBM_MEM_NORMAL},
      {"host DDR_MEM_HUGE", host_prop(ACL_DDR_MEM_HUGE), ACL_MEM_HUGE},
      {"host DDR_MEM_NORMAL", host_prop(ACL_DDR_MEM_NORMAL), ACL_MEM_NORMAL},
      {"host DDR_MEM_P2P_HUGE", host_prop(ACL_DDR_MEM_P2P_HUGE), ACL_MEM_P2P_HUGE},
      {"host DDR_MEM_P2P_NORMAL", host_prop(ACL_DDR_MEM_P2P_NORMAL), ACL_DDR_MEM_P2P_NORMAL},
      {"host MEM_HUGE", host_prop(ACL_MEM_HUGE), ACL_MEM_HUGE},
      {"host MEM_NORMAL", host_prop(ACL_MEM_NORMAL), ACL_MEM_NORMAL},
      {"host MEM_P2P_NORMAL", host_prop(ACL_MEM_P2P_NORMAL), ACL_DDR_MEM_P2P_NORMAL},
      {"host MEM_P2P_HUGE", host_prop(ACL_MEM_P2P_HUGE), ACL_MEM_P2P_HUGE},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtDrvMemHandle h = nullptr;
    const size_t size = (c.created.memAttr == ACL_HBM_MEM_HUGE1G || c.created.memAttr == ACL_MEM_HUGE1G) ? kGiB : k2M;
    ASSERT_EQ(aclrtMallocPhysical(&h, size, &c.created, 0), kOk);
    aclrtPhysicalMemProp out;
    std::memset(&out, 0xee, sizeof out);
    ASSERT_EQ(aclrtMemGetAllocationPropertiesFromHandle(h, &out), kOk);
    EXPECT_EQ(out.handleType, ACL_MEM_HANDLE_TYPE_NONE);
    EXPECT_EQ(out.allocationType, ACL_MEM_ALLOCATION_TYPE_PINNED);
    EXPECT_EQ(out.memAttr, c.reported);
    EXPECT_EQ(out.location.type, c.created.location.type);
    EXPECT_EQ(out.location.id, 0u);
    EXPECT_EQ(out.reserve, 0u);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
}

// §6: location.id is the (driver) device id of the handle; mapping and retaining do not change it.
TEST_F(PhysicalPropertiesTest, LocationIdIsTheHandlesDevice) {
  for (uint32_t dev : {0u, 3u, 7u}) {
    SCOPED_TRACE(dev);
    aclrtDrvMemHandle h = make_handle(k2M, dev);
    aclrtPhysicalMemProp out{};
    ASSERT_EQ(aclrtMemGetAllocationPropertiesFromHandle(h, &out), kOk);
    EXPECT_EQ(out.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
    EXPECT_EQ(out.location.id, dev);
    EXPECT_EQ(out.memAttr, ACL_HBM_MEM_HUGE);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
}

// §6 misuse: NULLs → 100000; freed or forged handle → 107000; prop untouched on failure.
TEST_F(PhysicalPropertiesTest, MisuseTable) {
  aclrtDrvMemHandle live = make_handle();
  aclrtDrvMemHandle stale = make_handle();
  ASSERT_EQ(aclrtFreePhysical(stale), kOk);
  aclrtPhysicalMemProp out;
  struct Case {
    const char* name;
    aclrtDrvMemHandle h;
    aclrtPhysicalMemProp* prop;
    aclError expected;
  } cases[] = {
      {"handle NULL", nullptr, &out, kParam},
      {"prop NULL", live, nullptr, kParam},
      {"both NULL", nullptr, nullptr, kParam},
      {"stale handle with prop NULL", stale, nullptr, kParam},
      {"stale handle", stale, &out, kRtParam},
      {"forged handle", reinterpret_cast<aclrtDrvMemHandle>(uintptr_t{0x1234}), &out, kRtParam},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::memset(&out, 0xab, sizeof out);
    EXPECT_EQ(aclrtMemGetAllocationPropertiesFromHandle(c.h, c.prop), c.expected);
    EXPECT_EQ(out.reserve, 0xababababababababull);
  }
  EXPECT_EQ(aclrtFreePhysical(live), kOk);
}

// ---------------------------------------------------------------------------------------------
using PhysicalRetainTest = AclTest;

// §6, clients.md A15: Retain returns the very handle value that was mapped and adds a reference
// that needs its own aclrtFreePhysical.
TEST_F(PhysicalRetainTest, ReturnsTheSameHandleAndAddsOneReference) {
  const size_t before = hbm_free();
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
  aclrtDrvMemHandle r1 = nullptr, r2 = nullptr;
  ASSERT_EQ(aclrtMemRetainAllocationHandle(va, &r1), kOk);
  ASSERT_EQ(aclrtMemRetainAllocationHandle(va, &r2), kOk);
  EXPECT_EQ(r1, h);
  EXPECT_EQ(r2, h);
  aclrtPhysicalMemProp out{};
  EXPECT_EQ(aclrtMemGetAllocationPropertiesFromHandle(r1, &out), kOk);
  EXPECT_EQ(out.memAttr, ACL_HBM_MEM_HUGE);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  // ref: 1 (create) + 2 (retains) remain.
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFreePhysical(r1), kOk);
  EXPECT_EQ(before - hbm_free(), 4 * kMiB);  // one reference still holds the memory
  EXPECT_EQ(aclrtFreePhysical(r2), kOk);
  EXPECT_EQ(hbm_free(), before);
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §6 misuse: interior VA 507899 (exact mapping start needed), reserved but unmapped 107017,
// unknown VA 507899, NULLs 100000.
TEST_F(PhysicalRetainTest, MisuseTable) {
  aclrtDrvMemHandle h = make_handle();
  void* va = reserve(8 * kMiB);
  char* base = static_cast<char*>(va);
  ASSERT_EQ(aclrtMapMem(base + k2M, k2M, 0, h, 0), kOk);
  aclrtDrvMemHandle out = nullptr;
  int local = 0;
  void* dev_ptr = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev_ptr, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  struct Case {
    const char* name;
    void* va;
    aclrtDrvMemHandle* out;
    aclError expected;
  } cases[] = {
      {"virPtr NULL", nullptr, &out, kParam},
      {"handle NULL", base + k2M, nullptr, kParam},
      {"interior VA +4 KiB", base + k2M + 4096, &out, kDrv},
      {"interior VA +1 byte", base + k2M + 1, &out, kDrv},
      {"reserved, never mapped (base)", base, &out, kBadHandle},
      {"reserved, never mapped (tail)", base + 6 * kMiB, &out, kBadHandle},
      {"stack address", &local, &out, kDrv},
      {"past the reservation", base + 8 * kMiB + 64 * kMiB, &out, kDrv},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    out = nullptr;
    EXPECT_EQ(aclrtMemRetainAllocationHandle(c.va, c.out), c.expected);
    EXPECT_EQ(out, nullptr);
  }
  EXPECT_EQ(aclrtFree(dev_ptr), kOk);
  // No failed retain added a reference: one free + one unmap release everything.
  const size_t before = hbm_free();
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtUnmapMem(base + k2M), kOk);
  EXPECT_EQ(hbm_free() - before, k2M);
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// ---------------------------------------------------------------------------------------------
using PhysicalTeardownOrderTest = AclTest;

// clients.md A9: every teardown order works and gives back all memory and all address space
// (re-reserving the same base with expectPtr proves the range is free again).
TEST_F(PhysicalTeardownOrderTest, AllClientOrdersReleaseEverything) {
  enum Step { kUnmap, kFree, kRelease, kRetain, kFreeRetained };
  struct Case {
    const char* name;
    std::vector<Step> steps;
  } cases[] = {
      {"unmap -> free -> release (camem, tms, torch_npu)", {kUnmap, kFree, kRelease}},
      {"unmap -> release -> free (Mooncake, dvm, samples)", {kUnmap, kRelease, kFree}},
      {"retain -> unmap -> free -> free -> release (HCCL sample)", {kRetain, kUnmap, kFree, kFreeRetained, kRelease}},
      {"retain -> unmap -> free(retained) -> release -> free", {kRetain, kUnmap, kFreeRetained, kRelease, kFree}},
      {"free -> unmap -> release (free while mapped)", {kFree, kUnmap, kRelease}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t before = hbm_free();
    aclrtDrvMemHandle h = make_handle(4 * kMiB);
    void* va = reserve(kGiB);
    ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
    const std::string in = pattern(4 * kMiB, 5);
    ASSERT_EQ(put(va, in), kOk);
    EXPECT_TRUE(get(va, in.size()) == in);
    aclrtDrvMemHandle retained = nullptr;
    for (Step s : c.steps) {
      switch (s) {
        case kUnmap: EXPECT_EQ(aclrtUnmapMem(va), kOk); break;
        case kFree: EXPECT_EQ(aclrtFreePhysical(h), kOk); break;
        case kRelease: EXPECT_EQ(aclrtReleaseMemAddress(va), kOk); break;
        case kRetain:
          EXPECT_EQ(aclrtMemRetainAllocationHandle(va, &retained), kOk);
          EXPECT_EQ(retained, h);
          break;
        case kFreeRetained: EXPECT_EQ(aclrtFreePhysical(retained), kOk); break;
      }
    }
    EXPECT_EQ(hbm_free(), before);
    EXPECT_EQ(aclrtFreePhysical(h), kRtParam);  // nothing left to free
    void* again = nullptr;
    EXPECT_EQ(aclrtReserveMemAddress(&again, kGiB, 0, va, 0), kOk);
    EXPECT_EQ(again, va);
    EXPECT_EQ(aclrtReleaseMemAddress(again), kOk);
  }
}

}  // namespace
