// products.md: the SoC name selects a product family, its memory size and which calls and memory
// attributes it supports (unsupported → exactly 207000). products_matrix_test.cpp checks the code
// of every gated call per family; the tests here check what else the rules imply (memory sizes,
// the checks around the gate, the data after a supported call, 1 GiB page rules). One runtime per
// family: the environment is read at aclInit, so each test sets ACLVMM_SOC, initialises, and
// restores it afterwards.
#include <algorithm>
#include <initializer_list>

#include "api/test_env.h"
#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;

struct Family {
  const char* soc;
  const char* family;
  uint64_t memory;  // products.md, "memory per device"
};

const Family kFamilies[] = {
    {"Ascend950PR_9599", "950", 128 * kGiB},   {"Ascend910_9391", "A3", 64 * kGiB},
    {"Ascend910B1", "A2", 64 * kGiB},          {"Ascend310B1", "EDGE", 32 * kGiB},
    {"Ascend310P3", "INF", 24000000000ull},    {"Ascend910A", "TRAIN", 32 * kGiB},
};

void PrintTo(const Family& f, std::ostream* os) { *os << f.soc << " (" << f.family << ")"; }

bool in(const Family& f, std::initializer_list<const char*> families) {
  return std::any_of(families.begin(), families.end(),
                     [&](const char* n) { return std::string(n) == f.family; });
}

class Products : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    ASSERT_EQ(soc_.set(GetParam().soc), 0);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    soc_.restore();
  }
  const Family& fam() const { return GetParam(); }

  // ACL_MEM_HUGE: the attribute every family supports.
  aclrtDrvMemHandle handle(size_t size = k2M) { return make_handle(size, 0, ACL_MEM_HUGE); }

 private:
  ScopedEnv soc_{"ACLVMM_SOC"};
};

TEST_P(Products, SocNameAndMemorySize) {
  const char* soc = aclrtGetSocName();
  ASSERT_NE(soc, nullptr);
  EXPECT_STREQ(soc, fam().soc);
  for (int32_t dev : {0, 7}) {
    SCOPED_TRACE(dev);
    ASSERT_EQ(aclrtSetDevice(dev), ACL_SUCCESS);
    for (aclrtMemAttr attr : {ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G}) {
      MemInfo m = mem_info(attr);
      EXPECT_EQ(m.total, fam().memory) << attr;
      EXPECT_EQ(m.free, fam().memory) << attr;
    }
    if (dev != 0) {
      EXPECT_EQ(aclrtResetDevice(dev), ACL_SUCCESS);
    }
  }
  std::string json = aclvmmStatsJson();
  EXPECT_NE(json.find(std::string("\"soc\": \"") + fam().soc + "\""), std::string::npos) << json;
}

TEST_P(Products, ReserveMemAddressNoUCMemoryOnlyA3) {
  void* const fixed = reinterpret_cast<void*>(78ull << 40);  // Mooncake's 78 TB
  void* va = nullptr;
  const aclError expected = in(fam(), {"A3"}) ? kOk : kNotSupported;
  ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, fixed, 0), expected);
  if (expected != kOk) {
    EXPECT_EQ(va, nullptr);
    return;
  }
  EXPECT_EQ(va, fixed);
  // behavior.md §2: without expectPtr → 207000; size not a 1 GiB multiple / unaligned → 107000.
  void* other = nullptr;
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&other, kGiB, 0, nullptr, 0), kNotSupported);
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&other, 3 * kMiB * 100, 0, at(fixed, 4 * kGiB), 0),
            ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&other, kGiB, 0, at(fixed, 4 * kGiB + 2 * kMiB), 0),
            ACL_ERROR_RT_PARAM_INVALID);
  // The range maps device memory like any reservation.
  aclrtDrvMemHandle h = handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  const std::string bytes = pattern(k2M, 40);
  h2d(va, bytes);
  EXPECT_EQ(get(va, k2M), bytes);
  aclrtPtrAttributes attr{};
  ASSERT_EQ(aclrtPointerGetAttributes(va, &attr), kOk);
  EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(attr.pageSize, 2 * kMiB);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(live_count("reservations"), 0);
}

