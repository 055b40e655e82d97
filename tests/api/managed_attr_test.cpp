// Managed memory: aclrtMemManagedGetAttr / GetAttrs — exact int32 encodings over all 2 MiB pages
// of the range, and the misuse rows (behavior.md §10).
#include <numa.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

using V = std::vector<int32_t>;

// The attribute travels as an int: values outside the enum must not be loaded as the enum (UBSan).
aclError get_attr_raw(int attribute, const void* p, size_t size, void* data, size_t data_size) {
  using Fn = aclError (*)(int, const void*, size_t, void*, size_t);
  return reinterpret_cast<Fn>(&aclrtMemManagedGetAttr)(attribute, p, size, data, data_size);
}

// One int32 attribute (fails the test when the call fails).
int32_t attr1(aclrtMemManagedRangeAttribute a, const void* p, size_t size) {
  int32_t v = 12345;
  EXPECT_EQ(aclrtMemManagedGetAttr(a, p, size, &v, sizeof v), kOk) << "attribute " << a;
  return v;
}
// PREFERRED_LOCATION, _TYPE, _ID.
V preferred(const void* p, size_t size) {
  return {attr1(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, size),
          attr1(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, p, size),
          attr1(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, p, size)};
}
// ACCESSED_BY with `slots` int32 slots.
V accessed_by(const void* p, size_t size, size_t slots = 4) {
  V v(slots, 12345);
  EXPECT_EQ(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, size, v.data(), slots * 4), kOk);
  return v;
}

class ManagedAttrTest : public ManagedTest {};

// READ_MOSTLY is 1 only if every page of the range has it.
TEST_F(ManagedAttrTest, ReadMostlyOnlyWhenEveryPageHasIt) {
  char* p = managed(6 * kMiB);
  ASSERT_NE(p, nullptr);
  const auto rm = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY;
  EXPECT_EQ(attr1(rm, p, 6 * kMiB), 0);
  ASSERT_EQ(advise(p + k2M, 4 * kMiB, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);  // pages 1-2
  EXPECT_EQ(attr1(rm, p, 6 * kMiB), 0) << "page 0 lacks it";
  EXPECT_EQ(attr1(rm, p + k2M, 4 * kMiB), 1);
  EXPECT_EQ(attr1(rm, p + k2M + 5, 1), 1);
  EXPECT_EQ(attr1(rm, p + k2M - 1, 2), 0) << "bytes of pages 0 and 1";
  EXPECT_EQ(attr1(rm, p, 1), 0);
  ASSERT_EQ(advise(p, 1, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);
  EXPECT_EQ(attr1(rm, p, 6 * kMiB), 1);
  ASSERT_EQ(advise(p + 4 * kMiB, k2M, ACL_MEM_ADVISE_UNSET_READ_MOSTLY, kDev0), kOk);
  EXPECT_EQ(attr1(rm, p, 6 * kMiB), 0);
  EXPECT_EQ(attr1(rm, p, 4 * kMiB), 1);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// PREFERRED_LOCATION: device id / −1 host / −2 mixed or unset; _TYPE: the common location type
// or 0; _ID: device or NUMA node id, else −2.
TEST_F(ManagedAttrTest, PreferredLocationEncodings) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  char* page1 = p + k2M;
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-2, 0, -2})) << "unset";
  ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, kDev0), kOk);
  EXPECT_EQ(preferred(p, k2M), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0})) << "device 0";
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-2, 0, -2})) << "device 0 and unset";
  ASSERT_EQ(advise(page1, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, kHost), kOk);
  EXPECT_EQ(preferred(page1, k2M), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2})) << "host";
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-2, 0, -2})) << "device 0 and host";
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 3)), kOk);
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{3, ACL_MEM_LOCATIONTYPE_DEVICE, 3})) << "device 3 on both";
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, kHost), kOk);
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-1, ACL_MEM_LOCATIONTYPE_HOST, -2})) << "host on both";
  ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0)), kOk);
  EXPECT_EQ(preferred(p, k2M), (V{-1, ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0})) << "host NUMA node 0";
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-1, 0, -2})) << "host NUMA and host: both the host, of two types";
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION, kHost), kOk);
  EXPECT_EQ(preferred(p, 4 * kMiB), (V{-2, 0, -2})) << "unset again";
  EXPECT_EQ(aclrtFree(p), kOk);
}

// The location attributes over two pages, for every kind of agreement between them
// (behavior.md §10): LOCATION asks which processor (a device id, or −1 for the host whatever its
// NUMA node), _TYPE asks for the common location type (0 INVALID if the types differ), _ID for the
// common id within one type that has ids (DEVICE, HOST_NUMA), else −2. The same rows hold for the
// preferred location (set by advice) and for the last prefetch location, read by GetAttr one at a
// time and by GetAttrs all at once.
struct LocationRow {
  const char* name;
  const aclrtMemManagedLocation* page0;  // nullptr: never set
  const aclrtMemManagedLocation* page1;
  V want;  // LOCATION, _TYPE, _ID over both pages
  bool needs_two_numa_nodes = false;
};

