// Failure injection (emulation.md §7 ACLVMM_FAULTS, §8 aclvmmInjectFault): the nth following call
// of the named function fails with the chosen code, leaves no partial state, and leaves a message.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_env.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

class InjectionTest : public AclTest {};

TEST_F(InjectionTest, SecondMapMemFailsLeavesNoMappingThirdSucceeds) {
  aclrtDrvMemHandle h1 = make_handle(k2M), h2 = make_handle(k2M);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclvmmInjectFault("aclrtMapMem", 2, 207001), ACL_SUCCESS);
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h1, 0), ACL_SUCCESS);  // first call
  const LiveCounts before = live_counts();
  (void)aclGetRecentErrMsg();
  EXPECT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, h2, 0), 207001);  // second call
  const std::string msg = recent_msg();
  EXPECT_NE(msg.find("injected"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aclrtMapMem"), std::string::npos) << msg;
  EXPECT_EQ(live_counts(), before);
  EXPECT_EQ(before.at("live.mappings"), 1);
  aclrtPtrAttributes a{};
  EXPECT_EQ(aclrtPointerGetAttributes(at(va, k2M), &a), 107017);  // reserved, nothing mapped
  // Third call at the same VA succeeds: nothing was left there.
  EXPECT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, h2, 0), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.mappings"), 2);
  // The failed map took no reference on h2: one unmap and one free release it completely.
  EXPECT_EQ(aclrtUnmapMem(at(va, k2M)), ACL_SUCCESS);
  const long long handles = stat_int(stats(), "live.physical_handles");
  EXPECT_EQ(aclrtFreePhysical(h2), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.physical_handles"), handles - 1);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h1), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

TEST_F(InjectionTest, NthZeroClearsAndOtherApisAreUnaffected) {
  aclrtDrvMemHandle h = make_handle(k2M);
  void* va = reserve(k2M);
  ASSERT_EQ(aclvmmInjectFault("aclrtMapMem", 1, 207001), ACL_SUCCESS);
  ASSERT_EQ(aclvmmInjectFault("aclrtMapMem", 0, 0), ACL_SUCCESS);  // cleared
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  // Armed for MapMem only: other calls pass, the armed one still fires afterwards.
  ASSERT_EQ(aclvmmInjectFault("aclrtMapMem", 1, 207012), ACL_SUCCESS);
  aclrtDrvMemHandle h2 = make_handle(k2M);
  void* va2 = reserve(k2M);
  EXPECT_EQ(aclrtUnmapMem(va), 507899);  // a real error, not the injected one
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), 207012);
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);  // fired once only
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  for (aclrtDrvMemHandle x : {h, h2}) EXPECT_EQ(aclrtFreePhysical(x), ACL_SUCCESS);
  for (void* v : {va, va2}) EXPECT_EQ(aclrtReleaseMemAddress(v), ACL_SUCCESS);
}

TEST_F(InjectionTest, NullApiIsInvalidParam) {
  EXPECT_EQ(aclvmmInjectFault(nullptr, 1, 207001), 100000);
  EXPECT_EQ(aclvmmInjectFault(nullptr, 0, 0), 100000);
}

// Every API of the scope injected once: the call returns the injected code, the live counts
// do not move, the object the call would have changed is untouched, and the call works on retry.
struct State {
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  void* p = nullptr;
  std::string data = pattern(4096, 7);
};

