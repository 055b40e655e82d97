// Managed memory and leaks (emulation.md §9: aclFinalize releases managed allocations; §6 fault
// tracking): after aclFinalize nothing of managed memory is left — no allocation, no fault
// tracker descriptor, no fault thread — and a new runtime tracks faults again.
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

// Entries of a /proc directory (open descriptors, threads).
int entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}
int fds() { return entries("/proc/self/fd") - 1; }  // minus the one opendir holds
int tasks() { return entries("/proc/self/task"); }

class ManagedLeakTest : public AclTest {};

TEST_F(ManagedLeakTest, FinalizeReleasesAllocationsTrackerDescriptorAndFaultWorker) {
  const ChildResult r = run_in_child([] {
    alarm(60);
    // Drop the runtime inherited from the parent so that this process starts from nothing.
    (void)aclInit(nullptr);
    while (aclFinalize() == kOk) {
    }
    CHILD_CHECK(aclInit(nullptr) == kOk, 1);
    CHILD_CHECK(aclrtSetDevice(0) == kOk, 2);
    const int fds_before = fds(), tasks_before = tasks();
    CHILD_CHECK(live_count("managed_allocations") == 0, 3);
    void* p[3] = {};
    for (int i = 0; i < 3; ++i) {
      CHILD_CHECK(aclrtMemAllocManaged(&p[i], (i + 1) * k2M, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 4);
      CHILD_CHECK(aclrtMemset(p[i], k2M, 0x40 + i, k2M) == kOk, 5);  // to device 0
      CHILD_CHECK(static_cast<char*>(p[i])[7] == 0x40 + i, 6);       // and back (a CPU fault)
    }
    CHILD_CHECK(aclrtMemset(p[2], k2M, 1, k2M) == kOk, 7);  // left on the device
    CHILD_CHECK(fault_tracking(), 8);
    CHILD_CHECK(live_count("managed_allocations") == 3, 9);
    CHILD_CHECK(device_used(stats(), 0) >= static_cast<long long>(k2M), 10);
    const int fds_during = fds(), tasks_during = tasks();
    CHILD_CHECK(fds_during > fds_before, 11);      // the tracker's descriptor (and the memory's)
    CHILD_CHECK(tasks_during > tasks_before, 12);  // the fault thread
    aclrtResetDeviceForce(0);
    CHILD_CHECK(aclFinalize() == kOk, 13);  // releases the 3 allocations (with a warning)
    const int fds_after = fds(), tasks_after = tasks();
    CHILD_CHECK(fds_after == fds_before, 14);
    CHILD_CHECK(tasks_after == tasks_before, 15);
    // A new runtime: nothing managed is alive, and fault tracking starts again on demand.
    CHILD_CHECK(aclInit(nullptr) == kOk, 16);
    CHILD_CHECK(aclrtSetDevice(0) == kOk, 17);
    CHILD_CHECK(live_count("managed_allocations") == 0, 18);
    CHILD_CHECK(device_used(stats(), 0) == 0, 19);
    void* q = nullptr;
    CHILD_CHECK(aclrtMemAllocManaged(&q, k2M, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 20);
    CHILD_CHECK(fault_tracking(), 21);
    const long long faults = stat_int(stats(), "managed.host_faults");
    CHILD_CHECK(aclrtMemset(q, k2M, 0x7e, k2M) == kOk, 22);
    CHILD_CHECK(static_cast<char*>(q)[k2M - 1] == 0x7e, 23);
    CHILD_CHECK(stat_int(stats(), "managed.host_faults") == faults + 1, 24);
    CHILD_CHECK(aclrtFree(q) == kOk, 25);
    aclrtResetDeviceForce(0);
    CHILD_CHECK(aclFinalize() == kOk, 26);
    CHILD_CHECK(fds() == fds_before && tasks() == tasks_before, 27);
    return 0;
  });
  EXPECT_EQ(r.signal, 0) << (r.signal == SIGALRM ? "timed out (a step hangs)" : "crashed");
  EXPECT_EQ(r.exit_code, 0) << "see the child's message on stderr";
}

// Freeing every allocation explicitly leaves nothing for aclFinalize to report.
TEST_F(ManagedLeakTest, FreedAllocationsAreNotLive) {
  void* p = nullptr;
  void* q = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  ASSERT_EQ(aclrtMemAllocManaged(&q, 3 * k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  ASSERT_EQ(aclrtMemset(q, 3 * k2M, 9, 3 * k2M), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 2);
  EXPECT_EQ(aclrtFree(q), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 1);
  EXPECT_EQ(device_used(stats(), 0), 0) << "the device charge of q's pages went back";
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(live_count("managed_allocations"), 0);
}

}  // namespace
}  // namespace aclvmm_test