const aclrtMemManagedLocation kDev2 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 2);
const aclrtMemManagedLocation kNuma0 = mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0);
const aclrtMemManagedLocation kNuma1 = mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 1);

const LocationRow kLocationRows[] = {
    {"never set", nullptr, nullptr, {-2, 0, -2}},
    {"one page never set", &kDev0, nullptr, {-2, 0, -2}},
    {"the same device", &kDev2, &kDev2, {2, ACL_MEM_LOCATIONTYPE_DEVICE, 2}},
    {"devices differing in id", &kDev0, &kDev1, {-2, ACL_MEM_LOCATIONTYPE_DEVICE, -2}},
    {"devices differing in id, other order", &kDev2, &kDev0, {-2, ACL_MEM_LOCATIONTYPE_DEVICE, -2}},
    {"host and device", &kHost, &kDev1, {-2, 0, -2}},
    {"device and host", &kDev0, &kHost, {-2, 0, -2}},
    {"the host", &kHost, &kHost, {-1, ACL_MEM_LOCATIONTYPE_HOST, -2}},
    {"host NUMA node 0", &kNuma0, &kNuma0, {-1, ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0}},
    {"host and host NUMA node 0", &kHost, &kNuma0, {-1, 0, -2}},
    {"host NUMA node 0 and device", &kNuma0, &kDev0, {-2, 0, -2}},
    {"host NUMA nodes differing", &kNuma0, &kNuma1, {-1, ACL_MEM_LOCATIONTYPE_HOST_NUMA, -2}, true},
};

class ManagedLocationAttrTest : public ManagedTest {
 protected:
  // Gives one 2 MiB page its preferred location (advice) or its last prefetch location.
  void place(char* page, const aclrtMemManagedLocation& where, bool prefetch) {
    if (prefetch) {
      ASSERT_EQ(aclrtMemManagedPrefetchAsync(page, k2M, where, 0, nullptr), kOk);
      ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
    } else {
      ASSERT_EQ(advise(page, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, where), kOk);
    }
  }
  static std::vector<aclrtMemManagedRangeAttribute> family(bool prefetch) {
    if (prefetch) {
      return {ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
              ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID};
    }
    return {ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID};
  }
  // LOCATION, _TYPE, _ID by three GetAttr calls.
  static V one_by_one(bool prefetch, const void* p, size_t size) {
    V out;
    for (auto a : family(prefetch)) out.push_back(attr1(a, p, size));
    return out;
  }
  // LOCATION, _TYPE, _ID by one GetAttrs call.
  static V all_at_once(bool prefetch, const void* p, size_t size) {
    std::vector<aclrtMemManagedRangeAttribute> attrs = family(prefetch);
    V out(3, 12345);
    void* data[] = {&out[0], &out[1], &out[2]};
    size_t sizes[] = {4, 4, 4};
    EXPECT_EQ(aclrtMemManagedGetAttrs(attrs.data(), 3, p, size, data, sizes), kOk);
    return out;
  }
  // Every row for one family of attributes; each row on a fresh allocation.
  void run_rows(bool prefetch) {
    const bool two_nodes = numa_available() >= 0 && numa_max_node() >= 1;
    for (const LocationRow& r : kLocationRows) {
      SCOPED_TRACE(std::string(prefetch ? "last prefetch: " : "preferred: ") + r.name);
      if (r.needs_two_numa_nodes && !two_nodes) continue;  // node 1 is not a valid location here
      char* p = managed(4 * kMiB);
      ASSERT_NE(p, nullptr);
      if (r.page0) place(p, *r.page0, prefetch);
      if (r.page1) place(p + k2M, *r.page1, prefetch);
      EXPECT_EQ(one_by_one(prefetch, p, 4 * kMiB), r.want);
      EXPECT_EQ(all_at_once(prefetch, p, 4 * kMiB), r.want);
      // A range of one page agrees with itself: the page's own location, whatever the other says.
      EXPECT_EQ(one_by_one(prefetch, p + k2M, 1), all_at_once(prefetch, p + k2M, k2M));
      // The other family was not touched.
      EXPECT_EQ(one_by_one(!prefetch, p, 4 * kMiB), (V{-2, 0, -2}));
      EXPECT_EQ(aclrtFree(p), kOk);
    }
  }
};

