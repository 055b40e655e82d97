// The core's BackendListener (src/runtime/core_listener.h): a device backend's injection points
// answered from the core's rule registry, under the current step names and under the legacy
// drv.* names of the same work; the usage a backend reports; the backend the runtime opens, whose
// ledger is the capacity authority that the connected pools mirror (D8).
#include "runtime/core_listener.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "drivers/injection_steps.h"
#include "observability/trace.h"
#include "runtime/injection.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

class CoreListenerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"drv.map_cpu", "emu.cpu.map", "drv.create_physical",
                             "dev.phys.create", "emu.memfd.create"}) {
      injection_arm(name, 0, 0);
    }
  }
  CoreListener& listener() { return core_listener(); }
};

TEST_F(CoreListenerTest, ARuleFiresUnderItsNameAndItsLegacyName) {
  EXPECT_FALSE(listener().injection_armed().load());
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "nothing armed";
  injection_arm("drv.map_cpu", 2, ENOMEM);
  EXPECT_TRUE(listener().injection_armed().load());
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "the first execution counts";
  EXPECT_EQ(injection_remaining("drv.map_cpu"), 1u);
  EXPECT_EQ(listener().injected(steps::kEmuCpuUnmap), 0) << "another step is not counted";
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), ENOMEM);
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "a rule fires once";
  EXPECT_FALSE(listener().injection_armed().load());

  injection_arm("emu.cpu.map", 1, EIO);
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), EIO);
  injection_arm("dev.phys.create", 1, ENOSPC);
  EXPECT_EQ(listener().injected(steps::kPhysicalCreate), ENOSPC);
}

