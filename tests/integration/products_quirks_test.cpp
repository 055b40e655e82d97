// ACLVMM_QUIRKS=vendor (behavior.md, the table at the top, the "Decisions" list, §1 and §8):
// every row runs once in the default mode and once in vendor mode, each time in a fresh runtime
// with the same scene, and compares the call's result with the two columns. Rows whose vendor
// behaviour is undefined, a crash, or explicitly "not reproduced" give the same result in both
// modes; those rows are here too, so that a mode switch that leaks into them fails.
#include <numa.h>

#include <cctype>
#include <functional>

#include "api/test_env.h"
#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;

// What every row starts from (device 0 current, on an A3 SoC so that links and imports apply).
struct Scene {
  void* va = nullptr;               // 8 MiB reservation; `h` mapped at its start
  aclrtDrvMemHandle h = nullptr;    // 2 MiB on device 0
  void* free_va = nullptr;          // 8 MiB reservation with nothing mapped
  aclrtDrvMemHandle spare = nullptr;  // 2 MiB on device 0, not mapped
  void* host_va = nullptr;          // 2 MiB reservation for host memory, nothing mapped
  aclrtDrvMemHandle host = nullptr;   // 2 MiB of host memory, not mapped
};

Scene build_scene() {
  Scene s;
  s.va = reserve(8 * kMiB);
  s.h = make_handle(k2M);
  EXPECT_EQ(aclrtMapMem(s.va, k2M, 0, s.h, 0), kOk);
  s.free_va = reserve(8 * kMiB);
  s.spare = make_handle(k2M);
  s.host_va = reserve(k2M);
  aclrtPhysicalMemProp hp = host_prop(ACL_DDR_MEM_HUGE);
  EXPECT_EQ(aclrtMallocPhysical(&s.host, k2M, &hp, 0), kOk);
  return s;
}

aclError malloc_physical(aclrtPhysicalMemProp p, size_t size) {
  aclrtDrvMemHandle h = nullptr;
  const aclError rc = aclrtMallocPhysical(&h, size, &p, 0);
  if (rc == kOk) aclrtFreePhysical(h);
  return rc;
}

aclError set2(void* va, size_t size, aclrtMemAccessDesc a, aclrtMemAccessDesc b) {
  aclrtMemAccessDesc d[2] = {a, b};
  return aclrtMemSetAccess(va, size, d, 2);
}

