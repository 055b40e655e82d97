// The ACL calls over the hal backend and the fake driver library: the driver's results become
// the vendor runtime's codes (hal.md §3.0), each missing function gives 207000 to exactly the
// calls that need it (hal.md §1.3), and the special cases of hal.md §5.
#include <unistd.h>

#include <cstring>
#include <functional>
#include <vector>

#include "hal/api/hal_test_util.h"

namespace aclvmm_hal_test {
namespace {

using HalCodes = HalTest;
using HalMissing = HalTest;
using HalPaths = HalTest;

// hal.md §3.0, every row, through a call that hands the driver's result straight back.
TEST_F(HalCodes, EveryDriverResultBecomesTheRuntimesCode) {
  start();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  const struct {
    unsigned driver;
    aclError acl;
  } rows[] = {
      {1, 207004},  {2, 107001},  {3, 107000},  {58, 107000}, {83, 107000},     {4, 107017},
      {5, 107018},  {6, 207001},  {10, 207015}, {14, 207005}, {40, 207005},     {16, 507012},
      {25, 507901}, {27, 507051}, {33, 507010}, {37, 207012}, {43, 507000},     {46, 207006},
      {47, 207007}, {48, 207008}, {49, 207009}, {50, 207010}, {74, 507052},     {75, 207013},
      {76, 207014}, {82, 507037}, {84, 207011}, {89, 207020}, {0xfffe, 207000}, {7, 507899},
      {8, 507899},  {9, 507899},  {11, 507899}, {13, 507899}, {17, 507899},     {38, 507899},
      {42, 507899}, {51, 507899}, {79, 507899},
  };
  const aclrtPhysicalMemProp prop = device_prop(0);
  for (const auto& row : rows) {
    SCOPED_TRACE("drvError_t " + std::to_string(row.driver));
    inject("halMemCreate", row.driver);
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), row.acl);
    EXPECT_EQ(h, nullptr);
    // The message names the call that failed.
    EXPECT_NE(message().find("aclrtMallocPhysical"), std::string::npos) << message();
  }
  // Nothing was left behind: the next create works and is the only handle.
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

struct MissingCase {
  const char* hide;
  const char* what;
  std::function<aclError()> call;
  aclError expected;
  bool device_first = true;  // aclrtSetDevice(0) before the call
};

// A reservation with one handle mapped, and what the cases need around it.
struct Mapped {
  void* va = nullptr;
  aclrtDrvMemHandle h = nullptr;
  bool make() {
    aclrtPhysicalMemProp prop{};
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return aclrtMallocPhysical(&h, k2M, &prop, 0) == kOk &&
           aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0) == kOk &&
           aclrtMapMem(va, k2M, 0, h, 0) == kOk;
  }
};