TEST_F(CoreListenerTest, TheOpenedBackendReportsItsUsageAndAsksTheRegistry) {
  Config config;
  config.device_count = 2;
  config.device_memory = 0;  // the SoC's size
  config.product.memory_bytes = 64 * dev::kMiB;
  auto opened = open_device(config);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::shared_ptr<dev::DeviceBackend> be = *opened;
  dev::MemoryInfo info;
  ASSERT_TRUE(be->devices().memory_info(1, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.total, 64 * dev::kMiB);

  const int64_t before = listener().reported_usage(1);
  dev::PhysicalId id;
  const dev::PhysicalSpec spec{dev::Location::device(1), dev::PageType::kHuge, dev::MemType::kHbm,
                               4 * dev::kMiB};
  ASSERT_TRUE(be->physical().create(spec, &id).ok());
  EXPECT_EQ(listener().reported_usage(1), before + static_cast<int64_t>(4 * dev::kMiB));
  ASSERT_TRUE(be->physical().release(id).ok());
  EXPECT_EQ(listener().reported_usage(1), before);

  // A legacy rule reaches the backend's inner step through the listener.
  injection_arm("drv.create_physical", 1, EMFILE);
  EXPECT_EQ(be->physical().create(spec, &id), dev::Result::from_errno(EMFILE));
  EXPECT_EQ(listener().reported_usage(1), before) << "the failed create gave its charge back";
  ASSERT_TRUE(be->physical().create(spec, &id).ok());
  ASSERT_TRUE(be->physical().release(id).ok());
}

// D8: what an opened backend charges reaches the pools of the start that opened it, and their
// monitors' counters; its ledger refuses what does not fit, also a pool's (managed) charges.
class DeviceUsageTest : public ::testing::Test {
 protected:
  static std::shared_ptr<dev::DeviceBackend> open(uint64_t device_memory) {
    Config config;
    config.device_count = 2;
    config.device_memory = device_memory;
    auto opened = open_device(config);
    EXPECT_TRUE(opened.ok()) << opened.status().message();
    return opened.ok() ? *opened : nullptr;
  }
  static std::shared_ptr<MemoryPool> pool(uint64_t total, std::atomic<uint64_t>* counter) {
    UsageMirror mirror;
    mirror.used = counter;
    return std::make_shared<MemoryPool>(total, mirror);
  }
  static dev::PhysicalSpec spec(dev::DeviceIndex d, uint64_t size) {
    return dev::PhysicalSpec{dev::Location::device(d), dev::PageType::kHuge, dev::MemType::kHbm,
                             size};
  }
};

TEST_F(DeviceUsageTest, TheLedgersReportsMoveTheConnectedPoolsAndTheirCounters) {
  auto be = open(64 * dev::kMiB);
  ASSERT_NE(be, nullptr);
  std::atomic<uint64_t> counter{0};
  std::vector<std::shared_ptr<MemoryPool>> pools = {pool(64 * dev::kMiB, nullptr),
                                                    pool(64 * dev::kMiB, &counter)};
  auto host = pool(1 << 30, nullptr);
  connect_pools(be, pools, host);
  dev::PhysicalId id;
  ASSERT_TRUE(be->physical().create(spec(1, 4 * dev::kMiB), &id).ok());
  EXPECT_EQ(pools[1]->used(), 4 * dev::kMiB);
  EXPECT_EQ(counter.load(), 4 * dev::kMiB);
  EXPECT_EQ(pools[0]->used(), 0u);
  dev::PhysicalId on_host;
  ASSERT_TRUE(be->physical()
                  .create(dev::PhysicalSpec{dev::Location::host(), dev::PageType::kHuge,
                                            dev::MemType::kDdr, 2 * dev::kMiB}, &on_host)
                  .ok());
  EXPECT_EQ(host->used(), 2 * dev::kMiB);
  ASSERT_TRUE(be->physical().release(id).ok());
  ASSERT_TRUE(be->physical().release(on_host).ok());
  EXPECT_EQ(pools[1]->used(), 0u);
  EXPECT_EQ(counter.load(), 0u);
  EXPECT_EQ(host->used(), 0u);
}

TEST_F(DeviceUsageTest, TheLedgerRefusesAndManagedPagesChargeIt) {
  // Pools larger than the device: the device's ledger decides.
  auto be = open(8 * dev::kMiB);
  ASSERT_NE(be, nullptr);
  std::vector<std::shared_ptr<MemoryPool>> pools = {pool(64 * dev::kMiB, nullptr),
                                                    pool(64 * dev::kMiB, nullptr)};
  connect_pools(be, pools, nullptr);
  dev::PhysicalId id;
  EXPECT_EQ(be->physical().create(spec(0, 10 * dev::kMiB), &id).condition(),
            dev::Condition::kOutOfMemory);
  EXPECT_EQ(pools[0]->used(), 0u);
  ASSERT_TRUE(be->physical().create(spec(0, 6 * dev::kMiB), &id).ok());
  // Managed pages (the backend's UnifiedMemory, step 6) meet the same ledger: of two pages
  // prefetched to the device only one fits, the other evicts it, and the pool mirrors it.
  dev::MemoryInfo info;
  uint64_t managed = 0;
  ASSERT_TRUE(be->unified_memory().allocate(4 * dev::kMiB, &managed).ok());
  if (be->unified_memory().tracking().residency) {
    ASSERT_TRUE(be->unified_memory().prefetch(managed, 4 * dev::kMiB, dev::Location::device(0)).ok());
    EXPECT_EQ(pools[0]->used(), 8 * dev::kMiB);
    ASSERT_TRUE(be->devices().memory_info(0, dev::MemoryKind::kHbm, &info).ok());
    EXPECT_EQ(info.free, 0u);
  }
  ASSERT_TRUE(be->unified_memory().free(managed, dev::FreeMode::kNormal).ok());
  EXPECT_EQ(pools[0]->used(), 6 * dev::kMiB);
  ASSERT_TRUE(be->physical().release(id).ok());
  EXPECT_EQ(pools[0]->used(), 0u);
  ASSERT_TRUE(be->devices().memory_info(0, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.free, 8 * dev::kMiB);
}

TEST_F(DeviceUsageTest, EachBackendReportsToThePoolsOfItsOwnStart) {
  auto first = open(64 * dev::kMiB);
  auto second = open(64 * dev::kMiB);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::vector<std::shared_ptr<MemoryPool>> old_pools = {pool(64 * dev::kMiB, nullptr)};
  std::vector<std::shared_ptr<MemoryPool>> new_pools = {pool(64 * dev::kMiB, nullptr)};
  connect_pools(first, old_pools, nullptr);
  dev::PhysicalId held;
  ASSERT_TRUE(first->physical().create(spec(0, 2 * dev::kMiB), &held).ok());
  connect_pools(second, new_pools, nullptr);  // a restart
  dev::PhysicalId fresh;
  ASSERT_TRUE(second->physical().create(spec(0, 4 * dev::kMiB), &fresh).ok());
  EXPECT_EQ(old_pools[0]->used(), 2 * dev::kMiB);
  EXPECT_EQ(new_pools[0]->used(), 4 * dev::kMiB);
  ASSERT_TRUE(first->physical().release(held).ok());  // memory that outlived its start
  EXPECT_EQ(old_pools[0]->used(), 0u);
  EXPECT_EQ(new_pools[0]->used(), 4 * dev::kMiB);
  ASSERT_TRUE(second->physical().release(fresh).ok());
}

// A backend's residency events are the managed-memory trace (docs/managed-memory.md §7): the
// same events the core's own model records, through the listener of the start that opened it.
TEST(CoreListenerTrace, ResidencyEventsAreRecordedInTheTrace) {
  const std::string path = ::testing::TempDir() + "core_listener_trace.json";
  trace::open(path);
  DeviceUsage usage;
  usage.residency_event(dev::ResidencyEvent{"to_device", 0x90000200000ull, 1});
  core_listener().residency_event(dev::ResidencyEvent{"cpu_fault", 0x90000400000ull, dev::kNoDevice});
  trace::flush();
  trace::open("");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  EXPECT_NE(json.find("\"name\": \"to_device\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"page\": \"0x90000200000\", \"device\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"page\": \"0x90000400000\", \"device\": -1"), std::string::npos) << json;
}

}  // namespace
}  // namespace aclvmm
