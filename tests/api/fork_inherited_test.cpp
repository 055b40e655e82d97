// fork(): nothing the parent held is usable in the child (docs/architecture.md, "fork").
//
// Streams, contexts, physical handles, reservations, allocations and managed memory the child
// inherited are unknown to its runtime: each gives the code of a value that is stale in any
// process, also after the child made objects of its own (which never get an inherited value). Work
// the parent had queued never runs in the child: before this was built, the child's first use of
// an inherited stream started a worker there that ran the parent's queue again, on device memory
// the two processes share, and its synchronisation waited for ever.
#include <sys/wait.h>

#include "api/fork_test_util.h"
#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

class ForkInherited : public ManagedTest {};

// The parent's queued memset of 0xAB has run in the parent before it writes 0x22; the child then
// uses the stream: it gets 107000, and the device keeps 0x22.
TEST_F(ForkInherited, QueuedWorkNeverRunsAgainInTheChild) {
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  HoldGate* gate = shared_object<HoldGate>();
  std::atomic<int>* parent_done = shared_object<std::atomic<int>>();
  ASSERT_EQ(aclvmmLaunchKernel(s, hold_kernel, gate), kOk);
  ASSERT_TRUE(wait_started(*gate));
  ASSERT_EQ(aclrtMemsetAsync(dev, k2M, 0xAB, k2M, s), kOk);  // still queued at the fork

  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    (void)wait_until([&] { return parent_done->load() != 0; }, 20);
    char host[64] = {0};
    const aclError queued = aclrtMemsetAsync(host, sizeof host, 1, sizeof host, s);
    const aclError synced = aclrtSynchronizeStream(s);
    const aclError destroyed = aclrtDestroyStream(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // room for a wrong worker to run
    _exit(queued == kRtParam && synced == kRtParam && destroyed == kRtParam ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  gate->open.store(1);
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_TRUE(all_bytes(get(dev, k2M), static_cast<char>(0xAB)));
  ASSERT_EQ(aclrtMemset(dev, k2M, 0x22, k2M), kOk);
  parent_done->store(1);
  EXPECT_CHILD_DONE_OK(wait_child_for(pid, kForkDeadlineMs));
  EXPECT_TRUE(all_bytes(get(dev, k2M), 0x22)) << "the child ran the parent's work again";
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtFree(dev), kOk);
}

// What the parent held, live and already released, and what the child gets for it.
struct Held {
  aclrtContext primary = nullptr;
  aclrtStream stream = nullptr, dead_stream = nullptr;
  aclrtContext context = nullptr, dead_context = nullptr;
  aclrtDrvMemHandle handle = nullptr, dead_handle = nullptr;
  void* reservation = nullptr;  // with `handle` mapped
  void* dead_reservation = nullptr;
  void* malloc_block = nullptr;
  void* dead_malloc_block = nullptr;
  void* host_block = nullptr;
  void* dead_host_block = nullptr;
  void* managed = nullptr;
  void* dead_managed = nullptr;
};

struct StaleCall {
  const char* name;
  aclError want;
  std::function<aclError(const Held&, bool live)> call;  // live: the value the parent still holds
};

const StaleCall kStaleCalls[] = {
    {"aclrtSynchronizeStream", kRtParam,
     [](const Held& h, bool live) { return aclrtSynchronizeStream(live ? h.stream : h.dead_stream); }},
    {"aclrtDestroyStream", kRtParam,
     [](const Held& h, bool live) { return aclrtDestroyStream(live ? h.stream : h.dead_stream); }},
    {"aclrtDestroyStreamForce", kRtParam,
     [](const Held& h, bool live) { return aclrtDestroyStreamForce(live ? h.stream : h.dead_stream); }},
    {"aclvmmLaunchKernel", kRtParam,
     [](const Held& h, bool live) {
       static HoldGate open_gate;
       open_gate.open.store(1);
       return aclvmmLaunchKernel(live ? h.stream : h.dead_stream, hold_kernel, &open_gate);
     }},
    {"aclrtSetCurrentContext", kRtParam,
     [](const Held& h, bool live) { return aclrtSetCurrentContext(live ? h.context : h.dead_context); }},
    {"aclrtSetCurrentContext (the primary context)", kRtParam,
     [](const Held& h, bool live) { return aclrtSetCurrentContext(live ? h.primary : h.dead_context); }},
    {"aclrtDestroyContext", kRtParam,
     [](const Held& h, bool live) { return aclrtDestroyContext(live ? h.context : h.dead_context); }},
    {"aclrtFreePhysical", kRtParam,
     [](const Held& h, bool live) { return aclrtFreePhysical(live ? h.handle : h.dead_handle); }},
    {"aclrtMemExportToShareableHandle", kRtParam,
     [](const Held& h, bool live) {
       uint64_t token = 0;
       return aclrtMemExportToShareableHandle(live ? h.handle : h.dead_handle,
                                              ACL_MEM_HANDLE_TYPE_NONE, 0, &token);
     }},
    {"aclrtReleaseMemAddress", kRtParam,
     [](const Held& h, bool live) {
       return aclrtReleaseMemAddress(live ? h.reservation : h.dead_reservation);
     }},
    {"aclrtUnmapMem", kDrv,
     [](const Held& h, bool live) { return aclrtUnmapMem(live ? h.reservation : h.dead_reservation); }},
    {"aclrtFree (aclrtMalloc block)", kRtParam,
     [](const Held& h, bool live) { return aclrtFree(live ? h.malloc_block : h.dead_malloc_block); }},
    {"aclrtFreeHost", kRtParam,
     [](const Held& h, bool live) { return aclrtFreeHost(live ? h.host_block : h.dead_host_block); }},
    {"aclrtFree (managed)", kRtParam,
     [](const Held& h, bool live) { return aclrtFree(live ? h.managed : h.dead_managed); }},
    {"aclrtMemcpy from the reservation", kDrv,
     [](const Held& h, bool live) {
       char buf[64];
       return aclrtMemcpy(buf, sizeof buf, live ? h.reservation : h.dead_reservation, sizeof buf,
                          ACL_MEMCPY_DEVICE_TO_HOST);
     }},
};

TEST_F(ForkInherited, ValuesGiveTheCodesOfStaleValues) {
  Held h;
  ASSERT_EQ(aclrtGetCurrentContext(&h.primary), kOk);
  ASSERT_EQ(aclrtCreateStream(&h.stream), kOk);
  ASSERT_EQ(aclrtCreateStream(&h.dead_stream), kOk);
  ASSERT_EQ(aclrtDestroyStream(h.dead_stream), kOk);
  ASSERT_EQ(aclrtCreateContext(&h.context, 0), kOk);
  ASSERT_EQ(aclrtCreateContext(&h.dead_context, 0), kOk);
  ASSERT_EQ(aclrtDestroyContext(h.dead_context), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(h.primary), kOk);
  h.handle = make_handle();
  h.dead_handle = make_handle();
  ASSERT_EQ(aclrtFreePhysical(h.dead_handle), kOk);
  h.reservation = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(h.reservation, k2M, 0, h.handle, 0), kOk);
  h2d(h.reservation, pattern(64, 1));
  h.dead_reservation = reserve(k2M);
  ASSERT_EQ(aclrtReleaseMemAddress(h.dead_reservation), kOk);
  ASSERT_EQ(aclrtMalloc(&h.malloc_block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtMalloc(&h.dead_malloc_block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtFree(h.dead_malloc_block), kOk);
  ASSERT_EQ(aclrtMallocHost(&h.host_block, 4096), kOk);
  ASSERT_EQ(aclrtMallocHost(&h.dead_host_block, 4096), kOk);
  ASSERT_EQ(aclrtFreeHost(h.dead_host_block), kOk);
  h.managed = managed(k2M);
  h.dead_managed = managed(k2M);
  ASSERT_EQ(aclrtFree(h.dead_managed), kOk);

  // Each row in its own child (a row changes nothing there, but one row's failure must not hide
  // another's); in each, the child's own objects exist before the inherited values are tried.
  for (const StaleCall& c : kStaleCalls) {
    SCOPED_TRACE(c.name);
    EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [&] {
      aclrtContext none = nullptr;
      CHILD_CHECK(aclrtGetCurrentContext(&none) == kNoContext, 10);
      CHILD_CHECK(aclrtSetDevice(0) == kOk, 11);
      aclrtStream mine = nullptr;
      aclrtContext my_context = nullptr;
      CHILD_CHECK(aclrtCreateStream(&mine) == kOk, 12);
      CHILD_CHECK(aclrtCreateContext(&my_context, 0) == kOk, 13);
      aclrtDrvMemHandle my_handle = make_handle();
      CHILD_CHECK(my_handle != nullptr, 14);
      CHILD_CHECK(mine != h.stream && mine != h.dead_stream, 15);
      CHILD_CHECK(my_context != h.context && my_context != h.primary && my_context != h.dead_context, 16);
      CHILD_CHECK(my_handle != h.handle && my_handle != h.dead_handle, 17);
      const aclError stale = c.call(h, false);
      const aclError inherited = c.call(h, true);
      if (stale != c.want || inherited != c.want) {
        fprintf(stderr, "%s: inherited value -> %d, stale value -> %d, want %d\n", c.name,
                inherited, stale, c.want);
        return 1;
      }
      return 0;
    }));
  }

  // The parent still has all of it.
  EXPECT_EQ(get(h.reservation, 64), pattern(64, 1));
  EXPECT_EQ(aclrtSynchronizeStream(h.stream), kOk);
  EXPECT_EQ(aclrtDestroyStream(h.stream), kOk);
  EXPECT_EQ(aclrtDestroyContext(h.context), kOk);
  EXPECT_EQ(aclrtSetCurrentContext(h.primary), kOk);
  EXPECT_EQ(aclrtUnmapMem(h.reservation), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(h.reservation), kOk);
  EXPECT_EQ(aclrtFreePhysical(h.handle), kOk);
  EXPECT_EQ(aclrtFree(h.malloc_block), kOk);
  EXPECT_EQ(aclrtFreeHost(h.host_block), kOk);
  EXPECT_EQ(aclrtFree(h.managed), kOk);
}

