// Managed memory: aclrtMemManagedAdvise and what it changes (behavior.md §10; emulation.md §6:
// READ_MOSTLY keeps read-only copies, PREFERRED_LOCATION pins residency, ACCESSED_BY keeps a
// processor's mapping). The attribute encodings are in managed_attr_test.cpp.
#include <cstring>
#include <string>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

class ManagedAdviceTest : public ManagedTest {};

// READ_MOSTLY: a device read makes a read copy (a device fault, one page to the device, once per
// device) and the page stays where it is, so the CPU reads it without faulting.
TEST_F(ManagedAdviceTest, ReadMostlyGivesDevicesReadCopies) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  const std::string pat = pattern(4 * kMiB, 6);
  std::memcpy(p, pat.data(), pat.size());
  ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);  // page 0 only
  ManagedDelta d;
  EXPECT_EQ(get(p, k2M), pat.substr(0, k2M));
  d.expect(0, 1, 1, 0, "device 0 gets a read copy of page 0");
  EXPECT_EQ(get(p + 100, 1000), pat.substr(100, 1000));
  d.expect(0, 0, 0, 0, "device 0 keeps its copy");
  EXPECT_EQ(std::memcmp(p, pat.data(), k2M), 0);
  d.expect(0, 0, 0, 0, "the CPU reads a read-mostly page in place");
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(get(p, k2M), pat.substr(0, k2M));
  d.expect(0, 1, 1, 0, "device 1 gets its own read copy");
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  // Page 1 has no advice: a device read migrates it and the CPU faults it back.
  EXPECT_EQ(get(p + k2M, k2M), pat.substr(k2M));
  d.expect(0, 1, 1, 0, "page 1 migrates");
  EXPECT_EQ(std::memcmp(p + k2M, pat.data() + k2M, k2M), 0);
  d.expect(1, 0, 0, 1, "page 1 comes back");
  // UNSET: device reads migrate page 0 again.
  ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_UNSET_READ_MOSTLY, kDev0), kOk);
  EXPECT_EQ(get(p, k2M), pat.substr(0, k2M));
  d.expect(0, 1, 1, 0, "without the advice page 0 migrates");
  EXPECT_EQ(std::memcmp(p, pat.data(), k2M), 0);
  d.expect(1, 0, 0, 1, "and the CPU faults it back");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// PREFERRED_LOCATION device 0: a device-0 operation migrates the page there, and the CPU then