TEST_F(ManagedLocationAttrTest, PreferredLocationOverPagesThatAgreeOrDiffer) { run_rows(false); }
TEST_F(ManagedLocationAttrTest, LastPrefetchLocationOverPagesThatAgreeOrDiffer) { run_rows(true); }

// Device ids are reported as user ids: with ASCEND_RT_VISIBLE_DEVICES=2,5 user device 1 is
// physical device 5, and two pages on user devices 0 and 1 still share the type DEVICE.
TEST_F(ManagedLocationAttrTest, IdsAreUserIdsUnderVisibleDevices) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,5");
  ASSERT_TRUE(env.ok());
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "last prefetch" : "preferred");
    char* p = managed(4 * kMiB);
    ASSERT_NE(p, nullptr);
    place(p, kDev1, prefetch);
    place(p + k2M, kDev1, prefetch);
    EXPECT_EQ(one_by_one(prefetch, p, 4 * kMiB), (V{1, ACL_MEM_LOCATIONTYPE_DEVICE, 1}));
    place(p, kDev0, prefetch);
    EXPECT_EQ(one_by_one(prefetch, p, 4 * kMiB), (V{-2, ACL_MEM_LOCATIONTYPE_DEVICE, -2}));
    EXPECT_EQ(all_at_once(prefetch, p, k2M), (V{0, ACL_MEM_LOCATIONTYPE_DEVICE, 0}));
    EXPECT_EQ(aclrtFree(p), kOk);
  }
}

// ACCESSED_BY: the processors every page names, host (−1) first, then device ids ascending,
// packed from slot 0; the other slots −2.
TEST_F(ManagedAttrTest, AccessedByListsHostThenDevicesAscending) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{-2, -2, -2, -2}));
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, kDev0), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, kHost), kOk);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{-1, 0, -2, -2}));
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 5)), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 2)), kOk);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{-1, 0, 2, 5}));
  EXPECT_EQ(accessed_by(p, 4 * kMiB, 6), (V{-1, 0, 2, 5, -2, -2}));
  EXPECT_EQ(accessed_by(p, 4 * kMiB, 2), (V{-1, 0})) << "as many as fit";
  ASSERT_EQ(advise(p + k2M, 1, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 2)), kOk);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{-1, 0, 5, -2})) << "device 2 is no longer on every page";
  EXPECT_EQ(accessed_by(p, k2M), (V{-1, 0, 2, 5})) << "page 0 still names it";
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, kDev0), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, kHost), kOk);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{5, -2, -2, -2}));
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_UNSET_ACCESSED_BY, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 5)), kOk);
  EXPECT_EQ(accessed_by(p, 4 * kMiB), (V{-2, -2, -2, -2}));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// aclrtMemManagedGetAttrs: several attributes in one call, each with its own buffer and size.
TEST_F(ManagedAttrTest, GetAttrsReturnsSeveralAttributesAtOnce) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 1)), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, kHost), kOk);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_ACCESSED_BY, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 4)), kOk);
  aclrtMemManagedRangeAttribute attrs[] = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                           ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                                           ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY};
  int32_t rm = 7, pref = 7;
  int32_t acc[3] = {7, 7, 7};
  void* data[] = {&rm, &pref, acc};
  size_t sizes[] = {4, 4, sizeof acc};
  ASSERT_EQ(aclrtMemManagedGetAttrs(attrs, 3, p, 4 * kMiB, data, sizes), kOk);
  EXPECT_EQ(rm, 1);
  EXPECT_EQ(pref, 1);
  EXPECT_EQ(V(acc, acc + 3), (V{-1, 4, -2}));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// §10 aclrtMemManagedGetAttr: p/data NULL, size 0 → 100000; attribute ∉ [1,8] → 107000; p not in
