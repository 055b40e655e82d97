// ConfigSnapshots (runtime/config_snapshots.h): before a publish the defaults; a publish makes a
// snapshot current without touching the one readers hold; publishing an equal configuration
// again reuses its snapshot (a process that restarts a thousand times keeps one); every field
// counts for equality.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/config_snapshots.h"

namespace aclvmm {
namespace {

Config sample() {
  Config c;
  c.product.soc = "Ascend910B3";
  c.device_count = 4;
  c.visible = {0, 1, 2, 3};
  return c;
}

TEST(ConfigSnapshots, DefaultsBeforeTheFirstPublish) {
  ConfigSnapshots s;
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.current().device_count, Config().device_count);
  EXPECT_EQ(s.current().driver, "emu");
}

TEST(ConfigSnapshots, APublishLeavesTheHeldSnapshotAsItWas) {
  ConfigSnapshots s;
  auto first = s.publish(sample());
  ASSERT_TRUE(first.ok());
  const Config& held = s.current();
  EXPECT_EQ(&held, *first);
  Config other = sample();
  other.product.soc = "Ascend910B4";
  other.device_count = 2;
  auto second = s.publish(other);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*second, *first);
  EXPECT_EQ(&s.current(), *second);
  EXPECT_EQ(s.current().product.soc, "Ascend910B4");
  // What a reader took before the restart is unchanged and still there.
  EXPECT_EQ(held.product.soc, "Ascend910B3");
  EXPECT_EQ(held.device_count, 4);
  EXPECT_EQ(s.count(), 2u);
}

TEST(ConfigSnapshots, RestartsWithTheSameConfigurationKeepOneSnapshot) {
  ConfigSnapshots s;
  Config other = sample();
  other.device_count = 2;
  const Config* a = *s.publish(sample());
  const Config* b = *s.publish(other);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(*s.publish(sample()), a);
    ASSERT_EQ(*s.publish(other), b);
  }
  EXPECT_EQ(s.count(), 2u);
}

// One row per field: changing it alone makes another configuration.
TEST(ConfigSnapshots, EveryFieldCounts) {
  const std::vector<std::pair<const char*, std::function<void(Config&)>>> changes = {
      {"soc", [](Config& c) { c.product.soc = "Ascend910B4"; }},
      {"family", [](Config& c) { c.product.family = Family::kA3; }},
      {"memory_bytes", [](Config& c) { c.product.memory_bytes = 1; }},
      {"device_count", [](Config& c) { c.device_count = 3; }},
      {"device_memory", [](Config& c) { c.device_memory = 1; }},
      {"host_access_open", [](Config& c) { c.host_access_open = true; }},
      {"quirks_vendor", [](Config& c) { c.quirks_vendor = true; }},
      {"interconnect", [](Config& c) { c.interconnect = Interconnect::kPcie; }},
      {"host_numa", [](Config& c) { c.host_numa = false; }},
      {"injections", [](Config& c) { c.injections.push_back({"aclrtMalloc", 1, 207001}); }},
      {"stats_file", [](Config& c) { c.stats_file = "/tmp/stats"; }},
      {"trace_file", [](Config& c) { c.trace_file = "/tmp/trace"; }},
      {"driver", [](Config& c) { c.driver = "fake"; }},
      {"visible", [](Config& c) { c.visible = {1}; }},
      {"visible_error", [](Config& c) { c.visible_error = "bad"; }},
  };
  EXPECT_TRUE(same_config(sample(), sample()));
  for (const auto& [field, change] : changes) {
    Config c = sample();
    change(c);
    EXPECT_FALSE(same_config(sample(), c)) << field;
    ConfigSnapshots s;
    const Config* a = *s.publish(sample());
    EXPECT_NE(*s.publish(c), a) << field;
  }
  // An injection rule's fields each count too.
  Config r1 = sample(), r2 = sample();
  r1.injections.push_back({"aclrtMalloc", 1, 207001});
  r2.injections.push_back({"aclrtMalloc", 2, 207001});
  EXPECT_FALSE(same_config(r1, r2));
  r2.injections[0] = {"aclrtMalloc", 1, 207000};
  EXPECT_FALSE(same_config(r1, r2));
  r2.injections[0] = {"aclrtFree", 1, 207001};
  EXPECT_FALSE(same_config(r1, r2));
}

}  // namespace
}  // namespace aclvmm