// hal.md §1.3: each optional function hidden makes exactly the calls that need it answer 207000
// (NOT_SUPPORT from a present function gives the same, EveryDriverResultBecomesTheRuntimesCode).
TEST_F(HalMissing, EachHiddenFunctionGives207000ToTheCallsThatNeedIt) {
  aclrtPhysicalMemProp prop = device_prop(0);
  const std::vector<MissingCase> cases = {
      {"halMemCreate", "aclrtMallocPhysical",
       [&] {
         aclrtDrvMemHandle h = nullptr;
         return aclrtMallocPhysical(&h, k2M, &prop, 0);
       },
       207000},
      {"halMemAddressReserve", "aclrtReserveMemAddress",
       [] {
         void* va = nullptr;
         return aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0);
       },
       207000},
      {"halMemMap", "aclrtMapMem",
       [&] {
         aclrtDrvMemHandle h = nullptr;
         void* va = nullptr;
         if (aclrtMallocPhysical(&h, k2M, &prop, 0) != kOk) return aclError{-1};
         if (aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0) != kOk) return aclError{-2};
         return aclrtMapMem(va, k2M, 0, h, 0);
       },
       207000},
      {"halMemUnmap", "aclrtUnmapMem",
       [] {
         Mapped m;
         if (!m.make()) return aclError{-1};
         return aclrtUnmapMem(m.va);
       },
       207000},
      {"halMemSetAccess", "aclrtMemSetAccess",
       [] {
         Mapped m;
         if (!m.make()) return aclError{-1};
         aclrtMemAccessDesc d{};
         d.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
         d.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
         d.location.id = 1;
         return aclrtMemSetAccess(m.va, k2M, &d, 1);
       },
       207000},
      {"halMemGetAllocationGranularity", "aclrtMemGetAllocationGranularity",
       [&] {
         size_t g = 0;
         return aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g);
       },
       207000},
      {"halMemExportToShareableHandle", "aclrtMemExportToShareableHandle",
       [&] {
         aclrtDrvMemHandle h = nullptr;
         uint64_t token = 0;
         if (aclrtMallocPhysical(&h, k2M, &prop, 0) != kOk) return aclError{-1};
         return aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token);
       },
       207000},
      {"halMemSetPidToShareableHandle", "aclrtMemSetPidToShareableHandle",
       [&] {
         aclrtDrvMemHandle h = nullptr;
         uint64_t token = 0;
         if (aclrtMallocPhysical(&h, k2M, &prop, 0) != kOk) return aclError{-1};
         if (aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token) != kOk) {
           return aclError{-2};
         }
         int pid = ::getpid();
         return aclrtMemSetPidToShareableHandle(token, &pid, 1);
       },
       207000},
      {"halMemImportFromShareableHandle", "aclrtMemImportFromShareableHandle",
       [&] {
         aclrtDrvMemHandle h = nullptr, imported = nullptr;
         uint64_t token = 0;
         if (aclrtMallocPhysical(&h, k2M, &prop, 0) != kOk) return aclError{-1};
         if (aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token) != kOk) {
           return aclError{-2};
         }
         int pid = ::getpid();
         if (aclrtMemSetPidToShareableHandle(token, &pid, 1) != kOk) return aclError{-3};
         if (aclrtSetDevice(1) != kOk) return aclError{-4};
         return aclrtMemImportFromShareableHandle(token, 1, &imported);
       },
       207000},
      {"halDeviceOpen,drvDeviceOpen", "aclrtSetDevice", [] { return aclrtSetDevice(1); }, 207000,
       false},
      // Without halDeviceOpen the older pair opens the device (hal.md §2 step 1).
      {"halDeviceOpen", "aclrtSetDevice", [] { return aclrtSetDevice(1); }, kOk, false},
  };
  for (const MissingCase& c : cases) {
    SCOPED_TRACE(std::string(c.hide) + " hidden, " + c.what);
    start(c.hide);
    if (c.device_first) {
      ASSERT_EQ(aclrtSetDevice(0), kOk);
    }
    const aclError got = c.call();
    EXPECT_EQ(got, c.expected) << message();
    if (c.expected == 207000) {
      EXPECT_NE(message().find(c.what), std::string::npos) << message();
    }
    // Without the function hidden the same call works (the case is not refused for another
    // reason).
    (void)aclFinalize();
    started_ = false;
    start("");
    if (c.device_first) {
      ASSERT_EQ(aclrtSetDevice(0), kOk);
    }
    EXPECT_EQ(c.call(), kOk) << message();
    (void)aclFinalize();
    started_ = false;
  }
}

