// aclrtMemSetAccess / aclrtMemGetAccess: argument checks, geometry, descriptor stride, the flags
// each location reports, and the vendor quirk mode (behavior.md §8 and the decisions table at the
// top; abi.md aclrtMemAccessDesc; clients.md A8).
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

// An 8 MiB reservation holding two adjacent 2 MiB mappings of device-0 handles, A at base and B at
// base + 2 MiB; [base + 4 MiB, base + 8 MiB) stays unmapped.
class AccessFixture : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(aclrtGetDeviceCount(&device_count_), kOk);
    ASSERT_GE(device_count_, 3u);
    base_ = reserve(8 * kMiB);
    ha_ = make_handle();
    hb_ = make_handle();
    ASSERT_NE(base_, nullptr);
    ASSERT_EQ(aclrtMapMem(a(), k2M, 0, ha_, 0), kOk);
    ASSERT_EQ(aclrtMapMem(b(), k2M, 0, hb_, 0), kOk);
  }
  void TearDown() override {
    if (base_) {
      aclrtUnmapMem(a());
      aclrtUnmapMem(b());
      aclrtReleaseMemAddress(base_);
    }
    if (ha_) aclrtFreePhysical(ha_);
    if (hb_) aclrtFreePhysical(hb_);
    AclTest::TearDown();
  }
  void* a() const { return base_; }
  void* b() const { return at(base_, k2M); }
  void* unmapped() const { return at(base_, 4 * kMiB); }

  uint32_t device_count_ = 0;
  void* base_ = nullptr;
  aclrtDrvMemHandle ha_ = nullptr;
  aclrtDrvMemHandle hb_ = nullptr;
};

using AccessSetTest = AccessFixture;
using AccessGetTest = AccessFixture;
using AccessQuirksTest = AclTest;

struct SetCase {
  const char* name;
  std::function<aclError()> call;
  aclError expected;
};

// behavior.md §8: no ACL-layer checks; the runtime rejects NULL virPtr / desc (107000); the
// driver rejects count 0, flag values other than 0/1/3, HOST with id != 0, DEVICE ids that do not
// exist and every other location type (107000) before it looks at the range; then (ptr, size)
// must be exactly one mapping (507899). A rejected call changes nothing.
TEST_F(AccessSetTest, MisuseTable) {
  const uint32_t n = device_count_;
  const std::vector<SetCase> cases = {
      // Runtime / driver argument checks → 107000.
      {"virPtr NULL", [] { return set1(nullptr, k2M, kRW, dev(1)); }, kRtParam},
      {"desc NULL", [this] { return aclrtMemSetAccess(a(), k2M, nullptr, 1); },
       kRtParam},
      {"both NULL", [] { return aclrtMemSetAccess(nullptr, k2M, nullptr, 1); },
       kRtParam},
      {"count 0",
       [this] {
         aclrtMemAccessDesc d = desc(kRW, dev(1));
         return aclrtMemSetAccess(a(), k2M, &d, 0);
       },
       kRtParam},
      {"flags 2", [this] { return set1(a(), k2M, 2, dev(1)); }, kRtParam},
      {"flags 7", [this] { return set1(a(), k2M, 7, dev(1)); }, kRtParam},
      {"flags 0x80000000",
       [this] { return set1(a(), k2M, int(0x80000000u), host()); }, kRtParam},
      {"HOST id 1",
       [this] { return set1(a(), k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_HOST, 1)); },
       kRtParam},
      {"DEVICE id == device count", [this, n] { return set1(a(), k2M, kRW, dev(n)); },
       kRtParam},
      {"DEVICE id 64", [this] { return set1(a(), k2M, kRW, dev(64)); }, kRtParam},
      {"DEVICE id 0xffffffff",
       [this] { return set1(a(), k2M, kRW, dev(0xffffffffu)); }, kRtParam},
      {"type HOST_NUMA",
       [this] { return set1(a(), k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_HOST_NUMA, 0)); },
       kRtParam},
      {"type UNREGISTERED",
       [this] {
         return set1(a(), k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_UNREGISTERED, 0));
       },
       kRtParam},
      {"type MANAGED",
       [this] { return set1(a(), k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_MANAGED, 0)); },
       kRtParam},
      {"type 99",
       [this] {
         return set1(a(), k2M, kRW, loc(99, 0));
       },
       kRtParam},
      // Argument checks come before the range check.
      {"bad flags on an unmapped range",
       [this] { return set1(unmapped(), k2M, 2, dev(1)); }, kRtParam},
      {"bad location on an interior pointer",
       [this] {
         return set1(at(a(), 4096), k2M, kRW, loc(ACL_MEM_LOCATION_TYPE_HOST, 1));
       },
       kRtParam},
      // Every descriptor is checked before anything changes (the first one alone is valid).
      {"second descriptor has a bad location",
       [this] {
         aclrtMemAccessDesc d[2] = {desc(kRW, dev(1)), desc(kRW, loc(ACL_MEM_LOCATION_TYPE_HOST, 1))};
         return aclrtMemSetAccess(a(), k2M, d, 2);
       },
       kRtParam},
      {"second descriptor has bad flags",
       [this] {
         aclrtMemAccessDesc d[2] = {desc(kRW, host()), desc(5, dev(2))};
         return aclrtMemSetAccess(a(), k2M, d, 2);
       },
       kRtParam},
      // (ptr, size) is not exactly one mapping → 507899.
      {"interior pointer, rest of mapping",
       [this] { return set1(at(a(), 4096), k2M - 4096, kRW, dev(1)); }, kDrv},
      {"interior pointer, mapping size",
       [this] { return set1(at(a(), kMiB), k2M, kRW, dev(1)); }, kDrv},
      {"size smaller than the mapping",
       [this] { return set1(a(), kMiB, kRW, dev(1)); }, kDrv},
      {"size 0", [this] { return set1(a(), 0, kRW, dev(1)); }, kDrv},
      {"size larger: covers two mappings",
       [this] { return set1(a(), 4 * kMiB, kRW, dev(1)); }, kDrv},
      {"size larger: runs into unmapped space",
       [this] { return set1(b(), 4 * kMiB, kRW, dev(1)); }, kDrv},
      {"unmapped range of a reservation",
       [this] { return set1(unmapped(), k2M, kRW, dev(1)); }, kDrv},
      {"plain host memory",
       [] {
         std::vector<char> buf(k2M);
         return set1(buf.data(), buf.size(), kRW, dev(1));
       },
       kDrv},
      {"aclrtMalloc memory",
       [] {
         void* p = nullptr;
         EXPECT_EQ(aclrtMalloc(&p, k2M, ACL_MEM_MALLOC_HUGE_ONLY), kOk);
         aclError rc = set1(p, k2M, kRW, dev(1));
         aclrtFree(p);
         return rc;
       },
       kDrv},
  };
  for (const SetCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
    // Nothing changed on either mapping.
    for (void* m : {a(), b()}) {
      EXPECT_EQ(access_of(m, dev(0)), kRW);
      EXPECT_EQ(access_of(m, dev(1)), kNone);
      EXPECT_EQ(access_of(m, dev(2)), kNone);
      EXPECT_EQ(access_of(m, host()), kNone);
    }
  }
}

