// The six device-id conversions (runtime-extra.md §4): a NULL output → 100000 and a negative id →
// 107000 for each, then the rule table row by row, without and with ASCEND_RT_VISIBLE_DEVICES
// ("2,5" on 8 devices), with the different codes the spec gives for ids out of range (107001 from
// the runtime's own checks, 107000 from the driver's), the vendor quirk that the two
// "logic <-> phy" calls take and return user ids, and that no call needs a context.
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "api/test_env.h"
#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

using DevIdsFn = aclError (*)(const int32_t, int32_t* const);

struct DevIdsCall {
  const char* name;
  DevIdsFn fn;
};

// In the order of the spec's table; the quirk pairs share a rule.
const DevIdsCall kDevIdsLogicByUser{"aclrtGetLogicDevIdByUserDevId", &aclrtGetLogicDevIdByUserDevId};
const DevIdsCall kDevIdsUserByLogic{"aclrtGetUserDevIdByLogicDevId", &aclrtGetUserDevIdByLogicDevId};
const DevIdsCall kDevIdsPhyByUser{"aclrtGetPhyDevIdByUserDevId", &aclrtGetPhyDevIdByUserDevId};
const DevIdsCall kDevIdsPhyByLogic{"aclrtGetPhyDevIdByLogicDevId", &aclrtGetPhyDevIdByLogicDevId};
const DevIdsCall kDevIdsUserByPhy{"aclrtGetUserDevIdByPhyDevId", &aclrtGetUserDevIdByPhyDevId};
const DevIdsCall kDevIdsLogicByPhy{"aclrtGetLogicDevIdByPhyDevId", &aclrtGetLogicDevIdByPhyDevId};
const DevIdsCall kDevIdsAll[] = {kDevIdsLogicByUser, kDevIdsUserByLogic, kDevIdsPhyByUser,
                                 kDevIdsPhyByLogic,  kDevIdsUserByPhy,   kDevIdsLogicByPhy};

constexpr int32_t kDevIdsUntouched = -77;

struct DevIdsRow {
  DevIdsCall call;
  int32_t in;
  aclError rc;
  int32_t out;  // when rc is 0
};

void devids_check(const DevIdsRow& r) {
  SCOPED_TRACE(::testing::Message() << r.call.name << "(" << r.in << ")");
  int32_t out = kDevIdsUntouched;
  EXPECT_EQ(r.call.fn(r.in, &out), r.rc);
  if (r.rc == kOk) {
    EXPECT_EQ(out, r.out);
  }
}

// A fixture whose runtime runs with 8 devices (whatever the environment says).
class DeviceIdsTest : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    count_ = std::make_unique<ScopedEnvRuntime>("ACLVMM_DEVICE_COUNT", "8");
    ASSERT_TRUE(count_->ok());
  }
  void TearDown() override {
    count_.reset();
    AclTest::TearDown();
  }

 private:
  std::unique_ptr<ScopedEnvRuntime> count_;
};

using DeviceIdsThread = DeviceIdsTest;

// NULL output → 100000 (before the id is looked at), negative → 107000, for all six, without and
// with the visible-devices list.
TEST_F(DeviceIdsTest, NullOutputThenNegativeId) {
  for (const char* visible : {static_cast<const char*>(nullptr), "2,5"}) {
    SCOPED_TRACE(visible ? visible : "no ASCEND_RT_VISIBLE_DEVICES");
    ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", visible);
    ASSERT_TRUE(env.ok());
    for (const DevIdsCall& c : kDevIdsAll) {
      SCOPED_TRACE(c.name);
      EXPECT_EQ(c.fn(0, nullptr), kParam);
      EXPECT_EQ(c.fn(-1, nullptr), kParam);
      EXPECT_EQ(c.fn(100, nullptr), kParam);
      int32_t out = kDevIdsUntouched;
      EXPECT_EQ(c.fn(-1, &out), kRtParam);
      EXPECT_EQ(c.fn(INT32_MIN, &out), kRtParam);
    }
  }
}

