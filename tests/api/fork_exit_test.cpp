// fork(): a child of a process that used the runtime can always end (docs/architecture.md, "fork").
//
// Every way the parent may have used it (streams that ran work, the default stream, a managed
// prefetch, a task still running, queued work, managed pages on a device with the fault thread
// running, an export with its listener) crossed with every way a child may end (exit(), its own
// aclFinalize, aclInit + aclFinalize, a device reset, a synchronisation): the child ends within the
// deadline with the codes a fresh process gets. Before this was built, the child of a process that
// had used a stream hung in exit() (destroying a condition variable the parent's worker waited on).
#include <sys/wait.h>

#include "api/fork_test_util.h"
#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

enum class Parent {
  kStreamThatRan,
  kDefaultStream,
  kManagedPrefetchOnDefaultStream,
  kTaskRunning,
  kQueuedBehindRunningTask,
  kManagedPageOnDevice,
  kExportListening,
};

struct ParentCase {
  const char* name;
  Parent what;
};

struct ChildCase {
  const char* name;
  std::function<int()> end;  // 0 when every call gave the code a fresh process gets
};

class ForkExit : public ManagedTest {
 protected:
  void TearDown() override {
    gate_->open.store(1);
    if (stream_) {
      EXPECT_EQ(aclrtDestroyStream(stream_), kOk);
    }
    if (managed_) {
      EXPECT_EQ(aclrtFree(managed_), kOk);
    }
    if (handle_) {
      EXPECT_EQ(aclrtFreePhysical(handle_), kOk);
    }
    ManagedTest::TearDown();
  }

  // Leaves the parent in the state `what` names.
  void use_runtime(Parent what) {
    switch (what) {
      case Parent::kStreamThatRan:
        ASSERT_EQ(aclrtCreateStream(&stream_), kOk);
        ASSERT_EQ(aclrtMemsetAsync(plain(), 64, 0x11, 64, stream_), kOk);
        ASSERT_EQ(aclrtSynchronizeStream(stream_), kOk);
        break;
      case Parent::kDefaultStream:
        ASSERT_EQ(aclrtMemsetAsync(plain(), 64, 0x12, 64, nullptr), kOk);
        ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
        break;
      case Parent::kManagedPrefetchOnDefaultStream:
        managed_ = managed(k2M);
        ASSERT_EQ(aclrtMemManagedPrefetchAsync(managed_, k2M, kDev0, 0, nullptr), kOk);
        ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
        break;
      case Parent::kTaskRunning:
      case Parent::kQueuedBehindRunningTask:
        ASSERT_EQ(aclrtCreateStream(&stream_), kOk);
        ASSERT_EQ(aclvmmLaunchKernel(stream_, hold_kernel, gate_), kOk);
        ASSERT_TRUE(wait_started(*gate_));
        if (what == Parent::kQueuedBehindRunningTask) {
          ASSERT_EQ(aclrtMemsetAsync(plain(), 64, 0x13, 64, stream_), kOk);
        }
        break;
      case Parent::kManagedPageOnDevice:
        managed_ = managed(k2M);
        ASSERT_EQ(aclrtMemset(managed_, k2M, 0x14, k2M), kOk);  // migrates to device 0
        break;
      case Parent::kExportListening: {
        handle_ = make_handle();
        uint64_t token = 0;
        ASSERT_EQ(aclrtMemExportToShareableHandle(handle_, ACL_MEM_HANDLE_TYPE_NONE,
                                                  ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                                  &token),
                  kOk);
        break;
      }
    }
  }

  char* plain() { return host_; }

  char host_[64] = {};
  HoldGate* gate_ = shared_object<HoldGate>();
  aclrtStream stream_ = nullptr;
  char* managed_ = nullptr;
  aclrtDrvMemHandle handle_ = nullptr;
};

const ParentCase kParents[] = {
    {"a stream that ran work", Parent::kStreamThatRan},
    {"the default stream", Parent::kDefaultStream},
    {"a managed prefetch on the default stream", Parent::kManagedPrefetchOnDefaultStream},
    {"a stream whose task is running", Parent::kTaskRunning},
    {"work queued behind a running task", Parent::kQueuedBehindRunningTask},
    {"a managed page on the device", Parent::kManagedPageOnDevice},
    {"an export being served", Parent::kExportListening},
};

// The codes a process that never called ACL gets.
const ChildCase kChildren[] = {
    {"exit()", [] { return 0; }},
    {"aclFinalize without aclInit, exit()",
     [] { return aclFinalize() == 100037 ? 0 : 1; }},  // ACL_ERROR_REPEAT_FINALIZE
    {"aclInit, aclFinalize, exit()",
     [] { return aclInit(nullptr) == kOk && aclFinalize() == kOk ? 0 : 2; }},
    {"aclrtResetDeviceForce, exit()", [] { return aclrtResetDeviceForce(0) == kOk ? 0 : 3; }},
    {"aclrtSynchronizeDevice (no context), exit()",
     [] { return aclrtSynchronizeDevice() == kNoContext ? 0 : 4; }},
    {"aclrtSetDevice, aclrtSynchronizeDevice, exit()",
     [] { return aclrtSetDevice(0) == kOk && aclrtSynchronizeDevice() == kOk ? 0 : 5; }},
};

TEST_F(ForkExit, ChildEndsHoweverTheParentUsedTheRuntime) {
  for (const ParentCase& p : kParents) {
    SCOPED_TRACE(p.name);
    use_runtime(p.what);
    if (HasFatalFailure()) return;
    for (const ChildCase& c : kChildren) {
      SCOPED_TRACE(c.name);
      EXPECT_CHILD_DONE_OK(run_child_exiting(c.end));
    }
    // The parent's own state is untouched: let its work finish and release it.
    gate_->open.store(1);
    if (stream_) {
      EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk);
      EXPECT_EQ(aclrtDestroyStream(stream_), kOk);
      stream_ = nullptr;
    }
    EXPECT_EQ(aclrtSynchronizeDevice(), kOk);
    if (managed_) {
      EXPECT_EQ(managed_[4096], p.what == Parent::kManagedPageOnDevice ? 0x14 : 0);
      EXPECT_EQ(aclrtFree(managed_), kOk);
      managed_ = nullptr;
    }
    if (handle_) {
      EXPECT_EQ(aclrtFreePhysical(handle_), kOk);
      handle_ = nullptr;
    }
    gate_->open.store(0);
    gate_->started.store(0);
  }
}

// A kernel may fork (a host function on a stream can): in the child, the kernel's thread is the
// only thread, and when the kernel returns the child ends (as if exit(0)) instead of serving the
// parent's stream, which would wait for work for ever.
struct ForkingKernel {
  std::atomic<pid_t> child{-1};
};
void forking_kernel(aclvmmKernelContext*, void* raw) {
  auto* k = static_cast<ForkingKernel*>(raw);
  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) return;  // the child returns from the kernel too
  k->child.store(pid);
}

TEST_F(ForkExit, ChildOfAKernelEndsWhenTheKernelReturns) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  ForkingKernel k;
  ASSERT_EQ(aclvmmLaunchKernel(s, forking_kernel, &k), kOk);
  ASSERT_EQ(aclrtMemsetAsync(host_, 64, 0x5a, 64, s), kOk);  // the parent's stream goes on
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  ASSERT_GT(k.child.load(), 0);
  EXPECT_CHILD_DONE_OK(wait_child_for(k.child.load(), kForkDeadlineMs));
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
}

}  // namespace
}  // namespace aclvmm_test