// hal.md §3.5: with DISABLE_PID_VALIDATION and no halMemShareHandleSetAttribute the export has
// happened when the call answers 207000 (the vendor does not undo it): a second export of the
// same handle is the driver's "already exported".
TEST_F(HalPaths, ExportWithoutTheAttributeFunctionFailsAfterExporting) {
  start("halMemShareHandleSetAttribute");
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  const aclrtPhysicalMemProp prop = device_prop(0);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kOk);
  uint64_t token = 0;
  EXPECT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            207000);
  EXPECT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token), 507899)
      << message();
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// hal.md §3.5 imports and the exporter query (halMemShareHandleInfoGet, halGetHostID): V1 goes on
// without the info query and skips the P2P step, so a failing halDeviceEnableP2P no longer
// matters; V2 DEFAULT answers 207000 without either function; with both, the P2P step runs and
// its failure is the import's.
TEST_F(HalPaths, ImportsAndTheExporterQuery) {
  struct Row {
    const char* hide;
    bool v2;
    aclError expected;
  };
  const Row rows[] = {
      {"", false, 107000},
      {"halMemShareHandleInfoGet", false, kOk},
      {"", true, 107000},
      {"halMemShareHandleInfoGet", true, ACL_ERROR_RT_FEATURE_NOT_SUPPORT},
      {"halGetHostID", true, ACL_ERROR_RT_FEATURE_NOT_SUPPORT},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.v2 ? "V2" : "V1") + ", hidden: " + row.hide);
    start(row.hide);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
    const aclrtPhysicalMemProp prop = device_prop(0);
    aclrtDrvMemHandle h = nullptr, imported = nullptr;
    uint64_t token = 0;
    ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kOk);
    ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token), kOk);
    int pid = ::getpid();
    ASSERT_EQ(aclrtMemSetPidToShareableHandle(token, &pid, 1), kOk);
    ASSERT_EQ(aclrtSetDevice(1), kOk);
    inject("halDeviceEnableP2P", 3);
    const aclError got = row.v2 ? aclrtMemImportFromShareableHandleV2(
                                      &token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &imported)
                                : aclrtMemImportFromShareableHandle(token, 1, &imported);
    EXPECT_EQ(got, row.expected) << message();
    if (got == kOk) {
      EXPECT_EQ(aclrtFreePhysical(imported), kOk);
    }
    clear_injections();
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    (void)aclFinalize();
    started_ = false;
  }
}

// hal.md §3.3: halMemUnmap's PARA_ERROR (not a mapping start, or a lookup failure) is 507899, and
// the mapping stays as it was.
TEST_F(HalPaths, UnmapParaErrorIs507899AndKeepsTheMapping) {
  start();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  Mapped m;
  ASSERT_TRUE(m.make());
  inject("halMemUnmap", 8);
  EXPECT_EQ(aclrtUnmapMem(m.va), 507899);
  const char bytes[4] = {1, 2, 3, 4};
  EXPECT_EQ(aclrtMemcpy(m.va, 4, bytes, 4, ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  EXPECT_EQ(aclrtUnmapMem(m.va), kOk);
  EXPECT_EQ(aclrtFreePhysical(m.h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(m.va), kOk);
}

// hal.md §2: REPEATED_INIT from halDeviceOpen is 207015, and the device stays unopened.
TEST_F(HalPaths, RepeatedInitFromDeviceOpenIs207015) {
  start();
  inject("halDeviceOpen", 10);
  EXPECT_EQ(aclrtSetDevice(0), 207015);
  EXPECT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtResetDevice(0), kOk);
}

// hal.md §3.10: the bare tgid is stored as the driver gives it, -1 included; the call succeeds.
TEST_F(HalPaths, BareTgidIsTheDriversAnswerEvenMinusOne) {
  start();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  int32_t pid = 0;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&pid), kOk);
  EXPECT_EQ(pid, static_cast<int32_t>(::getpid()));
  inject("drvDeviceGetBareTgid", 1);
  ASSERT_EQ(aclrtDeviceGetBareTgid(&pid), kOk);
  EXPECT_EQ(pid, -1);
}

