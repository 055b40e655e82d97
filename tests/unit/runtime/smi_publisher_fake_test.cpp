// SmiPublisher (src/runtime/smi_publisher.*) over the fake backend's statistics segment: the
// segment's header as aclvmm-smi reads it (observability/smi_layout.h), named only once written,
// one segment per process across starts, the pools' mirrors pointing into it, active while started,
// withdrawn at exit; and the refusals that leave the process unpublished without a retry.
//
// SmiPublisher takes the device backend's HostServices: here the fake's, whose segments are
// buffers with published names instead of emu's files. SmiPublisher is
// the process's one publisher and tries once per process, so each case runs in a forked child (a
// "process" of its own; the fake's pid is the child's, as own_segment() compares it to getpid()).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "api/hostile_util.h"
#include "observability/live_counts.h"
#include "observability/smi_layout.h"
#include "runtime/smi_publisher.h"
#include "unit/testing/fake_device.h"
#include "unit/testing/forwarding_backend.h"

namespace aclvmm {
namespace {

// The fake's host services, counting the segments asked for (SmiPublisher tries once per
// process).
class CountingHost final : public testing::ForwardingHost {
 public:
  explicit CountingHost(dev::HostServices& host) : ForwardingHost(host) {}
  dev::Result create_statistics_segment(const std::string& dir, const std::string& prefix,
                                        size_t size,
                                        std::shared_ptr<dev::StatisticsSegment>* out) override {
    ++created_;
    return ForwardingHost::create_statistics_segment(dir, prefix, size, out);
  }
  int created() const { return created_; }

