// The managed counters of the statistics are totals for the life of the process
// (docs/managed-memory.md §7, emulation.md "Statistics"): aclFinalize, which closes the device
// backend that counted them, neither resets nor loses them, and the next runtime's counts add up.
#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

// One page prefetched to the device per runtime: prefetch_bytes and bytes_to_device rise by a
// page each time and keep their value across aclFinalize, in the snapshot a stopped runtime
// gives and in the next runtime's.
TEST(ManagedStatsRestart, CountersSurviveFinalize) {
  EXPECT_CHILD_OK(run_in_child([] {
    for (int round = 1; round <= 2; ++round) {
      if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return 10;
      void* p = nullptr;
      if (aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL) != kOk) return 11;
      static_cast<char*>(p)[0] = 1;  // the page exists on the host
      if (aclrtMemManagedPrefetchAsync(p, k2M, kDev0, 0, nullptr) != kOk) return 12;
      if (aclrtSynchronizeStream(nullptr) != kOk) return 13;
      const ManagedCounters running = managed_counters();
      if (running.prefetch != round * kManagedPage) return 20 + round;
      if (aclrtFree(p) != kOk || aclrtResetDevice(0) != kOk || aclFinalize() != kOk) return 14;
      // aclvmmStatsJson starts a new runtime, with a new backend counting from 0.
      const ManagedCounters after = managed_counters();
      if (after.prefetch != running.prefetch) return 30 + round;
      if (after.to_device != running.to_device) return 40 + round;
    }
    return 0;
  }));
}

}  // namespace
}  // namespace aclvmm_test
