// The fake's host services (drivers/fake/fake_host.h): configured facts, segments as buffers
// with names only while published, tables zeroed.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

TEST(FakeHostTest, FactsAreConfigured) {
  FakeConfig config;
  config.page_size = 16384;
  config.numa_nodes = 4;
  config.current_numa_node = 3;
  config.host_memory = 512 * kMiB;
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  ASSERT_TRUE(open_fake_backend(config, &listener, &be).ok());
  EXPECT_EQ(be->host().page_size(), 16384u);
  EXPECT_EQ(be->host().numa_node_count(), 4);
  EXPECT_EQ(be->host().current_numa_node(), 3);
  EXPECT_EQ(be->host().memory_total(), 512 * kMiB);
  EXPECT_EQ(be->host().memory_free(), 512 * kMiB);
  EXPECT_TRUE(be->capabilities().host_numa);
}

TEST(FakeHostTest, SegmentsOutliveTheBackendAndPublishOnce) {
  FakeConfig config;
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  FakeBackend* fake = nullptr;
  ASSERT_TRUE(open_fake_backend(config, &listener, &be, &fake).ok());
  std::shared_ptr<StatisticsSegment> a, b;
  ASSERT_TRUE(be->host().create_statistics_segment("/fake/smi", "s", 64, &a).ok());
  ASSERT_TRUE(be->host().create_statistics_segment("/fake/smi", "s", 64, &b).ok());
  EXPECT_EQ(a->path(), "/fake/smi/s.1000.4242");
  ASSERT_TRUE(a->publish().ok());
  EXPECT_EQ(a->publish().condition(), Condition::kNotPermitted) << "once";
  EXPECT_EQ(b->publish().condition(), Condition::kBusy) << "the name is another segment's";
  EXPECT_TRUE(fake->segment_published(a->path()));
  b->withdraw();  // never published: the name stays a's
  EXPECT_TRUE(fake->segment_published(a->path()));
  be.reset();
  a->withdraw();  // the backend is gone; its segments are not
  b.reset();
  EXPECT_EQ(static_cast<uint8_t*>(a->data())[63], 0);
}

TEST(FakeHostTest, TablesAreZeroedAndDistinct) {
  FakeConfig config;
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  ASSERT_TRUE(open_fake_backend(config, &listener, &be).ok());
  auto* t1 = static_cast<uint64_t*>(be->host().allocate_table(1 << 20));
  auto* t2 = static_cast<uint64_t*>(be->host().allocate_table(64));
  ASSERT_NE(t1, nullptr);
  ASSERT_NE(t2, nullptr);
  EXPECT_NE(t1, t2);
  for (size_t i = 0; i < (1 << 20) / 8; i += 97) ASSERT_EQ(t1[i], 0u);
  EXPECT_EQ(be->host().allocate_table(0), nullptr);
}

}  // namespace
}  // namespace aclvmm::dev::fake