// reaches it in place (no host fault) and reads the device's bytes. Both when the CPU had mapped
// the pages before (it wrote them) and when it never touched them.
TEST_F(ManagedAdviceTest, PreferredDeviceKeepsThePageThereAndTheCpuReachesIt) {
  for (bool cpu_touched_first : {true, false}) {
    SCOPED_TRACE(cpu_touched_first ? "the CPU wrote the pages first" : "the CPU never touched the pages");
    char* p = managed(4 * kMiB);
    ASSERT_NE(p, nullptr);
    REQUIRE_MANAGED_TRACKING();
    if (cpu_touched_first) std::memset(p, 0x01, 4 * kMiB);
    ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, kDev0), kOk);
    ManagedDelta d;
    ASSERT_EQ(aclrtMemset(p, 4 * kMiB, 0x33, 4 * kMiB), kOk);
    d.expect(0, 2, 2, 0, "device 0 takes both pages");
    EXPECT_TRUE(all_bytes(std::string(p, 4 * kMiB), 0x33));
    d.expect(0, 0, 0, 0, "the CPU reads in place");
    std::memset(p + 10, 0x44, 10);
    EXPECT_EQ(get(p, 30), std::string(10, 0x33) + std::string(10, 0x44) + std::string(10, 0x33));
    d.expect(0, 0, 0, 0, "the CPU writes in place and device 0 sees it without faulting");
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// PREFERRED_LOCATION host and ACCESSED_BY device 0 leave the pages on the host: device 0 reaches
// them in place (nothing migrates, no fault). UNSET restores migration.
TEST_F(ManagedAdviceTest, PreferredHostOrAccessedByDeviceLeavesThePagesOnTheHost) {
  const struct {
    const char* name;
    aclrtMemManagedAdviseType set, unset;
    aclrtMemManagedLocation where;
    char value;  // the first memset; the one after UNSET writes value + 1
  } cases[] = {
      {"PREFERRED_LOCATION host", ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
       ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION, kHost, 0x55},
      {"ACCESSED_BY device 0", ACL_MEM_ADVISE_SET_ACCESSED_BY, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, kDev0,
       0x77},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    char* p = managed(4 * kMiB);
    ASSERT_NE(p, nullptr);
    REQUIRE_MANAGED_TRACKING();
    ASSERT_EQ(advise(p, 4 * kMiB, c.set, c.where), kOk);
    ManagedDelta d;
    ASSERT_EQ(aclrtMemset(p, 4 * kMiB, c.value, 4 * kMiB), kOk);
    d.expect(0, 0, 0, 0, "device 0 writes the host pages in place");
    EXPECT_TRUE(all_bytes(std::string(p, 4 * kMiB), c.value));
    d.expect(0, 0, 0, 0, "the pages never left the host: no host fault");
    ASSERT_EQ(advise(p, 4 * kMiB, c.unset, c.where), kOk);
    ASSERT_EQ(aclrtMemset(p, 4 * kMiB, c.value + 1, 4 * kMiB), kOk);
    d.expect(0, 2, 2, 0, "UNSET: both pages migrate again");
    EXPECT_TRUE(all_bytes(std::string(p, 4 * kMiB), c.value + 1));
    d.expect(2, 0, 0, 2, "and fault back");
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// ACCESSED_BY host: the page migrates on a device operation but the CPU keeps its mapping, so a
// CPU read does not fault and sees the device's bytes (whether or not the CPU touched it before).
TEST_F(ManagedAdviceTest, AccessedByHostKeepsTheCpuMapping) {
  for (bool cpu_touched_first : {true, false}) {
    SCOPED_TRACE(cpu_touched_first ? "the CPU wrote the pages first" : "the CPU never touched the pages");
    char* p = managed(4 * kMiB);
    ASSERT_NE(p, nullptr);
    REQUIRE_MANAGED_TRACKING();
    if (cpu_touched_first) std::memset(p, 0x01, 4 * kMiB);
    ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_ACCESSED_BY, kHost), kOk);
    ManagedDelta d;
    ASSERT_EQ(aclrtMemset(p, 4 * kMiB, 0x66, 4 * kMiB), kOk);
    d.expect(0, 2, 2, 0, "both pages migrate to device 0");
    EXPECT_TRUE(all_bytes(std::string(p, k2M), 0x66));
    d.expect(0, 0, 0, 0, "page 0 (ACCESSED_BY host) is read in place");
    EXPECT_TRUE(all_bytes(std::string(p + k2M, k2M), 0x66));
    d.expect(1, 0, 0, 1, "page 1 (no advice) faults back");
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// Advice applies to whole 2 MiB pages (the kernel rounds ptr down and size up, §10).
TEST_F(ManagedAdviceTest, AdviceCoversWholePages) {
  char* p = managed(6 * kMiB);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(advise(p + k2M - 1, 2, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);  // pages 0 and 1
  int32_t v = -7;
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, 4 * kMiB, &v, 4), kOk);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p + 4 * kMiB, 1, &v, 4), kOk);
  EXPECT_EQ(v, 0) << "page 2 has no advice";
  EXPECT_EQ(aclrtFree(p), kOk);
}

