// Conformance of HostServices (docs/device-interface.md §9, C44-C45).
#include <cstring>
#include <memory>
#include <string>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;

class HostConformance : public BackendTest {};

// C44: the page size is a power of two, tables are zeroed and usable, NUMA facts are in range.
TEST_P(HostConformance, C44_HostFactsAndTableMemory) {
  dev::HostServices& host = be().host();
  const uint64_t page = host.page_size();
  EXPECT_GE(page, 4096u);
  EXPECT_EQ(page & (page - 1), 0u) << page;
  EXPECT_EQ(host.page_size(), page) << "constant";
  const int32_t nodes = host.numa_node_count();
  EXPECT_GE(nodes, 0);
  const int32_t current = host.current_numa_node();
  EXPECT_GE(current, 0);
  EXPECT_LT(current, nodes > 0 ? nodes : 1);
  EXPECT_EQ(be().capabilities().host_numa, nodes > 0);
  EXPECT_GT(host.memory_total(), 0u);
  EXPECT_LE(host.memory_free(), host.memory_total());

  constexpr uint64_t kTable = 3 * dev::kMiB;
  auto* table = static_cast<uint64_t*>(host.allocate_table(kTable));
  ASSERT_NE(table, nullptr);
  for (uint64_t i = 0; i < kTable / sizeof(uint64_t); i += 509) {
    ASSERT_EQ(table[i], 0u) << i;
    table[i] = i + 1;
  }
  for (uint64_t i = 0; i < kTable / sizeof(uint64_t); i += 509) ASSERT_EQ(table[i], i + 1);
  auto* other = static_cast<uint64_t*>(host.allocate_table(4096));
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other + 512 <= table || other >= table + kTable / sizeof(uint64_t))
      << "tables do not overlap";
}

// C45: a segment is invisible until publish; withdraw removes its name.
TEST_P(HostConformance, C45_SegmentNameFollowsPublishAndWithdraw) {
  const std::string dir = harness().segment_dir();
  ASSERT_FALSE(dir.empty());
  std::shared_ptr<dev::StatisticsSegment> segment;
  ASSERT_TRUE(be().host().create_statistics_segment(dir, "conformance", 8192, &segment).ok());
  ASSERT_NE(segment, nullptr);
  const std::string name = dir + "/conformance." + std::to_string(harness().own_uid()) + "." +
                           std::to_string(harness().own_pid());
  EXPECT_EQ(segment->path(), name);
  EXPECT_EQ(segment->owner().pid, harness().own_pid());
  EXPECT_EQ(segment->owner().uid, harness().own_uid());
  ASSERT_EQ(segment->size(), 8192u);
  auto* bytes = static_cast<uint8_t*>(segment->data());
  for (size_t i = 0; i < segment->size(); ++i) ASSERT_EQ(bytes[i], 0) << i;
  std::memset(bytes, 0x5a, 64);
  EXPECT_FALSE(harness().segment_visible(name)) << "visible before publish";
  ASSERT_TRUE(segment->publish().ok());
  EXPECT_TRUE(harness().segment_visible(name));
  segment->withdraw();
  EXPECT_FALSE(harness().segment_visible(name));
  EXPECT_EQ(bytes[63], 0x5a) << "the mapping lives as long as the object";
  segment.reset();

  // A destroyed, never published segment leaves no name either.
  ASSERT_TRUE(be().host().create_statistics_segment(dir, "conformance", 4096, &segment).ok());
  segment.reset();
  EXPECT_FALSE(harness().segment_visible(name));

  EXPECT_EQ(be().host()
                .create_statistics_segment(harness().missing_dir(), "conformance", 4096, &segment)
                .condition(),
            Condition::kNotFound);
  EXPECT_EQ(segment, nullptr);
}

ACLVMM_CONFORMANCE_SUITE(HostConformance);

}  // namespace
}  // namespace aclvmm::conformance
