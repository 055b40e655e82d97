// The POSIX host services (drivers/host/posix_host_services.h): their inner steps
// host.shm.segment and host.table.map, and the segment presented through the device interface.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "drivers/host/posix_host_services.h"
#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::host {
namespace {

class PosixHostServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/aclvmm-host-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    ::unlink(expected_path().c_str());
    ::rmdir(dir_.c_str());
  }
  std::string expected_path() const {
    return dir_ + "/host." + std::to_string(::geteuid()) + "." + std::to_string(::getpid());
  }
  bool exists(const std::string& path) const {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
  testing::RecordingListener listener_;
  std::string dir_;
};

TEST_F(PosixHostServicesTest, AFailedSegmentStepCreatesNothing) {
  PosixHostServices host(listener_, true);
  listener_.arm(steps::kHostShmSegment, 1, EACCES);
  std::shared_ptr<StatisticsSegment> segment;
  EXPECT_EQ(host.create_statistics_segment(dir_, "host", 4096, &segment),
            Result::from_errno(EACCES));
  EXPECT_EQ(segment, nullptr);
  ASSERT_TRUE(host.create_statistics_segment(dir_, "host", 4096, &segment).ok());
  EXPECT_EQ(segment->path(), expected_path());
  EXPECT_EQ(segment->owner().pid, static_cast<int32_t>(::getpid()));
  EXPECT_EQ(segment->owner().uid, static_cast<uint32_t>(::geteuid()));
  EXPECT_GT(segment->owner().start_time, 0u);
  ASSERT_TRUE(segment->publish().ok());
  EXPECT_TRUE(exists(expected_path()));
  EXPECT_FALSE(segment->publish().ok()) << "published once";
  segment->withdraw();
  EXPECT_FALSE(exists(expected_path()));
}

TEST_F(PosixHostServicesTest, AFailedTableStepIsNoTable) {
  PosixHostServices host(listener_, true);
  listener_.arm(steps::kHostTableMap, 1, ENOMEM);
  EXPECT_EQ(host.allocate_table(1 << 20), nullptr);
  void* table = host.allocate_table(1 << 20);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(table)[(1 << 20) - 1], 0);
}

TEST_F(PosixHostServicesTest, NumaOffIsAHostWithoutNodes) {
  PosixHostServices off(listener_, false);
  EXPECT_EQ(off.numa_node_count(), 0);
  EXPECT_EQ(off.current_numa_node(), 0);
  PosixHostServices on(listener_, true);
  EXPECT_GE(on.numa_node_count(), 0);
  EXPECT_EQ(on.page_size(), static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)));
}

}  // namespace
}  // namespace aclvmm::dev::host