// §10 aclrtMemManagedAdvise misuse: p NULL / size 0 → 100000; advise > 5 → 107000; DEVICE id
// outside [0, deviceCount-1] → 107000; no context → 107002; range outside the UVM window →
// 107000; unallocated pages → 507899; a location that is invalid for the advice (INVALID type,
// ...) → 507899. READ_MOSTLY needs no location.
TEST_F(ManagedAdviceTest, MisuseTable) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const NotManaged n = not_managed();
  const auto inv = mloc(ACL_MEM_LOCATIONTYPE_INVALID, 0);
  const auto set_pref = ACL_MEM_ADVISE_SET_PREFERRED_LOCATION;
  const auto set_acc = ACL_MEM_ADVISE_SET_ACCESSED_BY;
  const auto set_rm = ACL_MEM_ADVISE_SET_READ_MOSTLY;
  struct Row {
    const char* name;
    const void* ptr;
    uint64_t size;
    int advice;
    aclrtMemManagedLocation where;
    aclError want;
  } rows[] = {
      {"ptr NULL", nullptr, k2M, set_pref, kDev0, kParam},
      {"size 0", p, 0, set_pref, kDev0, kParam},
      {"ptr NULL and advise 6 (ACL layer first)", nullptr, k2M, 6, kDev0, kParam},
      {"advise 6", p, k2M, 6, kDev0, kRtParam},
      {"advise 0x7fffffff", p, k2M, 0x7fffffff, kDev0, kRtParam},
      {"advise -1", p, k2M, -1, kDev0, kRtParam},
      {"device id 8", p, k2M, set_pref, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8), kRtParam},
      {"device id -1", p, k2M, set_acc, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, -1), kRtParam},
      {"device id 8 with READ_MOSTLY", p, k2M, set_rm, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8), kRtParam},
      {"plain host memory", n.plain, NotManaged::kPlainSize, set_rm, kDev0, kRtParam},
      {"aclrtMalloc memory", n.dev, k2M, set_pref, kDev0, kRtParam},
      {"freed range in the window", n.freed, k2M, set_pref, kDev0, kDrv},
      {"range running past the allocation", p, 6 * kMiB, set_rm, kDev0, kDrv},
      {"PREFERRED with type INVALID", p, k2M, set_pref, inv, kDrv},
      {"ACCESSED_BY with type INVALID", p, k2M, set_acc, inv, kDrv},
      {"PREFERRED with type 9", p, k2M, set_pref, mloc(9, 0), kDrv},
      {"UNSET_ACCESSED_BY with type INVALID", p, k2M, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, inv, kDrv},
      {"PREFERRED with HOST_NUMA_CURRENT (not resolved for advice)", p, k2M, set_pref,
       mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT, 0), kDrv},
      {"PREFERRED with HOST_NUMA node 4096 (offline)", p, k2M, set_pref, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 4096), kDrv},
      {"ACCESSED_BY with HOST_NUMA node -1", p, k2M, set_acc, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, -1), kDrv},
      {"READ_MOSTLY with type INVALID (no location needed)", p, k2M, set_rm, inv, kOk},
      {"UNSET_READ_MOSTLY with type INVALID", p, k2M, ACL_MEM_ADVISE_UNSET_READ_MOSTLY, inv, kOk},
      {"PREFERRED host", p, k2M, set_pref, kHost, kOk},
      {"ACCESSED_BY device 7", p, k2M, set_acc, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 7), kOk},
  };
  // The advice travels as an int: values outside the enum must not be loaded as the enum (UBSan).
  using AdviseFn = aclError (*)(const void*, uint64_t, int, aclrtMemManagedLocation);
  const auto advise_raw = reinterpret_cast<AdviseFn>(&aclrtMemManagedAdvise);
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(advise_raw(r.ptr, r.size, r.advice, r.where), r.want);
  }
  // Refused advice changed nothing: only the accepted rows left a mark.
  int32_t v = 0;
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, k2M, &v, 4), kOk);
  EXPECT_EQ(v, 0) << "SET then UNSET";
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, k2M, &v, 4), kOk);
  EXPECT_EQ(v, -1) << "host";
  // No current context → 107002.
  aclrtContext c = nullptr;
  ASSERT_EQ(aclrtCreateContext(&c, 0), kOk);
  ASSERT_EQ(aclrtDestroyContext(c), kOk);
  EXPECT_EQ(aclrtMemManagedAdvise(p, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kNoContext);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  release(n);
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