void mapped(AclTest* t, State& s, aclrtDrvMemHandle h, void* va) {
  s.h = h;
  s.va = va;
  ASSERT_EQ(aclrtMapMem(s.va, k2M, 0, s.h, 0), ACL_SUCCESS);
  (void)t;
}
void unmap_all(State& s) {
  EXPECT_EQ(aclrtUnmapMem(s.va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(s.h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(s.va), ACL_SUCCESS);
}
std::string read_back(void* va) {
  std::string out(4096, '\x7f');
  EXPECT_EQ(aclrtMemcpy(&out[0], out.size(), va, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return out;
}

class InjectionScopeTest : public AclTest {
 public:
  aclrtDrvMemHandle handle() { return make_handle(k2M); }
  void* rsv() { return reserve(k2M); }
};

TEST_F(InjectionScopeTest, EachScopedApiFailsOnceWithoutSideEffects) {
  struct InjectionRow {
    const char* api;
    aclError code;
    std::function<void(State&)> setup;
    std::function<aclError(State&)> call;
    std::function<void(State&)> unchanged;  // after the injected failure
    std::function<void(State&)> cleanup;    // after the successful retry
  };
  auto none = [](State&) {};
  const aclrtPhysicalMemProp prop = device_prop();
  const InjectionRow rows[] = {
      {"aclrtMallocPhysical", 207001, none,
       [prop](State& s) { return aclrtMallocPhysical(&s.h, k2M, &prop, 0); },
       [](State& s) { EXPECT_EQ(s.h, nullptr) << "output written by a failed call"; },
       [](State& s) { EXPECT_EQ(aclrtFreePhysical(s.h), ACL_SUCCESS); }},
      {"aclrtFreePhysical", 507899, [this](State& s) { s.h = handle(); },
       [](State& s) { return aclrtFreePhysical(s.h); },
       [](State& s) {
         aclrtPhysicalMemProp p{};
         EXPECT_EQ(aclrtMemGetAllocationPropertiesFromHandle(s.h, &p), ACL_SUCCESS);
       },
       none},
      {"aclrtReserveMemAddress", 207001, none,
       [](State& s) { return aclrtReserveMemAddress(&s.va, k2M, 0, nullptr, 0); },
       [](State& s) { EXPECT_EQ(s.va, nullptr) << "output written by a failed call"; },
       [](State& s) { EXPECT_EQ(aclrtReleaseMemAddress(s.va), ACL_SUCCESS); }},
      {"aclrtReleaseMemAddress", 107000, [this](State& s) { s.va = rsv(); },
       [](State& s) { return aclrtReleaseMemAddress(s.va); },
       [](State& s) {
         aclrtPtrAttributes a{};
         EXPECT_EQ(aclrtPointerGetAttributes(s.va, &a), 107017);  // still reserved
       },
       none},
      {"aclrtMapMem", 207001, [this](State& s) { s.h = handle(); s.va = rsv(); },
       [](State& s) { return aclrtMapMem(s.va, k2M, 0, s.h, 0); },
       [](State& s) {
         aclrtPtrAttributes a{};
         EXPECT_EQ(aclrtPointerGetAttributes(s.va, &a), 107017);  // nothing mapped
       },
       unmap_all},
      {"aclrtUnmapMem", 507899, [this](State& s) { mapped(this, s, handle(), rsv()); },
       [](State& s) { return aclrtUnmapMem(s.va); },
       [](State& s) {
         aclrtDrvMemHandle r = nullptr;
         EXPECT_EQ(aclrtMemRetainAllocationHandle(s.va, &r), ACL_SUCCESS);  // still mapped
         EXPECT_EQ(r, s.h);
         EXPECT_EQ(aclrtFreePhysical(r), ACL_SUCCESS);
       },
       [](State& s) {
         EXPECT_EQ(aclrtFreePhysical(s.h), ACL_SUCCESS);
         EXPECT_EQ(aclrtReleaseMemAddress(s.va), ACL_SUCCESS);
       }},
      {"aclrtMemSetAccess", 207000, [this](State& s) { mapped(this, s, handle(), rsv()); },
       [](State& s) { aclrtMemAccessDesc d = desc(kRW, host()); return aclrtMemSetAccess(s.va, k2M, &d, 1); },
       [](State& s) {
         aclrtMemLocation loc{0, ACL_MEM_LOCATION_TYPE_HOST};
         uint64_t f = 99;
         EXPECT_EQ(aclrtMemGetAccess(s.va, &loc, &f), ACL_SUCCESS);
         EXPECT_EQ(f, 0u) << "host access granted by a failed call";
       },
       unmap_all},
      {"aclrtMemcpy", 507899, [this](State& s) { mapped(this, s, handle(), rsv()); },
       [](State& s) { return aclrtMemcpy(s.va, k2M, s.data.data(), s.data.size(), ACL_MEMCPY_HOST_TO_DEVICE); },
       [](State& s) { EXPECT_EQ(read_back(s.va), std::string(4096, '\0')) << "bytes copied by a failed call"; },
       [](State& s) {
         EXPECT_EQ(read_back(s.va), s.data);
         unmap_all(s);
       }},
      {"aclrtMalloc", 207001, none,
       [](State& s) { return aclrtMalloc(&s.p, 4096, ACL_MEM_MALLOC_HUGE_FIRST); },
       [](State& s) { EXPECT_EQ(s.p, nullptr) << "output written by a failed call"; },
       [](State& s) { EXPECT_EQ(aclrtFree(s.p), ACL_SUCCESS); }},
      {"aclrtFree", 107000,
       [](State& s) { ASSERT_EQ(aclrtMalloc(&s.p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS); },
       [](State& s) { return aclrtFree(s.p); },
       [](State& s) {
         void* base = nullptr;
         size_t size = 0;
         EXPECT_EQ(aclrtMemGetAddressRange(s.p, &base, &size), ACL_SUCCESS);  // still allocated
         EXPECT_EQ(base, s.p);
       },
       none},
  };
  for (const InjectionRow& r : rows) {
    SCOPED_TRACE(r.api);
    State s;
    r.setup(s);
    if (HasFatalFailure()) return;
    const LiveCounts before = live_counts();
    ASSERT_EQ(aclvmmInjectFault(r.api, 1, r.code), ACL_SUCCESS);
    (void)aclGetRecentErrMsg();
    EXPECT_EQ(r.call(s), r.code);
    const std::string msg = recent_msg();
    EXPECT_NE(msg.find("injected"), std::string::npos) << msg;
    EXPECT_EQ(live_counts(), before) << "before: " << describe(before) << "\nafter: " << describe(live_counts());
    r.unchanged(s);
    EXPECT_EQ(r.call(s), ACL_SUCCESS) << "the rule fires once";
    r.cleanup(s);
  }
  EXPECT_EQ(stat_int(stats(), "live.physical_handles"), 0);
  EXPECT_EQ(stat_int(stats(), "live.reservations"), 0);
  EXPECT_EQ(stat_int(stats(), "live.mappings"), 0);
}

// ACLVMM_FAULTS, read at start-up: aclFinalize, setenv, aclInit (restored afterwards).
class InjectionEnvTest : public AclTest {
 protected:
  void set_env_and_restart(const char* value) {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    injections_.set(value);
    init_ = aclInit(nullptr);
    if (init_ == ACL_SUCCESS) {
      ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    }
  }
  void SetUp() override {}
  void TearDown() override {
    injections_.restore();
    if (init_ != ACL_SUCCESS) {  // the runtime did not come up: bring it back for the fixture
      ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
      ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    }
    AclTest::TearDown();
  }
  aclError init_ = ACL_SUCCESS;
  ScopedEnv injections_{"ACLVMM_FAULTS"};
};

TEST_F(InjectionEnvTest, ConfiguredCallsFailAsConfigured) {
  set_env_and_restart("aclrtMallocPhysical:1:207001,aclrtReserveMemAddress:2:507899");
  ASSERT_EQ(init_, ACL_SUCCESS);
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  (void)aclGetRecentErrMsg();
  EXPECT_EQ(aclrtMallocPhysical(&h, k2M, &p, 0), 207001);
  EXPECT_NE(recent_msg().find("injected"), std::string::npos);
  EXPECT_EQ(stat_int(stats(), "live.physical_handles"), 0);
  EXPECT_EQ(device_used(stats(), 0), 0);
  ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &p, 0), ACL_SUCCESS);
  void* va1 = nullptr;
  void* va2 = nullptr;
  void* va3 = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&va1, k2M, 0, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtReserveMemAddress(&va2, k2M, 0, nullptr, 0), 507899);
  EXPECT_EQ(va2, nullptr);
  EXPECT_NE(recent_msg().find("injected"), std::string::npos);
  EXPECT_EQ(stat_int(stats(), "live.reservations"), 1);
  EXPECT_EQ(aclrtReserveMemAddress(&va3, k2M, 0, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.reservations"), 2);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va1), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va3), ACL_SUCCESS);
}

// A malformed value is a clear error at aclInit naming the variable (emulation.md §7); the spec
// gives no code, the library's 100000 is asserted.
TEST_F(InjectionEnvTest, MalformedValueFailsInit) {
  set_env_and_restart("aclrtMapMem:zero:1");
  EXPECT_EQ(init_, 100000);
  EXPECT_NE(recent_msg().find("ACLVMM_FAULTS"), std::string::npos);
}

}  // namespace
}  // namespace aclvmm_test