// The parent's exports and imports are not the child's: its statistics count none of them, and its
// own import of the same export is a new record (before, the parent's import records stayed in the
// child and were counted in live.imports).
TEST_F(ForkInherited, ChildCountsNoExportOrImportOfTheParent) {
  aclrtDrvMemHandle exported = make_handle();
  uint64_t share = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(exported, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &share),
            kOk);
  aclrtDrvMemHandle imported = nullptr;  // its own export onto another device: allowed
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ASSERT_EQ(aclrtMemImportFromShareableHandle(share, 1, &imported), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  ASSERT_EQ(live_count("exports"), 1);
  ASSERT_EQ(live_count("imports"), 1);

  EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [&] {
    CHILD_CHECK(live_count("exports") == 0, 1);
    CHILD_CHECK(live_count("imports") == 0, 2);
    CHILD_CHECK(aclrtSetDevice(1) == kOk, 3);
    aclrtDrvMemHandle mine = nullptr;
    CHILD_CHECK(aclrtMemImportFromShareableHandle(share, 1, &mine) == kOk, 4);
    CHILD_CHECK(mine != imported || live_count("imports") == 1, 5);
    CHILD_CHECK(live_count("imports") == 1, 6);
    CHILD_CHECK(aclrtFreePhysical(mine) == kOk, 7);
    CHILD_CHECK(live_count("imports") == 0, 8);
    return 0;
  }));
  EXPECT_EQ(live_count("imports"), 1);  // the parent's record is untouched
  EXPECT_EQ(aclrtFreePhysical(imported), kOk);
  EXPECT_EQ(aclrtFreePhysical(exported), kOk);
}

}  // namespace
}  // namespace aclvmm_test
