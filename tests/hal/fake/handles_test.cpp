// Physical memory and handles (hal.md §3.1, §3.6, §3.7, §3.8): halMemCreate's checks in order,
// the page-type promotion and rounding, the stored properties, granularity, the map-route
// attribute, stale and forged handles.
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

struct CreateCase {
  const char* what;
  size_t size;
  drv_mem_prop prop;
  uint64_t flags;
  drvError_t expect;
};

drv_mem_prop with(drv_mem_prop p, void (*change)(drv_mem_prop&)) {
  change(p);
  return p;
}

TEST(FakeHalHandles, CreateChecksInOrder) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop dev0 = device_prop(0);
  const CreateCase cases[] = {
      {"size 0", 0, dev0, 0, DRV_ERROR_INVALID_VALUE},
      {"flag", 2 * kMiB, dev0, 1, DRV_ERROR_INVALID_VALUE},
      {"side 3", 2 * kMiB, with(dev0, [](drv_mem_prop& p) { p.side = 3; }), 0,
       DRV_ERROR_INVALID_VALUE},
      {"devid 64", 2 * kMiB, device_prop(64), 0, DRV_ERROR_INVALID_VALUE},
      {"page type 3", 2 * kMiB, device_prop(0, 3), 0, DRV_ERROR_INVALID_VALUE},
      {"memory type 5", 2 * kMiB, device_prop(0, 1, 5), 0, DRV_ERROR_INVALID_VALUE},
      {"TS DDR", 2 * kMiB, device_prop(0, 1, MEM_TS_DDR_TYPE), 0, DRV_ERROR_NOT_SUPPORT},
      {"host giant DDR", kGiB, host_prop(MEM_GIANT_PAGE_TYPE, MEM_DDR_TYPE), 0,
       DRV_ERROR_NOT_SUPPORT},
      {"reserve", 2 * kMiB, with(dev0, [](drv_mem_prop& p) { p.reserve = 1; }), 0,
       DRV_ERROR_INVALID_VALUE},
      {"host devid 1", 2 * kMiB, with(host_prop(), [](drv_mem_prop& p) { p.devid = 1; }), 0,
       DRV_ERROR_NOT_SUPPORT},
      {"device not opened", 2 * kMiB, device_prop(3), 0, DRV_ERROR_INVALID_DEVICE},
      {"device out of range", 2 * kMiB, device_prop(kDevices), 0, DRV_ERROR_INVALID_DEVICE},
      {"not 2 MiB pages", 3 * kMiB, dev0, 0, DRV_ERROR_PARA_ERROR},
      {"normal APP page is huge", 3 * kMiB, device_prop(0, MEM_NORMAL_PAGE_TYPE), 0,
       DRV_ERROR_PARA_ERROR},
      {"RUNTIME normal 4 KiB pages", 8192,
       with(device_prop(0, MEM_NORMAL_PAGE_TYPE), [](drv_mem_prop& p) { p.module_id = 7; }), 0,
       DRV_ERROR_NONE},
      {"RUNTIME normal, not whole pages", 8193,
       with(device_prop(0, MEM_NORMAL_PAGE_TYPE), [](drv_mem_prop& p) { p.module_id = 7; }), 0,
       DRV_ERROR_PARA_ERROR},
      {"device 64 GiB + 2 MiB", 64 * kGiB + 2 * kMiB, dev0, 0, DRV_ERROR_OUT_OF_MEMORY},
      {"host huge", 4 * kMiB, host_prop(), 0, DRV_ERROR_NONE},
      {"host giant P2P DDR", 3 * kMiB, host_prop(MEM_GIANT_PAGE_TYPE, MEM_P2P_DDR_TYPE), 0,
       DRV_ERROR_NONE},
      {"device giant", 3 * kMiB, device_prop(0, MEM_GIANT_PAGE_TYPE), 0, DRV_ERROR_NONE},
  };
  for (const CreateCase& c : cases) {
    drv_mem_handle_t* h = nullptr;
    EXPECT_EQ(halMemCreate(&h, c.size, &c.prop, c.flags), c.expect) << c.what;
    if (c.expect == DRV_ERROR_NONE) {
      EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE) << c.what;
    }
  }
  drv_mem_handle_t* h = nullptr;
  EXPECT_EQ(halMemCreate(nullptr, 2 * kMiB, &dev0, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemCreate(&h, 2 * kMiB, nullptr, 0), DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalHandles, PropertiesAreTheCreatePropAndTheHandleIsPromoted) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop asked = device_prop(0, MEM_NORMAL_PAGE_TYPE, MEM_P2P_HBM_TYPE);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &asked, 0), DRV_ERROR_NONE);
  drv_mem_prop got{};
  ASSERT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(got.side, asked.side);
  EXPECT_EQ(got.devid, 0u);
  EXPECT_EQ(got.module_id, static_cast<uint32_t>(APP_MODULE_ID));
  EXPECT_EQ(got.pg_type, static_cast<uint32_t>(MEM_NORMAL_PAGE_TYPE));  // as asked, not as used
  EXPECT_EQ(got.mem_type, static_cast<uint32_t>(MEM_P2P_HBM_TYPE));
  // The page actually used is 2 MiB: a 2 MiB handle maps at any 2 MiB-aligned address.
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(nullptr, h), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  // Host memory: devid 0 as created.
  const drv_mem_prop host = host_prop();
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &host, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(got.side, static_cast<uint32_t>(MEM_HOST_SIDE));
  EXPECT_EQ(got.devid, 0u);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
}