// runtime-extra.md §4 with a driver whose chips are numbered apart from its device indices (a
// container: the fake's ACLVMM_HAL_FAKE_PHYSICAL_BASE=4 gives devices 0..7 the chips 4..11). The
// conversions give the driver's physical ids (drvDeviceGetPhyIdByIndex), a chip the driver does
// not have is the driver's miss (107000), logical ids stay the indices, and peer access, which
// names the peer by its chip to the driver, still works.
TEST_F(HalPaths, IdConversionsGiveTheDriversPhysicalIds) {
  if (void* loaded = ::dlopen("libascend_hal.so", RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(loaded);
    GTEST_SKIP() << "needs a process of its own: the fake has read its configuration already";
  }
  ASSERT_EQ(::setenv("ACLVMM_HAL_FAKE_PHYSICAL_BASE", "4", 1), 0);
  start();
  struct Row {
    aclError (*call)(const int32_t, int32_t* const);
    const char* name;
    int32_t in, code, out;
  };
  const Row rows[] = {
      {aclrtGetPhyDevIdByUserDevId, "PhyByUser", 1, kOk, 5},
      {aclrtGetPhyDevIdByLogicDevId, "PhyByLogic", 3, kOk, 7},
      {aclrtGetPhyDevIdByUserDevId, "PhyByUser", 8, ACL_ERROR_RT_PARAM_INVALID, -1},
      {aclrtGetUserDevIdByPhyDevId, "UserByPhy", 6, kOk, 2},
      {aclrtGetLogicDevIdByPhyDevId, "LogicByPhy", 4, kOk, 0},
      {aclrtGetLogicDevIdByPhyDevId, "LogicByPhy", 11, kOk, 7},
      {aclrtGetUserDevIdByPhyDevId, "UserByPhy", 1, ACL_ERROR_RT_PARAM_INVALID, -1},
      {aclrtGetUserDevIdByPhyDevId, "UserByPhy", 12, ACL_ERROR_RT_PARAM_INVALID, -1},
      {aclrtGetLogicDevIdByUserDevId, "LogicByUser", 2, kOk, 2},
      {aclrtGetUserDevIdByLogicDevId, "UserByLogic", 5, kOk, 5},
  };
  for (const Row& r : rows) {
    int32_t out = -1;
    EXPECT_EQ(r.call(r.in, &out), r.code) << r.name << "(" << r.in << "): " << message();
    EXPECT_EQ(out, r.out) << r.name << "(" << r.in << ")";
  }
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtDeviceEnablePeerAccess(1, 0), kOk) << message();
  EXPECT_EQ(aclrtDeviceDisablePeerAccess(1), kOk) << message();
  EXPECT_EQ(aclrtResetDevice(0), kOk);
  ::unsetenv("ACLVMM_HAL_FAKE_PHYSICAL_BASE");
}

// hal.md §3.12: HUGE_FIRST above 1 MiB asks for huge pages first and retries with normal ones;
// out of memory both times is 207001.
TEST_F(HalPaths, MallocRetriesWithNormalPagesThenGivesUp) {
  start();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  void* p = nullptr;
  inject("halMemAlloc", 6, 0, 1);
  ASSERT_EQ(aclrtMalloc(&p, 4 * k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk) << message();
  EXPECT_EQ(aclrtFree(p), kOk);
  inject("halMemAlloc", 6, 0, 2);
  p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 4 * k2M, ACL_MEM_MALLOC_HUGE_FIRST), 207001);
  EXPECT_EQ(p, nullptr);
  // HUGE_ONLY has no second try.
  inject("halMemAlloc", 6, 0, 1);
  EXPECT_EQ(aclrtMalloc(&p, 4 * k2M, ACL_MEM_MALLOC_HUGE_ONLY), 207001);
}

// The calls the driver library has no function for answer 207000 with a message that says so
// (runtime-extra.md calls included: IPC keys, host registration).
TEST_F(HalPaths, CallsWithoutADriverFunctionSaySo) {
  start();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  char key[128] = {0};
  EXPECT_EQ(aclrtIpcMemGetExportKey(d, k2M, key, sizeof key, 0), 207000);
  EXPECT_NE(message().find("hal backend"), std::string::npos) << message();
  alignas(4096) static char page[4096];
  void* dev_ptr = nullptr;
  EXPECT_EQ(aclrtHostRegister(page, sizeof page, ACL_HOST_REGISTER_MAPPED, &dev_ptr), 207000);
  EXPECT_NE(message().find("hal backend"), std::string::npos) << message();
  Mapped m;
  ASSERT_TRUE(m.make());
  aclrtMemAccessDesc read{};
  read.flags = ACL_RT_MEM_ACCESS_FLAGS_READ;
  read.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  read.location.id = 1;
  EXPECT_EQ(aclrtMemSetAccess(m.va, k2M, &read, 1), 207000);
  EXPECT_EQ(aclrtFree(d), kOk);
}

// Before any device is opened the driver answers INVALID_HANDLE (hal.md §2): the runtime passes
// it on as 107017 for calls that need no context.
TEST_F(HalPaths, BeforeAnyDeviceIsOpenTheDriverAnswersInvalidHandle) {
  start();
  void* va = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), 107017) << message();
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
}  // namespace aclvmm_hal_test
