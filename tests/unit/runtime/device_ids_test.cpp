// Unit tests of the device-id conversions (src/runtime/device_ids.h, runtime-extra.md §4) over
// hand-made Config values: the rule table row by row, including configurations the environment
// cannot produce (a visible list naming an id past the device count, a list that is not set
// although its vector is filled), and which layer's code each miss gives (107001 runtime, 107000
// driver), which also pins the order of the checks where the two differ.
#include "runtime/device_ids.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/config.h"

namespace aclvmm {
namespace {

constexpr int kDevIdsUnitRuntimeMiss = 107001;  // ACL_ERROR_RT_INVALID_DEVICEID
constexpr int kDevIdsUnitDriverMiss = 107000;   // ACL_ERROR_RT_PARAM_INVALID

Config devids_unit_config(int count, bool visible_set, std::vector<int> visible) {
  Config c;
  c.device_count = count;
  c.visible_set = visible_set;
  c.visible = std::move(visible);
  return c;
}

using DevIdsUnitFn = StatusOr<int> (*)(const Config&, int);

struct DevIdsUnitRow {
  const char* what;
  DevIdsUnitFn fn;
  int in;
  int code;  // 0: success with `out`
  int out;
};

void devids_unit_check(const Config& c, const DevIdsUnitRow& r) {
  SCOPED_TRACE(::testing::Message() << r.what << "(" << r.in << ")");
  const StatusOr<int> got = r.fn(c, r.in);
  if (r.code == 0) {
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, r.out);
  } else {
    ASSERT_FALSE(got.ok()) << "gave " << *got;
    EXPECT_EQ(got.status().code(), r.code);
    EXPECT_FALSE(got.status().message().empty());
  }
}

constexpr DevIdsUnitFn kDevIdsUnitL2U = &device_ids::user_from_logical;
constexpr DevIdsUnitFn kDevIdsUnitU2L = &device_ids::logical_from_user;
constexpr DevIdsUnitFn kDevIdsUnitU2P = &device_ids::physical_from_user;
constexpr DevIdsUnitFn kDevIdsUnitP2U = &device_ids::user_from_physical;

// No list (load_config fills `visible` with 0..D-1 then; the conversions must not need it): every
// numbering is the same; misses are 107001 for user/logical, 107000 for physical.
TEST(DeviceIdsUnit, WithoutAList) {
  for (const Config& c : {devids_unit_config(4, false, {0, 1, 2, 3}), devids_unit_config(4, false, {})}) {
    SCOPED_TRACE(c.visible.size());
    const DevIdsUnitRow rows[] = {
        {"logical_from_user", kDevIdsUnitU2L, 0, 0, 0},
        {"logical_from_user", kDevIdsUnitU2L, 3, 0, 3},
        {"logical_from_user", kDevIdsUnitU2L, 4, kDevIdsUnitRuntimeMiss, 0},
        {"logical_from_user", kDevIdsUnitU2L, INT_MAX, kDevIdsUnitRuntimeMiss, 0},
        {"user_from_logical", kDevIdsUnitL2U, 0, 0, 0},
        {"user_from_logical", kDevIdsUnitL2U, 3, 0, 3},
        {"user_from_logical", kDevIdsUnitL2U, 4, kDevIdsUnitRuntimeMiss, 0},
        {"physical_from_user", kDevIdsUnitU2P, 2, 0, 2},
        {"physical_from_user", kDevIdsUnitU2P, 4, kDevIdsUnitDriverMiss, 0},
        {"physical_from_user", kDevIdsUnitU2P, INT_MAX, kDevIdsUnitDriverMiss, 0},
        {"user_from_physical", kDevIdsUnitP2U, 1, 0, 1},
        {"user_from_physical", kDevIdsUnitP2U, 4, kDevIdsUnitDriverMiss, 0},
        {"user_from_physical", kDevIdsUnitP2U, INT_MAX, kDevIdsUnitDriverMiss, 0},
    };
    for (const DevIdsUnitRow& r : rows) devids_unit_check(c, r);
  }
}

// A list V = [2, 5] on 8 devices: user ids index V.
TEST(DeviceIdsUnit, WithAList) {
  const Config c = devids_unit_config(8, true, {2, 5});
  const DevIdsUnitRow rows[] = {
      {"logical_from_user", kDevIdsUnitU2L, 0, 0, 2},
      {"logical_from_user", kDevIdsUnitU2L, 1, 0, 5},
      {"logical_from_user", kDevIdsUnitU2L, 2, kDevIdsUnitRuntimeMiss, 0},  // u >= size(V)
      {"logical_from_user", kDevIdsUnitU2L, 8, kDevIdsUnitRuntimeMiss, 0},
      {"user_from_logical", kDevIdsUnitL2U, 2, 0, 0},
      {"user_from_logical", kDevIdsUnitL2U, 5, 0, 1},
      {"user_from_logical", kDevIdsUnitL2U, 3, kDevIdsUnitRuntimeMiss, 0},  // not in V
      {"user_from_logical", kDevIdsUnitL2U, 8, kDevIdsUnitRuntimeMiss, 0},  // l >= D
      {"physical_from_user", kDevIdsUnitU2P, 0, 0, 2},
      {"physical_from_user", kDevIdsUnitU2P, 1, 0, 5},
      {"physical_from_user", kDevIdsUnitU2P, 2, kDevIdsUnitRuntimeMiss, 0},  // u >= size(V)
      {"physical_from_user", kDevIdsUnitU2P, 9, kDevIdsUnitRuntimeMiss, 0},  // ... even past D
      {"user_from_physical", kDevIdsUnitP2U, 2, 0, 0},
      {"user_from_physical", kDevIdsUnitP2U, 5, 0, 1},
      {"user_from_physical", kDevIdsUnitP2U, 0, kDevIdsUnitRuntimeMiss, 0},  // not in V
      {"user_from_physical", kDevIdsUnitP2U, 7, kDevIdsUnitRuntimeMiss, 0},
      {"user_from_physical", kDevIdsUnitP2U, 8, kDevIdsUnitDriverMiss, 0},   // p >= D
  };
  for (const DevIdsUnitRow& r : rows) devids_unit_check(c, r);
}

// A list naming an id past the device count (the environment parser stops before such an id, a
// hand-made Config does not): the D check after the list gives each call's own code, and where
// a call checks D first that check wins.
TEST(DeviceIdsUnit, AListIdPastTheDeviceCount) {
  const Config c = devids_unit_config(8, true, {2, 9});
  const DevIdsUnitRow rows[] = {
      {"logical_from_user", kDevIdsUnitU2L, 0, 0, 2},
      {"logical_from_user", kDevIdsUnitU2L, 1, kDevIdsUnitRuntimeMiss, 0},  // V[1] = 9 >= D
      {"user_from_logical", kDevIdsUnitL2U, 9, kDevIdsUnitRuntimeMiss, 0},  // l >= D first
      {"physical_from_user", kDevIdsUnitU2P, 1, kDevIdsUnitDriverMiss, 0},  // V[1] = 9 >= D: driver
      {"physical_from_user", kDevIdsUnitU2P, 2, kDevIdsUnitRuntimeMiss, 0},  // u >= size(V) first
      {"user_from_physical", kDevIdsUnitP2U, 9, kDevIdsUnitDriverMiss, 0},   // p >= D before V
  };
  for (const DevIdsUnitRow& r : rows) devids_unit_check(c, r);
}

// One device, a list of one: the smallest configuration.
TEST(DeviceIdsUnit, OneDevice) {
  const Config without = devids_unit_config(1, false, {0});
  const Config with = devids_unit_config(1, true, {0});
  for (const Config* c : {&without, &with}) {
    SCOPED_TRACE(c->visible_set ? "list" : "no list");
    const DevIdsUnitRow rows[] = {
        {"logical_from_user", kDevIdsUnitU2L, 0, 0, 0},
        {"logical_from_user", kDevIdsUnitU2L, 1, kDevIdsUnitRuntimeMiss, 0},
        {"user_from_logical", kDevIdsUnitL2U, 0, 0, 0},
        {"user_from_logical", kDevIdsUnitL2U, 1, kDevIdsUnitRuntimeMiss, 0},
        {"physical_from_user", kDevIdsUnitU2P, 0, 0, 0},
        {"physical_from_user", kDevIdsUnitU2P, 1, c->visible_set ? kDevIdsUnitRuntimeMiss : kDevIdsUnitDriverMiss, 0},
        {"user_from_physical", kDevIdsUnitP2U, 0, 0, 0},
        {"user_from_physical", kDevIdsUnitP2U, 1, kDevIdsUnitDriverMiss, 0},
    };
    for (const DevIdsUnitRow& r : rows) devids_unit_check(*c, r);
  }
}

// The conversions are inverse to each other on every id they accept.
TEST(DeviceIdsUnit, RoundTrips) {
  for (const Config& c : {devids_unit_config(8, false, {}), devids_unit_config(8, true, {1, 3, 4, 7}),
                          devids_unit_config(8, true, {0})}) {
    SCOPED_TRACE(c.visible_set ? c.visible.size() : 0);
    for (int id = 0; id < 10; ++id) {
      SCOPED_TRACE(id);
      const StatusOr<int> logical = device_ids::logical_from_user(c, id);
      if (logical.ok()) {
        const StatusOr<int> back = device_ids::user_from_logical(c, *logical);
        ASSERT_TRUE(back.ok());
        EXPECT_EQ(*back, id);
        const StatusOr<int> phys = device_ids::physical_from_user(c, id);
        ASSERT_TRUE(phys.ok());
        EXPECT_EQ(*phys, *logical);  // physical ids equal logical ids in the emulator
        const StatusOr<int> user = device_ids::user_from_physical(c, *phys);
        ASSERT_TRUE(user.ok());
        EXPECT_EQ(*user, id);
      }
    }
  }
}

}  // namespace
}  // namespace aclvmm