// §4 without ASCEND_RT_VISIBLE_DEVICES (D = 8): user ids are logical ids are physical ids; out of
// range → 107001 for the user/logic pair (runtime), 107000 for the physical ones (driver).
TEST_F(DeviceIdsTest, RulesWithoutVisibleDevices) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", nullptr);
  ASSERT_TRUE(env.ok());
  const DevIdsRow rows[] = {
      // aclrtGetLogicDevIdByUserDevId: l = u; l >= D → 107001
      {kDevIdsLogicByUser, 0, kOk, 0},
      {kDevIdsLogicByUser, 7, kOk, 7},
      {kDevIdsLogicByUser, 8, kBadDevice, 0},
      {kDevIdsLogicByUser, INT32_MAX, kBadDevice, 0},
      // aclrtGetUserDevIdByLogicDevId: l >= D → 107001; u = l
      {kDevIdsUserByLogic, 0, kOk, 0},
      {kDevIdsUserByLogic, 5, kOk, 5},
      {kDevIdsUserByLogic, 8, kBadDevice, 0},
      {kDevIdsUserByLogic, 1000, kBadDevice, 0},
      // aclrtGetPhyDevIdByUserDevId and ...ByLogicDevId: l = u; l >= D → 107000 (driver); p = l
      {kDevIdsPhyByUser, 0, kOk, 0},
      {kDevIdsPhyByUser, 7, kOk, 7},
      {kDevIdsPhyByUser, 8, kRtParam, 0},
      {kDevIdsPhyByUser, INT32_MAX, kRtParam, 0},
      {kDevIdsPhyByLogic, 0, kOk, 0},
      {kDevIdsPhyByLogic, 7, kOk, 7},
      {kDevIdsPhyByLogic, 8, kRtParam, 0},
      {kDevIdsPhyByLogic, INT32_MAX, kRtParam, 0},
      // aclrtGetUserDevIdByPhyDevId and aclrtGetLogicDevIdByPhyDevId: p >= D → 107000; u = p
      {kDevIdsUserByPhy, 0, kOk, 0},
      {kDevIdsUserByPhy, 6, kOk, 6},
      {kDevIdsUserByPhy, 8, kRtParam, 0},
      {kDevIdsUserByPhy, INT32_MAX, kRtParam, 0},
      {kDevIdsLogicByPhy, 0, kOk, 0},
      {kDevIdsLogicByPhy, 6, kOk, 6},
      {kDevIdsLogicByPhy, 8, kRtParam, 0},
      {kDevIdsLogicByPhy, INT32_MAX, kRtParam, 0},
  };
  for (const DevIdsRow& r : rows) devids_check(r);
}

// §4 with ASCEND_RT_VISIBLE_DEVICES=2,5 (D = 8, V = [2, 5]).
TEST_F(DeviceIdsTest, RulesWithVisibleDevices) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,5");
  ASSERT_TRUE(env.ok());
  const DevIdsRow rows[] = {
      // aclrtGetLogicDevIdByUserDevId: u >= size(V) → 107001; l = V[u]
      {kDevIdsLogicByUser, 0, kOk, 2},
      {kDevIdsLogicByUser, 1, kOk, 5},
      {kDevIdsLogicByUser, 2, kBadDevice, 0},
      {kDevIdsLogicByUser, 5, kBadDevice, 0},
      {kDevIdsLogicByUser, 8, kBadDevice, 0},
      // aclrtGetUserDevIdByLogicDevId: l >= D → 107001; l not in V → 107001; u = index of l
      {kDevIdsUserByLogic, 2, kOk, 0},
      {kDevIdsUserByLogic, 5, kOk, 1},
      {kDevIdsUserByLogic, 0, kBadDevice, 0},
      {kDevIdsUserByLogic, 1, kBadDevice, 0},
      {kDevIdsUserByLogic, 7, kBadDevice, 0},
      {kDevIdsUserByLogic, 8, kBadDevice, 0},
      // aclrtGetPhyDevIdByUserDevId and ...ByLogicDevId: u >= size(V) → 107001 (not the driver's
      // 107000, even past D); p = V[u]
      {kDevIdsPhyByUser, 0, kOk, 2},
      {kDevIdsPhyByUser, 1, kOk, 5},
      {kDevIdsPhyByUser, 2, kBadDevice, 0},
      {kDevIdsPhyByUser, 9, kBadDevice, 0},
      {kDevIdsPhyByLogic, 0, kOk, 2},
      {kDevIdsPhyByLogic, 1, kOk, 5},
      {kDevIdsPhyByLogic, 2, kBadDevice, 0},
      {kDevIdsPhyByLogic, 9, kBadDevice, 0},
      // aclrtGetUserDevIdByPhyDevId and aclrtGetLogicDevIdByPhyDevId: p >= D → 107000 (before the
      // list); p not in V → 107001; u = index of p
      {kDevIdsUserByPhy, 2, kOk, 0},
      {kDevIdsUserByPhy, 5, kOk, 1},
      {kDevIdsUserByPhy, 0, kBadDevice, 0},
      {kDevIdsUserByPhy, 7, kBadDevice, 0},
      {kDevIdsUserByPhy, 8, kRtParam, 0},
      {kDevIdsUserByPhy, 100, kRtParam, 0},
      {kDevIdsLogicByPhy, 2, kOk, 0},
      {kDevIdsLogicByPhy, 5, kOk, 1},
      {kDevIdsLogicByPhy, 0, kBadDevice, 0},
      {kDevIdsLogicByPhy, 7, kBadDevice, 0},
      {kDevIdsLogicByPhy, 8, kRtParam, 0},
      {kDevIdsLogicByPhy, 100, kRtParam, 0},
  };
  for (const DevIdsRow& r : rows) devids_check(r);
}

