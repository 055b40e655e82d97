// The fake driver library's devices (hal.md §1.1 stub test, §2, §3.10, §5 host facts): what works
// before any open, INVALID_HANDLE from the memory calls until a device is opened and again after
// the last close, open/close codes, device information, features, P2P, memory information.
#include <gtest/gtest.h>

#include <functional>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

TEST(FakeHalDevices, PassesTheStubTest) {
  int version = -1;
  uint32_t count = 0xFFFFFFFF;
  EXPECT_EQ(halGetAPIVersion(&version), DRV_ERROR_NONE);
  EXPECT_EQ(version, 0x072418);
  EXPECT_EQ(drvGetDevNum(&count), DRV_ERROR_NONE);
  EXPECT_EQ(count, static_cast<uint32_t>(kDevices));
  EXPECT_EQ(halGetAPIVersion(nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvGetDevNum(nullptr), DRV_ERROR_INVALID_VALUE);
}

// Every memory, pointer-query, sharing and copy call answers INVALID_HANDLE before any device is
// opened (§2) and again once every device was closed (§7.1 #7).
void expect_all_refused(const char* when) {
  SCOPED_TRACE(when);
  uint8_t host[64] = {};
  void* va = nullptr;
  drv_mem_handle_t* h = nullptr;
  const drv_mem_prop prop = device_prop(0);
  drv_mem_access_desc desc{MEM_ACCESS_TYPE_READWRITE, {1, MEM_DEV_SIDE}, {0, 0}};
  drv_mem_location loc{0, MEM_DEV_SIDE};
  uint64_t flags = 0, token = 0;
  DVattribute attr{};
  DVdeviceptr base = 0;
  size_t size = 0;
  MemInfo info{};
  int pid = 1;
  ShareHandleAttr sattr{};
  ShareHandleGetInfo sinfo{};
  const std::vector<std::pair<const char*, std::function<drvError_t()>>> calls = {
      {"halMemAddressReserve", [&] { return halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0); }},
      {"halMemAddressFree", [&] { return halMemAddressFree(reinterpret_cast<void*>(1ull << 44)); }},
      {"halMemCreate", [&] { return halMemCreate(&h, 2 * kMiB, &prop, 0); }},
      {"halMemMap", [&] { return halMemMap(reinterpret_cast<void*>(1ull << 44), 2 * kMiB, 0,
                                           reinterpret_cast<drv_mem_handle_t*>(host), 0); }},
      {"halMemUnmap", [&] { return halMemUnmap(reinterpret_cast<void*>(1ull << 44)); }},
      {"halMemSetAccess", [&] { return halMemSetAccess(host, 2 * kMiB, &desc, 1); }},
      {"halMemGetAccess", [&] { return halMemGetAccess(host, &loc, &flags); }},
      {"halMemRetainAllocationHandle", [&] { return halMemRetainAllocationHandle(&h, host); }},
      {"halMemGetAddressRange", [&] { return halMemGetAddressRange(ptr(host), &base, &size); }},
      {"drvMemGetAttribute", [&] { return drvMemGetAttribute(ptr(host), &attr); }},
      {"halMemAlloc", [&] { return halMemAlloc(&va, 4096, 0x2100000000900800ull); }},
      {"halMemFree", [&] { return halMemFree(host); }},
      {"halMemGetInfo", [&] { return halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, &info); }},
      {"drvMemcpy", [&] { return drvMemcpy(ptr(host), 32, ptr(host + 32), 32); }},
      {"drvMemsetD8", [&] { return drvMemsetD8(ptr(host), 64, 1, 64); }},
      {"halMemSetPidToShareableHandle",
       [&] { return halMemSetPidToShareableHandle(0x100000001ull, &pid, 1); }},
      {"halMemImportFromShareableHandle",
       [&] { return halMemImportFromShareableHandle(0x100000001ull, 0, &h); }},
      {"halMemShareHandleSetAttribute",
       [&] {
         return halMemShareHandleSetAttribute(0x100000001ull,
                                              SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, sattr);
       }},
      {"halMemShareHandleInfoGet", [&] { return halMemShareHandleInfoGet(0x1ull, &sinfo); }},
      {"halMemExportToShareableHandle",
       [&] { return halMemExportToShareableHandle(reinterpret_cast<drv_mem_handle_t*>(host),
                                                  MEM_HANDLE_TYPE_NONE, 0, &token); }},
      {"drvMemPrefetchToDevice", [&] { return drvMemPrefetchToDevice(1ull << 44, 4096, 1); }},
  };
  for (const auto& [name, call] : calls) EXPECT_EQ(call(), DRV_ERROR_INVALID_HANDLE) << name;
}