// the UVM window → 107000; dataSize not exactly 4 (ACCESSED_BY: not a multiple of 4) → 107000;
// unallocated pages → 507899; more ACCESSED_BY slots than memory can hold → 207001.
TEST_F(ManagedAttrTest, GetAttrMisuseTable) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const NotManaged n = not_managed();
  int32_t buf[4];
  const int rm = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, acc = ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY;
  struct Row {
    const char* name;
    int attribute;
    const void* ptr;
    size_t size;
    void* data;
    size_t data_size;
    aclError want;
  } rows[] = {
      {"ptr NULL", rm, nullptr, k2M, buf, 4, kParam},
      {"data NULL", rm, p, k2M, nullptr, 4, kParam},
      {"size 0", rm, p, 0, buf, 4, kParam},
      {"ptr NULL and attribute 0 (ACL layer first)", 0, nullptr, k2M, buf, 4, kParam},
      {"attribute 0", 0, p, k2M, buf, 4, kRtParam},
      {"attribute 9", 9, p, k2M, buf, 4, kRtParam},
      {"attribute -1", -1, p, k2M, buf, 4, kRtParam},
      {"dataSize 3", rm, p, k2M, buf, 3, kRtParam},
      {"dataSize 0 (not a list)", rm, p, k2M, buf, 0, kRtParam},
      {"dataSize 8 (not a list)", ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, k2M, buf, 8, kRtParam},
      {"dataSize 16 (not a list)", ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, p, k2M, buf, 16, kRtParam},
      {"ACCESSED_BY dataSize 3", acc, p, k2M, buf, 3, kRtParam},
      {"ACCESSED_BY dataSize 6", acc, p, k2M, buf, 6, kRtParam},
      // More slots than a vector can hold: a code, not an exception through the C API.
      {"ACCESSED_BY dataSize SIZE_MAX rounded to 4", acc, p, k2M, buf, SIZE_MAX & ~size_t{3}, kNoMemory},
      {"plain host memory", rm, n.plain, NotManaged::kPlainSize, buf, 4, kRtParam},
      {"aclrtMalloc memory", rm, n.dev, k2M, buf, 4, kRtParam},
      {"freed range in the window", rm, n.freed, k2M, buf, 4, kDrv},
      {"range running past the allocation", rm, p, 4 * kMiB + 1, buf, 4, kDrv},
      {"ACCESSED_BY dataSize 8 (control row)", acc, p, k2M, buf, 8, kOk},
      {"READ_MOSTLY (control row)", rm, p + 4 * kMiB - 1, 1, buf, 4, kOk},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    std::memset(buf, 0x5c, sizeof buf);
    EXPECT_EQ(get_attr_raw(r.attribute, r.ptr, r.size, r.data, r.data_size), r.want);
    if (r.want != kOk) {
      EXPECT_EQ(buf[0], 0x5c5c5c5c) << "a refused call writes nothing";
    }
  }
  release(n);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// §10 aclrtMemManagedGetAttrs: p, attributes, data, dataSizes NULL or size 0 → 100000; any
// attribute ∉ [1,8] → 107000 (runtime); numAttributes 0 → 107000 (driver); per-attribute rules
// as for GetAttr.
TEST_F(ManagedAttrTest, GetAttrsMisuseTable) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const NotManaged n = not_managed();
  struct Args {
    std::vector<aclrtMemManagedRangeAttribute> attrs;
    std::vector<size_t> sizes;
    size_t num;
    const void* ptr;
    size_t size;
    bool null_attrs = false, null_data = false, null_sizes = false;
  };
  auto good = [p] {
    Args a;
    a.attrs = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY};
    a.sizes = {4, 8};
    a.num = 2;
    a.ptr = p;
    a.size = k2M;
    return a;
  };
  struct Row {
    const char* name;
    std::function<void(Args&)> change;
    aclError want;
  } rows[] = {
      {"ptr NULL", [](Args& a) { a.ptr = nullptr; }, kParam},
      {"attributes NULL", [](Args& a) { a.null_attrs = true; }, kParam},
      {"data NULL", [](Args& a) { a.null_data = true; }, kParam},
      {"dataSizes NULL", [](Args& a) { a.null_sizes = true; }, kParam},
      {"size 0", [](Args& a) { a.size = 0; }, kParam},
      {"attributes[1] = 0", [](Args& a) { store_raw(a.attrs[1], 0); }, kRtParam},
      {"attributes[0] = 9", [](Args& a) { store_raw(a.attrs[0], 9); }, kRtParam},
      {"attributes[1] = -1", [](Args& a) { store_raw(a.attrs[1], -1); }, kRtParam},
      {"numAttributes 0", [](Args& a) { a.num = 0; }, kRtParam},
      {"dataSizes[0] = 8 (not a list)", [](Args& a) { a.sizes[0] = 8; }, kRtParam},
      {"dataSizes[1] = 3 (ACCESSED_BY)", [](Args& a) { a.sizes[1] = 3; }, kRtParam},
      {"plain host memory", [n](Args& a) { a.ptr = n.plain; }, kRtParam},
      {"freed range in the window", [n](Args& a) { a.ptr = n.freed; }, kDrv},
      {"valid (control row)", [](Args&) {}, kOk},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Args a = good();
    r.change(a);
    int32_t rm = 77, acc[2] = {77, 77};
    void* data[] = {&rm, acc};
    EXPECT_EQ(aclrtMemManagedGetAttrs(a.null_attrs ? nullptr : a.attrs.data(), a.num, a.ptr, a.size,
                                      a.null_data ? nullptr : data, a.null_sizes ? nullptr : a.sizes.data()),
              r.want);
    if (r.want == kOk) {
      EXPECT_EQ(rm, 0);
      EXPECT_EQ(V(acc, acc + 2), (V{-2, -2}));
    }
  }
  release(n);
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