// In-process export of the scene's handle, without a pid whitelist.
uint64_t export_h(const Scene& s) {
  uint64_t token = 0;
  EXPECT_EQ(aclrtMemExportToShareableHandle(s.h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            kOk);
  return token;
}

const bool kNuma = numa_available() >= 0;
const aclError kNumaOk = kNuma ? kOk : kNotSupported;
const aclError kNumaQuirk = kNuma ? kDrv : kNotSupported;

struct QuirkCase {
  const char* name;
  // The call under test; it returns an aclError, or where the name says so a value it read.
  std::function<int(Scene&)> call;
  int standard;  // ACLVMM_QUIRKS unset / none
  int vendor;    // ACLVMM_QUIRKS=vendor
};
void PrintTo(const QuirkCase& r, std::ostream* os) { *os << r.name; }

const QuirkCase kQuirkCases[] = {
    // Table: aclrtMemMapNoAccess works / 207000 (after the ACL checks).
    {"MemMapNoAccess, device handle",
     [](Scene& s) { return aclrtMemMapNoAccess(s.free_va, k2M, 0, s.spare, 0); }, kOk,
     kNotSupported},
    {"MemMapNoAccess, host handle",
     [](Scene& s) { return aclrtMemMapNoAccess(s.host_va, k2M, 0, s.host, 0); }, kOk,
     kNotSupported},
    {"MemMapNoAccess, size 0 (ACL layer first)",
     [](Scene& s) { return aclrtMemMapNoAccess(s.free_va, 0, 0, s.spare, 0); }, kParam, kParam},
    {"MapMem, device handle", [](Scene& s) { return aclrtMapMem(s.free_va, k2M, 0, s.spare, 0); },
     kOk, kOk},

    // Table and §8: NONE / READ → 207000; READWRITE works; the owner's entries are skipped.
    {"SetAccess NONE for device 1", [](Scene& s) { return set1(s.va, k2M, kNone, dev(1)); }, kOk,
     kNotSupported},
    {"SetAccess READ for device 1", [](Scene& s) { return set1(s.va, k2M, kRead, dev(1)); }, kOk,
     kNotSupported},
    {"SetAccess READ for HOST", [](Scene& s) { return set1(s.va, k2M, kRead, host()); }, kOk,
     kNotSupported},
    {"SetAccess NONE for the owner", [](Scene& s) { return set1(s.va, k2M, kNone, dev(0)); }, kOk,
     kNotSupported},
    {"SetAccess READWRITE for device 1", [](Scene& s) { return set1(s.va, k2M, kRW, dev(1)); }, kOk,
     kOk},
    {"SetAccess READWRITE for HOST", [](Scene& s) { return set1(s.va, k2M, kRW, host()); }, kOk,
     kOk},
    {"SetAccess READWRITE for device 1 twice (same flag)",
     [](Scene& s) {
       const aclError first = set1(s.va, k2M, kRW, dev(1));
       return first != kOk ? first : set1(s.va, k2M, kRW, dev(1));
     },
     kOk, kOk},
    {"SetAccess READWRITE then READ for device 1 (downgrade)",
     [](Scene& s) {
       const aclError first = set1(s.va, k2M, kRW, dev(1));
       return first != kOk ? first : set1(s.va, k2M, kRead, dev(1));
     },
     kOk, kNotSupported},
    {"SetAccess READWRITE then NONE for HOST (revoke)",
     [](Scene& s) {
       const aclError first = set1(s.va, k2M, kRW, host());
       return first != kOk ? first : set1(s.va, k2M, kNone, host());
     },
     kOk, kNotSupported},
    {"SetAccess READWRITE for the owner, then its flags",
     [](Scene& s) {
       const aclError rc = set1(s.va, k2M, kRW, dev(0));
       return rc != kOk ? rc : access_of(s.va, dev(0));
     },
     kRW, kRW},
    {"SetAccess READ for device 1 in the second descriptor",
     [](Scene& s) { return set2(s.va, k2M, desc(kRW, dev(1)), desc(kRead, dev(2))); }, kOk,
     kNotSupported},
    // Table: count > 1 is read with the 24-byte stride in both modes (the misread is not
    // reproduced).
    {"SetAccess count 2, then device 2's flags",
     [](Scene& s) {
       const aclError rc = set2(s.va, k2M, desc(kRW, dev(1)), desc(kRW, dev(2)));
       return rc != kOk ? rc : access_of(s.va, dev(2));
     },
     kRW, kRW},
    {"SetAccess HOST_NUMA location (§8)",
     [](Scene& s) { return set1(s.va, k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_HOST_NUMA, 0)); },
     kRtParam, kRtParam},
    {"SetAccess on a range that is not one mapping",
     [](Scene& s) { return set1(s.va, 4 * kMiB, kRW, dev(1)); }, kDrv, kDrv},

    // Decisions / §1: a size that is not a multiple of 2 MiB is rounded up / 507899; 1 GiB pages
    // round up in both.
    {"MallocPhysical device, 3 MiB",
     [](Scene&) { return malloc_physical(device_prop(0), 3 * kMiB); }, kOk, kDrv},
    {"MallocPhysical device, 1 byte", [](Scene&) { return malloc_physical(device_prop(0), 1); },
     kOk, kDrv},
    {"MallocPhysical host, 3 MiB",
     [](Scene&) { return malloc_physical(host_prop(ACL_DDR_MEM_HUGE), 3 * kMiB); }, kOk, kDrv},
    {"MallocPhysical HOST_NUMA node 0, 3 MiB",
     [](Scene&) {
       return malloc_physical(with_location(host_prop(ACL_DDR_MEM_HUGE), ACL_MEM_LOCATION_TYPE_HOST_NUMA, 0),
                              3 * kMiB);
     },
     kNumaOk, kNumaQuirk},
    {"MallocPhysical ACL_HBM_MEM_HUGE1G, 3 MiB",
     [](Scene&) { return malloc_physical(device_prop(0, ACL_HBM_MEM_HUGE1G), 3 * kMiB); }, kOk,
     kOk},
    {"MallocPhysical device, 4 MiB",
     [](Scene&) { return malloc_physical(device_prop(0), 4 * kMiB); }, kOk, kOk},

    // Decisions: aclrtMapMem geometry must be 2 MiB multiples in both modes.
    {"MapMem size 3 MiB", [](Scene& s) { return aclrtMapMem(s.free_va, 3 * kMiB, 0, s.spare, 0); },
     kDrv, kDrv},
    {"MapMem address 1 MiB into a reservation",
     [](Scene& s) { return aclrtMapMem(at(s.free_va, kMiB), k2M, 0, s.spare, 0); }, kDrv, kDrv},

    // Table rows whose vendor behaviour is undefined or a crash: aclvmm's answer in both modes.
    {"ReleaseMemAddress with a mapping left", [](Scene& s) { return aclrtReleaseMemAddress(s.va); },
     kDrv, kDrv},
    {"MapMem with a freed handle",
     [](Scene& s) {
       const aclError rc = aclrtFreePhysical(s.spare);
       return rc != kOk ? rc : aclrtMapMem(s.free_va, k2M, 0, s.spare, 0);
     },
     kRtParam, kRtParam},
    {"MapMem with a forged handle",
     [](Scene& s) {
       return aclrtMapMem(s.free_va, k2M, 0, reinterpret_cast<aclrtDrvMemHandle>(u64(s.h) ^ (1ull << 24)), 0);
     },
     kRtParam, kRtParam},
    {"FreePhysical twice while mapped (§1 vendor refcounts)",
     [](Scene& s) {
       const aclError rc = aclrtFreePhysical(s.h);
       return rc != kOk ? rc : aclrtFreePhysical(s.h);
     },
     kRtParam, kRtParam},
    {"Memcpy into a reserved, unmapped range",
     [](Scene& s) { return put(s.free_va, pattern(4096, 51)); }, kDrv, kDrv},
    {"Memcpy with destMax < count",
     [](Scene& s) {
       const std::string src(4096, 'x');
       return aclrtMemcpy(s.va, 4095, src.data(), src.size(), ACL_MEMCPY_HOST_TO_DEVICE);
     },
     kRtParam, kRtParam},
    {"Memcpy device to host with kind HOST_TO_DEVICE",
     [](Scene& s) {
       std::string out(4096, '\0');
       return aclrtMemcpy(&out[0], out.size(), s.va, out.size(), ACL_MEMCPY_HOST_TO_DEVICE);
     },
     kOk, kOk},
    {"Memset of host memory",
     [](Scene&) {
       std::string buf(64, 'a');
       return aclrtMemset(&buf[0], buf.size(), 0, buf.size());
     },
     kOk, kOk},

    // Decisions: links and imports.
    {"MemMapSetLink on a local handle, before mapping",
     [](Scene& s) { return aclrtMemMapSetLink(s.spare, ACL_RT_MEM_ACCESS_LINK_HCCS); }, kOk, kOk},
    {"MemMapSetLink on an imported handle, then mapping it",
     [](Scene& s) {
       const uint64_t token = export_h(s);
       aclError rc = aclrtSetDevice(1);
       aclrtDrvMemHandle imported = nullptr;
       if (rc == kOk) rc = aclrtMemImportFromShareableHandle(token, 1, &imported);
       if (rc == kOk) rc = aclrtMemMapSetLink(imported, ACL_RT_MEM_ACCESS_LINK_SIO);
       void* va = rc == kOk ? reserve(k2M) : nullptr;
       if (rc == kOk) rc = aclrtMapMem(va, k2M, 0, imported, 0);
       aclrtSetDevice(0);
       return rc;
     },
     kOk, kOk},
    {"Import in the exporting process onto the same device",
     [](Scene& s) {
       aclrtDrvMemHandle imported = nullptr;
       return aclrtMemImportFromShareableHandle(export_h(s), 0, &imported);
     },
     kDrv, kDrv},

    // Also required: PyTorch's probe, and the aclInit / aclFinalize reference counts.
    {"ReserveMemAddress(512 bytes, flags 1)",
     [](Scene&) {
       void* p = nullptr;
       const aclError rc = aclrtReserveMemAddress(&p, 512, 0, nullptr, 1);
       if (rc == kOk) aclrtReleaseMemAddress(p);
       return rc;
     },
     kOk, kOk},
    {"aclInit while initialised",
     [](Scene&) {
       const aclError rc = aclInit(nullptr);
       if (rc == ACL_ERROR_REPEAT_INITIALIZE) aclFinalize();  // drop the reference it counted
       return rc;
     },
     ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_REPEAT_INITIALIZE},
    {"aclFinalize with no reference left",
     [](Scene&) {
       aclrtResetDeviceForce(0);
       aclFinalize();
       const aclError rc = aclFinalize();
       aclInit(nullptr);  // the test's own runtime again
       aclrtSetDevice(0);
       return rc;
     },
     ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_REPEAT_FINALIZE},
};

