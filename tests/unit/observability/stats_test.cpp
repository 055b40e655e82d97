// The process's link counters (src/observability/stats.*): each map route counted under its own
// name in the snapshot's "links" object, a count taken back by a failing call's rollback, and
// routes outside the four ignored.
#include "observability/stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace aclvmm {
namespace {

// The counters are process totals: each test reads them before and compares afterwards.
struct Links {
  uint64_t counts[kLinkTypes] = {};
};

Links read_links() {
  Links links;
  const std::string json = links_json();
  unsigned long long v[kLinkTypes] = {};
  const int got = std::sscanf(json.c_str(),
                              "{\"sio\": %llu, \"hccs\": %llu, \"ub_one_port\": %llu, "
                              "\"ub_multi_port\": %llu}",
                              &v[0], &v[1], &v[2], &v[3]);
  EXPECT_EQ(got, 4) << json;
  for (uint32_t i = 0; i < kLinkTypes; ++i) links.counts[i] = v[i];
  return links;
}

TEST(StatsTest, EachRouteCountsUnderItsNameAndARollbackTakesItBack) {
  const Links before = read_links();
  count_link_mapping(0);
  count_link_mapping(1);
  count_link_mapping(1);
  count_link_mapping(3);
  count_link_mapping(3);
  count_link_mapping(3);
  uncount_link_mapping(3);
  const Links after = read_links();
  const uint64_t added[kLinkTypes] = {1, 2, 0, 2};
  for (uint32_t i = 0; i < kLinkTypes; ++i) {
    EXPECT_EQ(after.counts[i] - before.counts[i], added[i]) << "route " << i;
  }
  uncount_link_mapping(0);
  uncount_link_mapping(1);
  uncount_link_mapping(1);
  uncount_link_mapping(3);
  uncount_link_mapping(3);
  const Links back = read_links();
  for (uint32_t i = 0; i < kLinkTypes; ++i) EXPECT_EQ(back.counts[i], before.counts[i]);
}

TEST(StatsTest, ARouteOutsideTheFourIsNotCounted) {
  const std::string before = links_json();
  for (uint32_t link : {kLinkTypes, kLinkTypes + 1, 0xffffffffu}) {
    count_link_mapping(link);
    uncount_link_mapping(link);
    count_link_mapping(link);
  }
  EXPECT_EQ(links_json(), before);
}

}  // namespace
}  // namespace aclvmm