// The vendor quirk: the "logic <-> phy" calls are the user ones, code and value, for every id
// from -1 to 9, with and without the list; and Mooncake's use: the id aclrtGetDevice returns,
// given to aclrtGetPhyDevIdByLogicDevId, names the chip the application is on.
TEST_F(DeviceIdsTest, LogicPhyCallsBehaveLikeTheUserOnes) {
  for (const char* visible : {static_cast<const char*>(nullptr), "2,5", "1,3,4,7"}) {
    SCOPED_TRACE(visible ? visible : "no ASCEND_RT_VISIBLE_DEVICES");
    ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", visible);
    ASSERT_TRUE(env.ok());
    for (int32_t id = -1; id <= 9; ++id) {
      SCOPED_TRACE(id);
      int32_t a = kDevIdsUntouched, b = kDevIdsUntouched;
      EXPECT_EQ(aclrtGetPhyDevIdByLogicDevId(id, &a), aclrtGetPhyDevIdByUserDevId(id, &b));
      EXPECT_EQ(a, b);
      a = b = kDevIdsUntouched;
      EXPECT_EQ(aclrtGetLogicDevIdByPhyDevId(id, &a), aclrtGetUserDevIdByPhyDevId(id, &b));
      EXPECT_EQ(a, b);
    }
    int32_t user = -1, phy = -1, logic = -1;
    ASSERT_EQ(aclrtSetDevice(1), kOk);
    ASSERT_EQ(aclrtGetDevice(&user), kOk);
    EXPECT_EQ(user, 1);
    EXPECT_EQ(aclrtGetPhyDevIdByLogicDevId(user, &phy), kOk);
    EXPECT_EQ(aclrtGetLogicDevIdByUserDevId(user, &logic), kOk);
    const int32_t want = visible == nullptr ? 1 : visible[2] - '0';  // V[1]
    EXPECT_EQ(phy, want);
    EXPECT_EQ(logic, want);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
    EXPECT_EQ(aclrtResetDevice(1), kOk);
  }
}

// No call needs a context: the same answers on a thread that never set a device.
TEST_F(DeviceIdsThread, NoContextNeeded) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,5");
  ASSERT_TRUE(env.ok());
  const DevIdsRow rows[] = {
      {kDevIdsLogicByUser, 1, kOk, 5}, {kDevIdsUserByLogic, 5, kOk, 1},
      {kDevIdsPhyByUser, 0, kOk, 2},   {kDevIdsPhyByLogic, 0, kOk, 2},
      {kDevIdsUserByPhy, 2, kOk, 0},   {kDevIdsLogicByPhy, 2, kOk, 0},
      {kDevIdsUserByPhy, 8, kRtParam, 0}, {kDevIdsLogicByUser, 2, kBadDevice, 0},
  };
  std::thread([&] {
    int32_t probe = kDevIdsUntouched;
    EXPECT_EQ(aclrtGetDevice(&probe), ACL_ERROR_RT_CONTEXT_NULL) << "the thread has a context";
    for (const DevIdsRow& r : rows) devids_check(r);
  }).join();
}

}  // namespace
