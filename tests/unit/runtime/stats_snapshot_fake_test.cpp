// The statistics snapshot (src/runtime/stats_snapshot.*) over the fake backend (label `fake`):
// composed from the pieces a runtime holds (StatsSources), it reports the configuration it was
// given, each device's pool as the fake's ledger moved it, every live object the core keeps
// records of (handles, reservations, mappings, blocks, managed ranges) and the fake's managed
// statistics; what a call creates shows up and goes again with it. The keys and their order are
// the API's (tests/api/ext_test.cpp checks them on emu); this checks the numbers.
#include <gtest/gtest.h>

#include <string>

#include "base/units.h"
#include "runtime/config.h"
#include "runtime/stats_snapshot.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

class StatsSnapshotFakeTest : public ::testing::Test {
 protected:
  StatsSnapshotFakeTest() {
    config_.device_count = 2;  // the stand-in's
    config_.driver = "fake";
    config_.product.soc = "StandInSoc";
  }
  std::string json() {
    return stats_json(StatsSources{config_, f_.rt, f_.space, f_.physical, f_.sharing, f_.managed});
  }
  static std::string live(int handles, int reservations, int mappings, int managed, int blocks,
                          int host_blocks) {
    return "\"live\": {\"physical_handles\": " + std::to_string(handles) +
           ", \"reservations\": " + std::to_string(reservations) +
           ", \"mappings\": " + std::to_string(mappings) + ", \"exports\": 0, \"imports\": 0" +
           ", \"managed_allocations\": " + std::to_string(managed) +
           ", \"device_allocations\": " + std::to_string(blocks) +
           ", \"host_allocations\": " + std::to_string(host_blocks) + ", \"host_registrations\": 0, \"binaries\": 0, \"ipc_keys\": 0, \"ipc_imports\": 0}";
  }
  static std::string device(int id, uint64_t used) {
    return "{\"id\": " + std::to_string(id) + ", \"memory_total\": " +
           std::to_string(testing::StandInRuntime::kPoolBytes) +
           ", \"memory_used\": " + std::to_string(used) + "}";
  }

  Config config_;
  testing::FakeRuntime f_;
};

TEST_F(StatsSnapshotFakeTest, AFreshRuntimeReportsItsConfigurationAndNothingLive) {
  const std::string s = json();
  EXPECT_EQ(s.rfind("{\"soc\": \"StandInSoc\", ", 0), 0u) << s;
  EXPECT_NE(s.find("\"driver\": \"fake\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"devices\": [" + device(0, 0) + ", " + device(1, 0) + "]"), std::string::npos)
      << s;
  EXPECT_NE(s.find(live(0, 0, 0, 0, 0, 0)), std::string::npos) << s;
  // The managed group as the fake's UnifiedMemory reports it (no tracking asked for, nothing
  // moved), written out here so that what is placed there is checked, not only where.
  EXPECT_NE(s.find("\"managed\": {\"fault_tracking\": false, \"cpu_write_tracking\": false, "
                   "\"host_faults\": 0, \"device_faults\": 0, \"bytes_to_device\": 0, "
                   "\"bytes_to_host\": 0, \"evictions\": 0, \"prefetch_bytes\": 0, "
                   "\"read_copy_invalidations\": 0}"),
            std::string::npos)
      << s;
  f_.device().expect_no_violations();
}

TEST_F(StatsSnapshotFakeTest, WhatTheCallsMakeIsCountedAndGoesWithThem) {
  vmm::PhysicalSpec on_0;
  auto handle = f_.vmm.malloc_physical(2 * kMiB, on_0);
  ASSERT_TRUE(handle.ok()) << handle.status().message();
  auto va = f_.vmm.reserve(4 * kMiB, 0, 0, false);
  ASSERT_TRUE(va.ok()) << va.status().message();
  ASSERT_TRUE(f_.vmm.map(*va, 2 * kMiB, 0, *handle, false).ok());
  auto block = f_.vmm.device_malloc(2 * kMiB, 1);  // HUGE_ONLY on the current device, 1
  ASSERT_TRUE(block.ok()) << block.status().message();
  auto pinned = f_.vmm.host_malloc(100);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  auto managed = f_.managed.allocate(2 * kMiB);
  ASSERT_TRUE(managed.ok()) << managed.status().message();

  std::string s = json();
  EXPECT_NE(s.find(live(1, 1, 1, 1, 1, 1)), std::string::npos) << s;
  // The pools as the fake's ledger moved them: the handle on device 0, the block (2 MiB of
  // pages and its 32-byte pad: one more page) on device 1.
  EXPECT_EQ(f_.rt.pools[0]->used(), 2 * kMiB);
  EXPECT_NE(s.find(device(0, 2 * kMiB) + ", " + device(1, f_.rt.pools[1]->used())),
            std::string::npos)
      << s;
  EXPECT_GT(f_.rt.pools[1]->used(), 2 * kMiB);
  EXPECT_NE(s.find("\"managed\": " + f_.managed.stats_json()), std::string::npos) << s;

  ASSERT_TRUE(f_.managed.free(*managed).ok());
  ASSERT_TRUE(f_.vmm.host_free(*pinned).ok());
  ASSERT_TRUE(f_.vmm.device_free(*block).ok());
  ASSERT_TRUE(f_.vmm.unmap(*va).ok());
  ASSERT_TRUE(f_.vmm.release(*va).ok());
  ASSERT_TRUE(f_.vmm.free_physical(*handle).ok());
  s = json();
  EXPECT_NE(s.find(live(0, 0, 0, 0, 0, 0)), std::string::npos) << s;
  EXPECT_NE(s.find("\"devices\": [" + device(0, 0) + ", " + device(1, 0) + "]"), std::string::npos)
      << s;
  f_.device().expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