// Decisions table: with count > 1 every descriptor is read with the 24-byte stride of
// aclrtMemAccessDesc (the vendor misreads elements ≥ 1; not reproduced).
TEST_F(AccessSetTest, SeveralDescriptorsUseThe24ByteStride) {
  static_assert(sizeof(aclrtMemAccessDesc) == 24, "abi.md: aclrtMemAccessDesc is 24 bytes");
  aclrtMemAccessDesc two[2] = {desc(kRW, dev(1)), desc(kRW, host())};
  ASSERT_EQ(aclrtMemSetAccess(a(), k2M, two, 2), kOk);
  EXPECT_EQ(access_of(a(), dev(1)), kRW);
  EXPECT_EQ(access_of(a(), host()), kRW);
  EXPECT_EQ(access_of(a(), dev(0)), kRW);
  EXPECT_EQ(access_of(a(), dev(2)), kNone);

  // Three different flags for three locations on B, one call.
  aclrtMemAccessDesc three[3] = {desc(kRead, dev(2)), desc(kRW, dev(1)), desc(kRead, host())};
  ASSERT_EQ(aclrtMemSetAccess(b(), k2M, three, 3), kOk);
  EXPECT_EQ(access_of(b(), dev(2)), kRead);
  EXPECT_EQ(access_of(b(), dev(1)), kRW);
  EXPECT_EQ(access_of(b(), host()), kRead);
  EXPECT_EQ(access_of(b(), dev(0)), kRW);
  // A is untouched by the call on B.
  EXPECT_EQ(access_of(a(), dev(2)), kNone);
}

// Decisions table: NONE, READ and READWRITE all work for HOST and any device, and a later call
// may grant, downgrade or revoke — including the owner device.
TEST_F(AccessSetTest, FlagsCanBeGrantedDowngradedAndRevoked) {
  struct Step {
    const char* name;
    aclrtMemLocation where;
    int flags;
  };
  const Step steps[] = {
      {"grant device 1 READWRITE", dev(1), kRW},  {"downgrade device 1 to READ", dev(1), kRead},
      {"revoke device 1", dev(1), kNone},         {"grant device 1 READ", dev(1), kRead},
      {"grant HOST READ", host(), kRead},         {"upgrade HOST to READWRITE", host(), kRW},
      {"revoke HOST", host(), kNone},             {"downgrade owner to READ", dev(0), kRead},
      {"revoke owner", dev(0), kNone},            {"restore owner READWRITE", dev(0), kRW},
      {"same flags again is harmless", dev(0), kRW},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    const int before_other = access_of(b(), s.where);
    EXPECT_EQ(set1(a(), k2M, s.flags, s.where), kOk);
    EXPECT_EQ(access_of(a(), s.where), s.flags);
    EXPECT_EQ(access_of(at(a(), k2M - 1), s.where), s.flags);  // the whole mapping
    EXPECT_EQ(access_of(b(), s.where), before_other);          // the neighbour keeps its own
  }
}

