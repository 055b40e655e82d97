// No thread can be created (RLIMIT_NPROC, in a child that became an unprivileged user: root ignores
// the limit): a stream cannot get its worker (207008) and managed memory cannot get its fault
// thread (207005). Each call fails with a message, leaves nothing behind (no stream, no
// allocation, no descriptor) and the process goes on. Before this was built, std::system_error
// escaped the C API and terminated the process.
#include <dirent.h>
#include <pthread.h>

#include "api/fork_test_util.h"
#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

constexpr int kThreadsStillWork = 77;    // the limit did not stop thread creation here
constexpr int kNoFaultTracking = 78;     // this user cannot track CPU faults on this machine

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

bool threads_can_be_created() {
  pthread_t t;
  if (pthread_create(&t, nullptr, [](void*) -> void* { return nullptr; }, nullptr) != 0) return false;
  pthread_join(t, nullptr);
  return true;
}

// In the child: becomes the other user, with no thread to spare, and starts the runtime.
int starve_threads() {
  if (!become_other_user()) return 90;
  if (!limit_resource(RLIMIT_NPROC, 0)) return 91;
  if (threads_can_be_created()) return kThreadsStillWork;
  if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return 92;
  return 0;
}

void expect_starved_child(const TimedChildResult& r) {
  if (r.exit_code == kThreadsStillWork) GTEST_SKIP() << "RLIMIT_NPROC 0 did not stop threads here";
  if (r.exit_code == kNoFaultTracking) GTEST_SKIP() << "no CPU fault tracking for an unprivileged user";
  EXPECT_CHILD_DONE_OK(r);
}

TEST(ForkThreadLimit, StreamWithoutAWorkerIs207008) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  expect_starved_child(run_in_child_for(kForkDeadlineMs, [] {
    if (int rc = starve_threads()) return rc;
    const int fds = open_fds();
    aclrtStream s = reinterpret_cast<aclrtStream>(0x1);
    CHILD_CHECK(aclrtCreateStream(&s) == 207008, 1);  // ACL_ERROR_RT_NO_STREAM_RESOURCE
    CHILD_CHECK(s == reinterpret_cast<aclrtStream>(0x1), 2);
    CHILD_CHECK(recent_msg().find("worker thread could not be created") != std::string::npos, 3);
    // The default stream is made at its first use: that call fails the same way.
    char a[64] = {1}, b[64] = {0};
    CHILD_CHECK(aclrtMemcpyAsync(b, 64, a, 64, ACL_MEMCPY_HOST_TO_HOST, nullptr) == 207008, 4);
    CHILD_CHECK(aclvmmLaunchKernel(nullptr, hold_kernel, nullptr) == 207008, 5);
    CHILD_CHECK(aclrtSynchronizeStream(nullptr) == 207008, 6);
    // Nothing was left behind, and everything else goes on.
    CHILD_CHECK(open_fds() == fds, 7);
    CHILD_CHECK(aclrtSynchronizeDevice() == kOk, 8);
    CHILD_CHECK(aclrtMemcpy(b, 64, a, 64, ACL_MEMCPY_HOST_TO_HOST) == kOk && b[0] == 1, 9);
    void* d = nullptr;
    CHILD_CHECK(aclrtMalloc(&d, k2M, ACL_MEM_MALLOC_HUGE_FIRST) == kOk, 10);
    CHILD_CHECK(aclrtMemset(d, k2M, 0x29, k2M) == kOk && all_bytes(get(d, 64), 0x29), 11);
    CHILD_CHECK(aclrtFree(d) == kOk, 12);
    CHILD_CHECK(aclrtResetDevice(0) == kOk && aclFinalize() == kOk, 13);
    return 0;
  }));
}

TEST(ForkThreadLimit, ManagedMemoryWithoutAFaultThreadIs207005) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  expect_starved_child(run_in_child_for(kForkDeadlineMs, [] {
    if (int rc = starve_threads()) return rc;
    const int fds = open_fds();
    void* m = reinterpret_cast<void*>(0x1);
    const aclError rc = aclrtMemAllocManaged(&m, k2M, ACL_RT_MEM_ATTACH_GLOBAL);
    if (rc == kOk && !fault_tracking()) return kNoFaultTracking;  // no thread was ever needed
    CHILD_CHECK(rc == 207005, 1);  // ACL_ERROR_RT_RESOURCE_ALLOC_FAIL
    CHILD_CHECK(m == reinterpret_cast<void*>(0x1), 2);
    CHILD_CHECK(recent_msg().find("fault thread could not be created") != std::string::npos, 3);
    CHILD_CHECK(live_count("managed_allocations") == 0, 4);
    CHILD_CHECK(open_fds() == fds, 5);  // the tracker's descriptor was closed again
    CHILD_CHECK(!fault_tracking(), 6);
    // A second try fails the same way (it is not remembered as "unavailable").
    CHILD_CHECK(aclrtMemAllocManaged(&m, k2M, ACL_RT_MEM_ATTACH_GLOBAL) == 207005, 7);
    CHILD_CHECK(open_fds() == fds, 8);
    CHILD_CHECK(aclrtResetDevice(0) == kOk && aclFinalize() == kOk, 9);
    return 0;
  }));
}

}  // namespace
}  // namespace aclvmm_test