TEST(FakeHalDevices, MemoryCallsAreRefusedUntilADeviceIsOpenAndAfterTheLastClose) {
  expect_all_refused("before any open");
  {
    OpenDevices open({0, 3});
    ASSERT_TRUE(open.ok());
    DVattribute attr{};
    uint8_t host[16];
    EXPECT_EQ(drvMemGetAttribute(ptr(host), &attr), DRV_ERROR_NONE);
  }
  expect_all_refused("after every device was closed");
}

TEST(FakeHalDevices, SomeCallsWorkWithoutAnOpenDevice) {
  drv_mem_prop prop = device_prop(0);
  size_t g = 0;
  EXPECT_EQ(halMemGetAllocationGranularity(&prop, MEM_ALLOC_GRANULARITY_MINIMUM, &g),
            DRV_ERROR_NONE);
  EXPECT_EQ(g, 2 * kMiB);
  EXPECT_GT(drvDeviceGetBareTgid(), 0);
  EXPECT_EQ(drvDeviceGetBareTgid(), drvDeviceGetBareTgid());
  uint32_t id = 99;
  EXPECT_EQ(drvDeviceGetPhyIdByIndex(3, &id), DRV_ERROR_NONE);
  EXPECT_EQ(id, 3u);
  EXPECT_EQ(drvDeviceGetIndexByPhyId(5, &id), DRV_ERROR_NONE);
  EXPECT_EQ(id, 5u);
  EXPECT_EQ(drvDeviceGetIndexByPhyId(65, &id), DRV_ERROR_NONE);  // the host id
  EXPECT_EQ(id, 65u);
  EXPECT_EQ(drvDeviceGetPhyIdByIndex(kDevices, &id), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(drvDeviceGetPhyIdByIndex(0, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halGetHostID(&id), DRV_ERROR_NONE);
  EXPECT_EQ(id, 65u);
  int64_t v = -1;
  EXPECT_EQ(halGetDeviceInfo(0, MODULE_TYPE_SYSTEM, INFO_TYPE_SDID, &v), DRV_ERROR_NONE);
  EXPECT_EQ(v, 0);
  char name[32] = {};
  EXPECT_EQ(halGetSocVersion(0, name, sizeof name), DRV_ERROR_NONE);
  EXPECT_STREQ(name, "Ascend910B1");
  EXPECT_TRUE(halSupportFeature(0, FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR));
}

TEST(FakeHalDevices, OpenAndCloseCodes) {
  halDevOpenIn in{};
  halDevOpenOut out{};
  halDevCloseIn close_in{};
  EXPECT_EQ(halDeviceOpen(0, &in, nullptr), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halDeviceOpen(2000, &in, &out), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halDeviceOpen(kDevices, &in, &out), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(halDeviceClose(1, &close_in), DRV_ERROR_UNINIT);
  EXPECT_EQ(halDeviceOpen(1, &in, &out), DRV_ERROR_NONE);
  EXPECT_EQ(halDeviceOpen(1, &in, &out), DRV_ERROR_REPEATED_INIT);
  halDevCloseIn only_host{DEV_CLOSE_ONLY_HOST, 0, {}};
  EXPECT_EQ(halDeviceClose(1, &only_host), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halDeviceClose(1, nullptr), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halDeviceClose(1, &close_in), DRV_ERROR_NONE);
  EXPECT_EQ(halDeviceClose(1, &close_in), DRV_ERROR_UNINIT);
}

TEST(FakeHalDevices, TheSplitOpenPathOpensTheMemoryAgent) {
  // What the runtime does without halDeviceOpen: drvMemDeviceOpen, then drvDeviceOpen.
  EXPECT_EQ(drvMemDeviceOpen(kDevices, 0), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(drvMemDeviceOpen(2, 0), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemDeviceOpen(2, 0), DRV_ERROR_NONE);  // v2: no count, the set-up runs again
  void* info = nullptr;
  EXPECT_EQ(drvDeviceOpen(&info, 2), DRV_ERROR_NONE);
  EXPECT_NE(info, nullptr);
  EXPECT_EQ(drvDeviceOpen(&info, 2), DRV_ERROR_REPEATED_INIT);
  drv_mem_handle_t* h = nullptr;
  const drv_mem_prop prop = device_prop(2);
  EXPECT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(drvDeviceClose(2), DRV_ERROR_NONE);
  EXPECT_EQ(drvDeviceClose(2), DRV_ERROR_UNINIT);
  EXPECT_EQ(drvMemDeviceClose(2), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemDeviceClose(2), DRV_ERROR_UNINIT);
  EXPECT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_INVALID_HANDLE);
  // The agent alone (halMemAgentOpen).
  EXPECT_EQ(halMemAgentOpen(2, SVM_AGENT_HOST), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemAgentOpen(66, SVM_AGENT_DEVICE), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemAgentOpen(2, SVM_AGENT_DEVICE), DRV_ERROR_NONE);
  EXPECT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAgentClose(2, SVM_AGENT_DEVICE), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAgentClose(2, SVM_AGENT_DEVICE), DRV_ERROR_UNINIT);
}

TEST(FakeHalDevices, DeviceInformationAndFeatures) {
  int64_t v = 0;
  EXPECT_EQ(halGetDeviceInfo(0, MODULE_TYPE_SYSTEM, INFO_TYPE_SERVER_ID, &v),
            DRV_ERROR_NOT_SUPPORT);  // not a super-pod part
  EXPECT_EQ(halGetDeviceInfo(0, 1, INFO_TYPE_SDID, &v), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halGetDeviceInfo(kDevices, 0, INFO_TYPE_SDID, &v), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(halGetDeviceInfo(0, 0, INFO_TYPE_SDID, nullptr), DRV_ERROR_INVALID_VALUE);
  char small[5];
  EXPECT_EQ(halGetSocVersion(0, small, sizeof small), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halGetSocVersion(kDevices, small, sizeof small), DRV_ERROR_INVALID_DEVICE);
  EXPECT_FALSE(halSupportFeature(0, FEATURE_SVM_MEM_HOST_UVA));
  EXPECT_FALSE(halSupportFeature(kDevices, FEATURE_SVM_GET_USER_MALLOC_ATTR));
  UINT32 ssid = 7;
  EXPECT_EQ(drvMemSmmuQuery(0, &ssid), DRV_ERROR_NONE);
  EXPECT_EQ(drvMemSmmuQuery(0, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMapErrorCode(DRV_ERROR_NONE), 0);
  EXPECT_EQ(halMapErrorCode(DRV_ERROR_PARA_ERROR), 8);
  EXPECT_LT(halMapErrorCode(DRV_ERROR_NOT_SUPPORT), 9999);
  // Giant pages: the control query of §3.1.
  supportFeaturePara para{CTRL_SUPPORT_GIANT_PAGE_MASK, 0};
  uint64_t out = 0;
  size_t out_size = sizeof out;
  EXPECT_EQ(halMemCtl(CTRL_TYPE_SUPPORT_FEATURE, &para, sizeof para, &out, &out_size),
            DRV_ERROR_NONE);
  EXPECT_EQ(halMemCtl(CTRL_TYPE_SUPPORT_FEATURE, nullptr, sizeof para, &out, &out_size),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemCtl(1, &para, sizeof para, &out, &out_size), DRV_ERROR_NOT_SUPPORT);
  para.support_feature = 0x20;
  EXPECT_EQ(halMemCtl(CTRL_TYPE_SUPPORT_FEATURE, &para, sizeof para, &out, &out_size),
            DRV_ERROR_NOT_SUPPORT);
}

TEST(FakeHalDevices, PeerToPeer) {
  int can = -1;
  EXPECT_EQ(halDeviceCanAccessPeer(&can, 0, 1), DRV_ERROR_NONE);
  EXPECT_EQ(can, 1);
  EXPECT_EQ(halDeviceCanAccessPeer(&can, 2, 2), DRV_ERROR_NONE);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(halDeviceCanAccessPeer(&can, 0, kDevices), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(halDeviceCanAccessPeer(nullptr, 0, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halDeviceEnableP2P(0, 1, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halDeviceEnableP2P(0, 1, 0), DRV_ERROR_NONE);  // idempotent
  EXPECT_EQ(halDeviceEnableP2P(0, 0, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halDeviceEnableP2P(0, 1, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halDeviceEnableP2P(0, kDevices, 0), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(halDeviceEnableP2P(65, 0, 0), DRV_ERROR_NONE);  // a host-memory token's peer
  EXPECT_EQ(halDeviceDisableP2P(0, 1, 0), DRV_ERROR_NONE);
}

TEST(FakeHalDevices, MemoryInformationFollowsAllocations) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  MemInfo before{}, after{};
  ASSERT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, &before), DRV_ERROR_NONE);
  EXPECT_EQ(before.phy_info.huge_total, 64 * kGiB);
  EXPECT_EQ(before.phy_info.huge_total, 64 * kGiB);
  drv_mem_handle_t* h = nullptr;
  const drv_mem_prop prop = device_prop(0);
  ASSERT_EQ(halMemCreate(&h, 32 * kMiB, &prop, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_HBM_P2P_SIZE, &after), DRV_ERROR_NONE);
  EXPECT_EQ(after.phy_info.huge_free + 32 * kMiB, before.phy_info.huge_free);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  ASSERT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_DDR_SIZE, &after), DRV_ERROR_NONE);
  EXPECT_GT(after.phy_info.huge_total, 0u);  // the host's memory
  EXPECT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_ADDR_CHECK, &after), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemGetInfo(0, 12, &after), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemGetInfo(64, MEM_INFO_TYPE_HBM_SIZE, &after), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemGetInfo(kDevices, MEM_INFO_TYPE_HBM_SIZE, &after), DRV_ERROR_INVALID_DEVICE);
}

// The library reads its environment once per process: each configuration is a child of its own.
TEST(FakeHalDevices, ConfigurationFromTheEnvironment) {
  EXPECT_EQ(run_child({"--fake-hal-child=config", "3", "Ascend910B4", "-1",
                       std::to_string(32 * kGiB)},
                      {"ACLVMM_DEVICE_COUNT=3", "ACLVMM_SOC=Ascend910B4"}),
            0);
  EXPECT_EQ(run_child({"--fake-hal-child=config", "2", "Ascend910_9391", "7",
                       std::to_string(8 * kGiB)},
                      {"ACLVMM_DEVICE_COUNT=2", "ACLVMM_SOC=Ascend910_9391", "ACLVMM_SERVER_ID=7",
                       "ACLVMM_DEVICE_MEMORY=8G"}),
            0);
  // A super-pod part outside any pod reports the driver's "none", 0x3FF.
  EXPECT_EQ(run_child({"--fake-hal-child=config", "1", "Ascend910_9381", "1023",
                       std::to_string(64 * kGiB)},
                      {"ACLVMM_DEVICE_COUNT=1", "ACLVMM_SOC=Ascend910_9381",
                       "ACLVMM_SERVER_ID=1023"}),
            0);
  // Malformed values: no devices.
  for (const char* bad : {"ACLVMM_DEVICE_COUNT=0", "ACLVMM_DEVICE_COUNT=abc",
                          "ACLVMM_SOC=Ascend999",
                          "ACLVMM_DEVICE_MEMORY=1M", "ACLVMM_HOST_ACCESS=maybe",
                          "ACLVMM_SERVER_ID=1024", "ACLVMM_HAL_FAULTS=nosuch=3",
                          "ACLVMM_HAL_FAULTS=halMapErrorCode=3",
                          "ACLVMM_HAL_FAULTS=halGetAPIVersion@0=3",
                          "ACLVMM_HAL_FAULTS=halGetAPIVersion=0"}) {
    EXPECT_EQ(run_child({"--fake-hal-child=config", "0", "-", "-1", "0"}, {bad}), 0) << bad;
  }
}

}  // namespace
}  // namespace fakehal_test