TEST_P(Products, MemMapSetLinkByFamily) {
  // products.md: SIO/HCCS on A3, UB paths on 950, nothing elsewhere; a wrong pair → 207021.
  struct Case {
    const char* name;
    int link;
    aclError expected;
  };
  const bool a3 = in(fam(), {"A3"}), f950 = in(fam(), {"950"});
  const aclError other = (a3 || f950) ? kLinkNotSupported : kNotSupported;
  const Case cases[] = {
      {"SIO", ACL_RT_MEM_ACCESS_LINK_SIO, a3 ? kOk : other},
      {"HCCS", ACL_RT_MEM_ACCESS_LINK_HCCS, a3 ? kOk : other},
      {"UB one port", ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH, f950 ? kOk : other},
      {"UB multi port", ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH, f950 ? kOk : other},
      {"link 4 (§11: > 3 → 107000)", 4, ACL_ERROR_RT_PARAM_INVALID},
  };
  aclrtDrvMemHandle h = handle();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtMemMapSetLink(h, static_cast<aclrtMemLinkType>(c.link)), c.expected);
  }
  // The handle stays usable after setting a route.
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  const std::string bytes = pattern(4096, 41);
  h2d(va, bytes);
  EXPECT_EQ(get(va, bytes.size()), bytes);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

TEST_P(Products, MemMapSelectedLinkOnlyA3) {
  aclrtDrvMemHandle h = handle(4 * kMiB);
  void* src = reserve(4 * kMiB);
  void* dst = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(src, 4 * kMiB, 0, h, 0), kOk);
  const std::string bytes = pattern(4 * kMiB, 42);
  h2d(src, bytes);
  const aclError expected = in(fam(), {"A3"}) ? kOk : kNotSupported;
  ASSERT_EQ(aclrtMemMapSelectedLink(dst, 4 * kMiB, src, ACL_RT_MEM_LINK_IDX_1), expected);
  if (expected == kOk) {
    EXPECT_EQ(get(dst, bytes.size()), bytes);  // the same physical memory at a second VA
    EXPECT_EQ(aclrtUnmapMem(dst), kOk);
  }
  EXPECT_EQ(live_count("mappings"), 1);
  EXPECT_EQ(aclrtUnmapMem(src), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(live_count("physical_handles"), 0);  // the temporary retain was balanced
  EXPECT_EQ(aclrtReleaseMemAddress(src), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(dst), kOk);
}

// The call-by-call gate is products_matrix_test.cpp; this is the order of checks around it.
TEST_P(Products, MemAllocManagedFlagIsCheckedBeforeTheProduct) {
  void* p = nullptr;
  // behavior.md §10: the ACL flag check (100000) comes before any product gating.
  EXPECT_EQ(aclrtMemAllocManaged(&p, 4 * kMiB, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(p, nullptr);
}

TEST_P(Products, DeviceMemoryAttributes) {
  // products.md "Memory attributes (device location)"; behavior.md §1 keeps 100000 rejections.
  const bool big3 = in(fam(), {"950", "A3", "A2"});
  struct Case {
    const char* name;
    aclrtMemAttr attr;
    aclError expected;
  } cases[] = {
      {"ACL_HBM_MEM_HUGE", ACL_HBM_MEM_HUGE, big3 ? kOk : kNotSupported},
      {"ACL_HBM_MEM_NORMAL", ACL_HBM_MEM_NORMAL, big3 ? kOk : kNotSupported},
      {"ACL_HBM_MEM_HUGE1G", ACL_HBM_MEM_HUGE1G, big3 ? kOk : kNotSupported},
      {"ACL_MEM_HUGE1G", ACL_MEM_HUGE1G, in(fam(), {"A3", "A2"}) ? kOk : kNotSupported},
      {"ACL_MEM_P2P_HUGE1G", ACL_MEM_P2P_HUGE1G, in(fam(), {"A3"}) ? kOk : kNotSupported},
      {"ACL_MEM_NORMAL", ACL_MEM_NORMAL, kOk},
      {"ACL_MEM_HUGE", ACL_MEM_HUGE, kOk},
      {"ACL_MEM_P2P_NORMAL", ACL_MEM_P2P_NORMAL, kOk},
      {"ACL_MEM_P2P_HUGE", ACL_MEM_P2P_HUGE, kOk},
      {"ACL_DDR_MEM_HUGE on a device (§1)", ACL_DDR_MEM_HUGE, ACL_ERROR_INVALID_PARAM},
      {"ACL_HBM_MEM (§1, not in the table)", ACL_HBM_MEM, ACL_ERROR_INVALID_PARAM},
  };
  const MemInfo before = mem_info();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtPhysicalMemProp p = device_prop(0, c.attr);
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &p, 0), c.expected);
    if (c.expected != kOk) {
      EXPECT_EQ(h, nullptr);
      EXPECT_EQ(mem_info().free, before.free);
      continue;
    }
    const bool is1g = c.attr == ACL_HBM_MEM_HUGE1G || c.attr == ACL_MEM_HUGE1G ||
                      c.attr == ACL_MEM_P2P_HUGE1G;
    EXPECT_EQ(before.free - mem_info().free, is1g ? kGiB : k2M);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
  EXPECT_EQ(live_count("physical_handles"), 0);
}