TEST(FakeHalHandles, StaleAndForgedHandlesAreRefused) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  uint64_t forged_storage[16] = {};
  auto* forged = reinterpret_cast<drv_mem_handle_t*>(forged_storage);
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  drv_mem_prop got{};
  uint64_t token = 0;
  HandleAttr attr{};
  for (drv_mem_handle_t* bad : {h, forged}) {
    const bool stale = bad == h;
    EXPECT_EQ(halMemRelease(bad), DRV_ERROR_INVALID_VALUE);
    EXPECT_EQ(halMemGetAllocationPropertiesFromHandle(&got, bad), DRV_ERROR_INVALID_VALUE);
    // A released handle reads ref 0: map refuses it for want of resources (§7.1 #2).
    EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, bad, 0),
              stale ? DRV_ERROR_NO_RESOURCES : DRV_ERROR_INVALID_VALUE);
    EXPECT_EQ(halMemExportToShareableHandle(bad, MEM_HANDLE_TYPE_NONE, 0, &token),
              DRV_ERROR_INVALID_VALUE);
    EXPECT_EQ(halMemHandleGetAttribute(bad, HANDLE_ATTR_MEM_MAP_ROUTE, &attr),
              DRV_ERROR_INVALID_VALUE);
  }
  EXPECT_EQ(halMemRelease(nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

struct GranularityCase {
  const char* what;
  drv_mem_prop prop;
  int option;
  drvError_t expect;
  size_t value;
};

TEST(FakeHalHandles, Granularity) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  drv_mem_prop runtime_host = host_prop(MEM_NORMAL_PAGE_TYPE);
  runtime_host.devid = 65;
  runtime_host.module_id = RUNTIME_MODULE_ID;
  const GranularityCase cases[] = {
      {"device huge minimum", device_prop(0), 0, DRV_ERROR_NONE, 2 * kMiB},
      {"device huge recommended", device_prop(0), 1, DRV_ERROR_NONE, 2 * kMiB},
      {"device normal", device_prop(0, MEM_NORMAL_PAGE_TYPE), 0, DRV_ERROR_NONE, 2 * kMiB},
      {"device giant", device_prop(0, MEM_GIANT_PAGE_TYPE), 0, DRV_ERROR_NONE, kGiB},
      {"host giant", host_prop(MEM_GIANT_PAGE_TYPE), 1, DRV_ERROR_NONE, kGiB},
      {"RUNTIME host normal minimum", runtime_host, 0, DRV_ERROR_NONE, page},
      {"RUNTIME host normal recommended", runtime_host, 1, DRV_ERROR_NONE, 2 * kMiB},
      {"option 2", device_prop(0), 2, DRV_ERROR_NOT_SUPPORT, 0},
      {"option UNDEF", device_prop(0), 65535, DRV_ERROR_NOT_SUPPORT, 0},
      {"side 3", with(device_prop(0), [](drv_mem_prop& p) { p.side = 3; }), 0,
       DRV_ERROR_INVALID_VALUE, 0},
      {"device 64", device_prop(64), 0, DRV_ERROR_INVALID_VALUE, 0},
      {"device 66", device_prop(66), 0, DRV_ERROR_INVALID_VALUE, 0},
      {"page type 3", device_prop(0, 3), 0, DRV_ERROR_INVALID_VALUE, 0},
      {"memory type 5", device_prop(0, 1, 5), 0, DRV_ERROR_INVALID_VALUE, 0},
      {"reserve", with(device_prop(0), [](drv_mem_prop& p) { p.reserve = 2; }), 0,
       DRV_ERROR_INVALID_VALUE, 0},
      {"host devid 3", with(host_prop(), [](drv_mem_prop& p) { p.devid = 3; }), 0,
       DRV_ERROR_NOT_SUPPORT, 0},
  };
  for (const GranularityCase& c : cases) {  // no device is open: granularity needs none (v2)
    size_t g = 0;
    EXPECT_EQ(halMemGetAllocationGranularity(
                  &c.prop, static_cast<drv_mem_granularity_options>(c.option), &g),
              c.expect)
        << c.what;
    if (c.expect == DRV_ERROR_NONE) {
      EXPECT_EQ(g, c.value) << c.what;
    }
  }
  const drv_mem_prop p = device_prop(0);
  EXPECT_EQ(halMemGetAllocationGranularity(&p, MEM_ALLOC_GRANULARITY_MINIMUM, nullptr),
            DRV_ERROR_INVALID_VALUE);
  size_t g = 0;
  EXPECT_EQ(halMemGetAllocationGranularity(nullptr, MEM_ALLOC_GRANULARITY_MINIMUM, &g),
            DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalHandles, MapRouteAttribute) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  HandleAttr attr{7, {}};
  EXPECT_EQ(halMemHandleGetAttribute(h, HANDLE_ATTR_MEM_MAP_ROUTE, &attr), DRV_ERROR_NONE);
  EXPECT_EQ(attr.mem_map_route, 0u);
  EXPECT_EQ(halMemHandleSetAttribute(h, HANDLE_ATTR_MEM_MAP_ROUTE, {MEM_MAP_DEFAULT_PATH, {}}),
            DRV_ERROR_NONE);
  // Ascend910B1 (A2) has no SIO/HCCS or UB routes: "not exist" (the runtime's 207021).
  EXPECT_EQ(halMemHandleSetAttribute(h, HANDLE_ATTR_MEM_MAP_ROUTE, {MEM_MAP_EXBUS, {}}),
            DRV_ERROR_NOT_EXIST);
  EXPECT_EQ(halMemHandleSetAttribute(h, HANDLE_ATTR_TYPE_MAX, {0, {}}), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemHandleGetAttribute(h, HANDLE_ATTR_TYPE_MAX, &attr), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemHandleGetAttribute(h, HANDLE_ATTR_MEM_MAP_ROUTE, nullptr),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
}

TEST(FakeHalHandles, HostNumaMemoryWhereTheHostHasNuma) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  drv_mem_prop prop = host_prop();
  prop.side = MEM_HOST_NUMA_SIDE;
  prop.devid = 0;  // node 0
  drv_mem_handle_t* h = nullptr;
  const drvError_t r = halMemCreate(&h, 2 * kMiB, &prop, 0);
  if (!halSupportFeature(0, FEATURE_SVM_VMM_NORMAL_GRANULARITY)) {
    EXPECT_EQ(r, DRV_ERROR_NOT_SUPPORT);
    return;
  }
  ASSERT_EQ(r, DRV_ERROR_NONE);
  drv_mem_prop got{};
  ASSERT_EQ(halMemGetAllocationPropertiesFromHandle(&got, h), DRV_ERROR_NONE);
  EXPECT_EQ(got.side, static_cast<uint32_t>(MEM_HOST_NUMA_SIDE));
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  prop.devid = 63;  // no such node: the kernel's EINVAL
  EXPECT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_PARA_ERROR);
}

}  // namespace
}  // namespace fakehal_test