struct GetCase {
  const char* name;
  std::function<aclError(uint64_t*)> call;
  aclError expected;
};

// behavior.md §8: NULLs → 100000 (ACL layer, first); location checks as for SetAccess → 107000;
// the VA must be inside a mapping → 507899.
TEST_F(AccessGetTest, MisuseTable) {
  const uint32_t n = device_count_;
  auto get = [](void* va, aclrtMemLocation l, uint64_t* out) { return aclrtMemGetAccess(va, &l, out); };
  const std::vector<GetCase> cases = {
      {"virPtr NULL", [&](uint64_t* f) { return get(nullptr, dev(0), f); }, kParam},
      {"location NULL",
       [this](uint64_t* f) { return aclrtMemGetAccess(a(), nullptr, f); }, kParam},
      {"flag NULL", [&](uint64_t*) { return get(a(), dev(0), nullptr); }, kParam},
      {"flag NULL with a bad location",
       [&](uint64_t*) { return get(a(), dev(64), nullptr); }, kParam},
      {"HOST id 1",
       [&](uint64_t* f) { return get(a(), loc(ACL_MEM_LOCATION_TYPE_HOST, 1), f); },
       kRtParam},
      {"DEVICE id == device count", [&](uint64_t* f) { return get(a(), dev(n), f); },
       kRtParam},
      {"DEVICE id 64", [&](uint64_t* f) { return get(a(), dev(64), f); }, kRtParam},
      {"type HOST_NUMA",
       [&](uint64_t* f) {
         return get(a(), loc(ACL_MEM_LOCATION_TYPE_HOST_NUMA, 0), f);
       },
       kRtParam},
      {"type UNREGISTERED",
       [&](uint64_t* f) {
         return get(a(), loc(ACL_MEM_LOCATION_TYPE_UNREGISTERED, 0), f);
       },
       kRtParam},
      {"type MANAGED",
       [&](uint64_t* f) { return get(a(), loc(ACL_MEM_LOCATION_TYPE_MANAGED, 0), f); },
       kRtParam},
      {"bad location on an unmapped VA",
       [&](uint64_t* f) { return get(unmapped(), dev(64), f); }, kRtParam},
      {"unmapped part of a reservation",
       [&](uint64_t* f) { return get(unmapped(), dev(0), f); }, kDrv},
      {"first byte after the last mapping",
       [&](uint64_t* f) { return get(at(b(), k2M), host(), f); }, kDrv},
      {"plain host memory",
       [&](uint64_t* f) {
         std::vector<char> buf(64);
         return get(buf.data(), dev(0), f);
       },
       kDrv},
      {"released reservation",
       [&](uint64_t* f) {
         void* va = reserve(k2M);
         EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
         return get(va, dev(0), f);
       },
       kDrv},
      {"unmapped mapping",
       [&](uint64_t* f) {
         void* va = reserve(k2M);
         aclrtDrvMemHandle h = make_handle();
         EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
         EXPECT_EQ(aclrtUnmapMem(va), kOk);
         aclError rc = get(va, dev(0), f);
         aclrtFreePhysical(h);
         aclrtReleaseMemAddress(va);
         return rc;
       },
       kDrv},
  };
  for (const GetCase& c : cases) {
    SCOPED_TRACE(c.name);
    uint64_t flags = 0x5a5a;
    EXPECT_EQ(c.call(&flags), c.expected);
    EXPECT_EQ(flags, 0x5a5au);  // a failed call writes nothing
  }
}

// behavior.md §8: 3 for the owning device right after MapMem (A8: usable without SetAccess), the
// value set by SetAccess for other locations, 0 where nothing was set; any VA inside the mapping.
TEST_F(AccessGetTest, ReportsFlagsPerLocationAnywhereInTheMapping) {
  aclrtMemAccessDesc d[2] = {desc(kRead, dev(1)), desc(kRW, host())};
  ASSERT_EQ(aclrtMemSetAccess(a(), k2M, d, 2), kOk);
  struct Row {
    const char* name;
    void* va;
    aclrtMemLocation where;
    int flags;
  };
  const Row rows[] = {
      {"A base, owner", a(), dev(0), kRW},
      {"A interior, owner", at(a(), 12345), dev(0), kRW},
      {"A last byte, owner", at(a(), k2M - 1), dev(0), kRW},
      {"A, device 1 set READ", at(a(), 777), dev(1), kRead},
      {"A, HOST set READWRITE", at(a(), kMiB), host(), kRW},
      {"A, device 2 never set", a(), dev(2), kNone},
      {"B base, owner", b(), dev(0), kRW},
      {"B interior, device 1 never set", at(b(), 4096), dev(1), kNone},
      {"B, HOST never set", at(b(), k2M - 1), host(), kNone},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(access_of(r.va, r.where), r.flags);
  }
}