TEST_P(Products, OneGiBPagesRule) {
  const bool has1g = in(fam(), {"950", "A3", "A2"});  // RT_FEATURE_MEM_1G_HUGE_PAGE (§1)
  // Granularity answers 1 GiB for 1G attributes with no support check (§5).
  aclrtPhysicalMemProp gp = device_prop(0, ACL_HBM_MEM_HUGE1G);
  size_t g = 0;
  ASSERT_EQ(aclrtMemGetAllocationGranularity(&gp, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g), kOk);
  EXPECT_EQ(g, kGiB);
  // Host side (§1 driver): 1G pages only for P2P DDR, and only where the chip has 1G pages.
  struct Case {
    const char* name;
    aclrtMemLocationType type;
    aclrtMemAttr attr;
    aclError expected;
  } cases[] = {
      {"HOST + ACL_MEM_P2P_HUGE1G", ACL_MEM_LOCATION_TYPE_HOST, ACL_MEM_P2P_HUGE1G, has1g ? kOk : kNotSupported},
      {"HOST_NUMA + ACL_MEM_P2P_HUGE1G (Mooncake)", ACL_MEM_LOCATION_TYPE_HOST_NUMA, ACL_MEM_P2P_HUGE1G,
       has1g ? kOk : kNotSupported},
      {"HOST + ACL_MEM_HUGE1G (DDR, not P2P)", ACL_MEM_LOCATION_TYPE_HOST, ACL_MEM_HUGE1G, kNotSupported},
      {"HOST + ACL_HBM_MEM_HUGE1G (HBM kept for host)", ACL_MEM_LOCATION_TYPE_HOST, ACL_HBM_MEM_HUGE1G,
       kNotSupported},
      {"DEVICE + ACL_HBM_MEM_HUGE1G", ACL_MEM_LOCATION_TYPE_DEVICE, ACL_HBM_MEM_HUGE1G, has1g ? kOk : kNotSupported},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtPhysicalMemProp p = device_prop(0, c.attr);
    p.location.type = c.type;
    aclrtDrvMemHandle h = nullptr;
    const aclError rc = aclrtMallocPhysical(&h, 3 * kMiB, &p, 0);
    EXPECT_EQ(rc, c.expected);
    if (rc != kOk) continue;
    // Rounded up to a whole 1 GiB page: a 1 GiB mapping fits, and its last byte is usable.
    void* va = reserve(kGiB);
    ASSERT_EQ(aclrtMapMem(va, kGiB, 0, h, 0), kOk);
    const std::string bytes = pattern(4096, 43);
    h2d(at(va, kGiB - 4096), bytes);
    EXPECT_EQ(get(at(va, kGiB - 4096), 4096), bytes);
    if (c.type != ACL_MEM_LOCATION_TYPE_DEVICE) {  // host memory: the CPU reads it directly
      EXPECT_EQ(std::memcmp(at(va, kGiB - 4096), bytes.data(), 4096), 0);
    }
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Products, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& info) {
                           return std::string(info.param.family) == "950" ? std::string("F950")
                                                                          : std::string(info.param.family);
                         });

}  // namespace