 private:
  int created_ = 0;
};

Config config_of(int devices, uint64_t memory, const char* soc) {
  Config config;
  config.device_count = devices;
  config.device_memory = memory;
  config.product.soc = soc;
  return config;
}

// Runs `body` in a forked child against a fake whose "process" is the child; the child's exit
// code is the number of failed checks (gtest's expectations do not cross the fork).
template <typename Body>
void in_child_process(Body body) {
  const auto result = aclvmm_test::run_in_child_for(20000, [&]() -> int {
    dev::fake::FakeConfig config;
    config.pid = static_cast<int32_t>(getpid());
    testing::FakeDevice device(config);
    CountingHost host(device.device()->host());
    return body(device, host);
  });
  EXPECT_CHILD_DONE_OK(result);
}

#define CHILD_CHECK(cond)                                             \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

TEST(SmiPublisherFakeTest, OneSegmentPerProcessWithTheHeaderAndCountersTheMonitorReads) {
  in_child_process([](testing::FakeDevice& device, CountingHost& host) {
    int failures = 0;
    setenv(smi::kDirEnv, "/fake/smi", 1);
    SmiPublisher& publisher = SmiPublisher::get();
    const std::string path = "/fake/smi/aclvmm.1000." + std::to_string(getpid());
    auto mirrors = publisher.publish(host, config_of(2, 64 * dev::kMiB, "Ascend910B3"));
    CHILD_CHECK(mirrors.size() == 2);
    CHILD_CHECK(device.fake().segment_published(path));
    CHILD_CHECK(mirrors[0].used != nullptr && mirrors[1].used != nullptr);
    if (failures != 0 || !mirrors[0].keep) return failures + 100;
    // What a mirror keeps mapped is the segment itself.
    auto* s = static_cast<smi::Segment*>(static_cast<dev::StatisticsSegment*>(mirrors[0].keep.get())->data());
    CHILD_CHECK(s->magic == smi::kMagic);
    CHILD_CHECK(s->version == smi::kVersion);
    CHILD_CHECK(s->size == sizeof(smi::Segment));
    CHILD_CHECK(s->pid == getpid());
    CHILD_CHECK(s->uid == 1000u);
    CHILD_CHECK(s->start_time == 1u);
    CHILD_CHECK(s->pid_namespace == 1u);
    CHILD_CHECK(std::strcmp(s->name, "fake") == 0);
    CHILD_CHECK(std::strcmp(s->soc, "Ascend910B3") == 0);
    CHILD_CHECK(s->device_count == 2);
    CHILD_CHECK(s->devices[0].total == 64 * dev::kMiB && s->devices[1].total == 64 * dev::kMiB);
    CHILD_CHECK(s->active.load() == 1u);
    CHILD_CHECK(&s->devices[1].used == mirrors[1].used);
    // The live counts start at zero and from now on are published into this segment.
    for (int i = 0; i < smi::kLiveCounts; ++i) CHILD_CHECK(s->live[i].load() == 0u);
    publish_live_count(LiveCount::kHostRegistrations, 2);
    publish_live_count(LiveCount::kBinaries, 1);
    CHILD_CHECK(s->live[static_cast<int>(LiveCount::kHostRegistrations)].load() == 2u);
    CHILD_CHECK(s->live[static_cast<int>(LiveCount::kBinaries)].load() == 1u);
    publish_live_count(LiveCount::kHostRegistrations, 0);
    publish_live_count(LiveCount::kBinaries, 0);

    // A pool with the mirror: its charges show in the segment, and only its device's counter.
    {
      MemoryPool pool(64 * dev::kMiB, mirrors[1]);
      CHILD_CHECK(pool.charge(3 * dev::kMiB));
      CHILD_CHECK(s->devices[1].used.load() == 3 * dev::kMiB);
      CHILD_CHECK(s->devices[0].used.load() == 0u);
      pool.uncharge(3 * dev::kMiB);
      CHILD_CHECK(s->devices[1].used.load() == 0u);
    }

    publisher.deactivate();  // aclFinalize
    CHILD_CHECK(s->active.load() == 0u);
    CHILD_CHECK(device.fake().segment_published(path));
    // The next start: the same segment, its header rewritten for the new configuration.
    auto again = publisher.publish(host, config_of(1, 32 * dev::kMiB, "Ascend910B1"));
    CHILD_CHECK(host.created() == 1);
    CHILD_CHECK(again.size() == 1 && again[0].used == mirrors[0].used);
    CHILD_CHECK(s->device_count == 1);
    CHILD_CHECK(std::strcmp(s->soc, "Ascend910B1") == 0);
    CHILD_CHECK(s->devices[0].total == 32 * dev::kMiB);
    CHILD_CHECK(s->active.load() == 1u);

    publisher.remove();  // process exit
    CHILD_CHECK(!device.fake().segment_published(path));
    CHILD_CHECK(device.fake().violations() == 0);
    return failures;
  });
}

TEST(SmiPublisherFakeTest, ARefusedSegmentLeavesTheProcessUnpublishedWithoutRetrying) {
  const struct {
    const char* dir;
    int devices;
    bool created;  // the backend was asked for a segment
  } cases[] = {
      {"/fake/missing", 2, true},  // the fake has no such directory: ENOENT
      {"none", 2, false},          // ACLVMM_SMI_DIR=none: nothing asked
      {"/fake/smi", smi::kMaxDevices + 1, true},  // more devices than the segment holds
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dir);
    in_child_process([&c](testing::FakeDevice& device, CountingHost& host) {
      int failures = 0;
      setenv(smi::kDirEnv, c.dir, 1);
      SmiPublisher& publisher = SmiPublisher::get();
      for (int start = 0; start < 2; ++start) {
        auto mirrors = publisher.publish(host, config_of(c.devices, 64 * dev::kMiB, "Ascend910B1"));
        CHILD_CHECK(mirrors.size() == static_cast<size_t>(c.devices));
        for (const UsageMirror& m : mirrors) CHILD_CHECK(m.used == nullptr && !m.keep);
      }
      CHILD_CHECK(host.created() == (c.created ? 1 : 0));
      publisher.deactivate();
      publisher.remove();
      CHILD_CHECK(device.fake().violations() == 0);
      return failures;
    });
  }
}

}  // namespace
}  // namespace aclvmm