class QuirkRow : public ::testing::TestWithParam<QuirkCase> {
 protected:
  void TearDown() override {
    soc_.restore();
    quirks_.restore();
  }
  // The row in a fresh A3 runtime with ACLVMM_QUIRKS=`mode` (nullptr: unset).
  int run(const char* mode) {
    EXPECT_EQ(soc_.set("Ascend910_9391"), 0);
    EXPECT_EQ(quirks_.set(mode), 0);
    EXPECT_EQ(aclInit(nullptr), kOk);
    EXPECT_EQ(aclrtSetDevice(0), kOk);
    Scene scene = build_scene();
    const int result = GetParam().call(scene);
    aclrtResetDeviceForce(1);
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);  // releases whatever the row left
    return result;
  }

 private:
  ScopedEnv soc_{"ACLVMM_SOC"}, quirks_{"ACLVMM_QUIRKS"};
};

TEST_P(QuirkRow, DefaultAndVendorColumns) {
  EXPECT_EQ(run(nullptr), GetParam().standard) << "ACLVMM_QUIRKS unset";
  EXPECT_EQ(run("none"), GetParam().standard) << "ACLVMM_QUIRKS=none";
  EXPECT_EQ(run("vendor"), GetParam().vendor) << "ACLVMM_QUIRKS=vendor";
}