// A mapping of a device-1 handle is owned by device 1 (3 there, 0 for device 0).
TEST_F(AccessGetTest, OwnerIsTheHandlesDevice) {
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle(k2M, 1);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_EQ(access_of(va, dev(1)), kRW);
  EXPECT_EQ(access_of(va, dev(0)), kNone);
  EXPECT_EQ(access_of(va, host()), kNone);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// Access belongs to a mapping: a new mapping at the same VA starts from the defaults again.
TEST_F(AccessGetTest, RemappingStartsFromDefaults) {
  aclrtMemAccessDesc d[3] = {desc(kRW, dev(1)), desc(kRW, host()), desc(kRead, dev(0))};
  ASSERT_EQ(aclrtMemSetAccess(a(), k2M, d, 3), kOk);
  ASSERT_EQ(aclrtUnmapMem(a()), kOk);
  ASSERT_EQ(aclrtMapMem(a(), k2M, 0, ha_, 0), kOk);
  EXPECT_EQ(access_of(a(), dev(0)), kRW);
  EXPECT_EQ(access_of(a(), dev(1)), kNone);
  EXPECT_EQ(access_of(a(), host()), kNone);
}

// ACLVMM_QUIRKS=vendor (decisions table, §8): NONE / READ → 207000 (checked for every descriptor
// before anything else happens), READWRITE works and repeating it is a no-op; a different flag for
// a location already set can only be NONE/READ here, so it is refused with 207000 and the
// location keeps READWRITE. Other argument checks are unchanged (107000).
TEST_F(AccessQuirksTest, VendorModeOnlyGrantsReadWrite) {
  ScopedEnvRuntime env("ACLVMM_QUIRKS", "vendor");
  ASSERT_TRUE(env.ok());
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  struct Row {
    const char* name;
    std::vector<aclrtMemAccessDesc> descs;
    aclError expected;
    int dev1_after, host_after, owner_after;
  };
  const std::vector<Row> rows = {
      {"device 1 READ", {desc(kRead, dev(1))}, kNotSupported, 0, 0, 3},
      {"device 1 NONE", {desc(kNone, dev(1))}, kNotSupported, 0, 0, 3},
      {"HOST READ", {desc(kRead, host())}, kNotSupported, 0, 0, 3},
      {"owner READ", {desc(kRead, dev(0))}, kNotSupported, 0, 0, 3},
      {"owner NONE", {desc(kNone, dev(0))}, kNotSupported, 0, 0, 3},
      {"flags 2 is still 107000", {desc(2, dev(1))}, kRtParam, 0, 0, 3},
      {"HOST id 1 is still 107000", {desc(kRW, loc(ACL_MEM_LOCATION_TYPE_HOST, 1))}, kRtParam, 0, 0, 3},
      {"READWRITE then READ in one call", {desc(kRW, dev(1)), desc(kRead, host())}, kNotSupported,
       0, 0, 3},
      {"owner READWRITE is a no-op", {desc(kRW, dev(0))}, kOk, 0, 0, 3},
      {"device 1 READWRITE", {desc(kRW, dev(1))}, kOk, 3, 0, 3},
      {"device 1 READWRITE again", {desc(kRW, dev(1))}, kOk, 3, 0, 3},
      {"device 1 changed to READ", {desc(kRead, dev(1))}, kNotSupported, 3, 0, 3},
      {"device 1 revoked", {desc(kNone, dev(1))}, kNotSupported, 3, 0, 3},
      {"HOST READWRITE", {desc(kRW, host())}, kOk, 3, 3, 3},
      {"HOST and device 1 READWRITE again", {desc(kRW, host()), desc(kRW, dev(1))}, kOk, 3, 3, 3},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    std::vector<aclrtMemAccessDesc> d = r.descs;
    EXPECT_EQ(aclrtMemSetAccess(va, k2M, d.data(), d.size()), r.expected);
    EXPECT_EQ(access_of(va, dev(1)), r.dev1_after);
    EXPECT_EQ(access_of(va, host()), r.host_after);
    EXPECT_EQ(access_of(va, dev(0)), r.owner_after);
  }
  // A range that is not exactly one mapping is still 507899.
  EXPECT_EQ(set1(va, kMiB, kRW, dev(2)), kDrv);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