std::string row_name(const ::testing::TestParamInfo<QuirkCase>& info) {
  std::string out;
  bool upper = true;
  for (const char* p = info.param.name; *p; ++p) {
    if (std::isalnum(static_cast<unsigned char>(*p))) {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p;
      upper = false;
    } else {
      upper = true;
    }
  }
  return std::to_string(info.index) + "_" + out;
}

INSTANTIATE_TEST_SUITE_P(Behavior, QuirkRow, ::testing::ValuesIn(kQuirkCases), row_name);

// In vendor mode a failed call leaves the mapping's access as it was: a grant that was refused
// is not half-applied, and the owner keeps READWRITE.
TEST(QuirkState, RefusedChangesLeaveAccessUnchanged) {
  ScopedEnv soc("ACLVMM_SOC", "Ascend910_9391"), quirks("ACLVMM_QUIRKS", "vendor");
  ASSERT_EQ(aclInit(nullptr), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  Scene s = build_scene();
  ASSERT_EQ(set1(s.va, k2M, kRW, dev(1)), kOk);
  EXPECT_EQ(set2(s.va, k2M, desc(kRW, dev(2)), desc(kRead, dev(3))), kNotSupported);
  EXPECT_EQ(access_of(s.va, dev(2)), kNone) << "the first descriptor must not apply alone";
  EXPECT_EQ(set1(s.va, k2M, kNone, dev(1)), kNotSupported);
  EXPECT_EQ(access_of(s.va, dev(1)), kRW);
  EXPECT_EQ(set1(s.va, k2M, kNone, dev(0)), kNotSupported);
  EXPECT_EQ(access_of(s.va, dev(0)), kRW);
  aclrtResetDeviceForce(0);
  EXPECT_EQ(aclFinalize(), kOk);
}

}  // namespace
