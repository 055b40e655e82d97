// fork(): a child starts the runtime afresh, and the parent goes on (docs/architecture.md, "fork").
//
// The child reads its configuration again, claims the address windows again (the parent's
// reservations, mappings and no-UC reservations are gone from its address space, so it can
// reserve the very same addresses), and runs a whole VMM lifecycle, asynchronous copies and managed
// memory with CPU faults. The parent meanwhile keeps its streams, its export listener and its
// managed-memory fault thread, and its bytes stay as they were.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "api/fork_test_util.h"
#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

class ForkRestart : public ManagedTest {};

// The userfaultfd descriptors this process holds.
int fault_descriptors() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(d)) {
      char link[256] = {0};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      if (readlink(path.c_str(), link, sizeof link - 1) > 0 && std::strstr(link, "userfaultfd")) ++n;
    }
    closedir(d);
  }
  return n;
}

// Everything a fresh process does, in the child; `parent_va` is the parent's mapped reservation.
int fresh_lifecycle(void* parent_va, bool parent_tracks_faults) {
  // The parent's fault-tracking descriptor was closed at fork: every request on it would act on
  // the parent's ranges, and reading it would take the parent's faults.
  CHILD_CHECK(fault_descriptors() == 0, 30);
  // A new configuration is read at the child's first call.
  CHILD_CHECK(setenv("ACLVMM_DEVICE_MEMORY", "1G", 1) == 0, 1);
  CHILD_CHECK(aclInit(nullptr) == kOk, 2);
  CHILD_CHECK(aclrtSetDevice(0) == kOk, 3);
  size_t free = 0, total = 0;
  CHILD_CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free, &total) == kOk && total == kGiB, 4);
  CHILD_CHECK(live_count("reservations") == 0 && live_count("physical_handles") == 0, 5);

  // The parent's address is free here: its reservation went with the parent's runtime.
  void* va = nullptr;
  CHILD_CHECK(aclrtReserveMemAddress(&va, k2M, 0, parent_va, 0) == kOk && va == parent_va, 6);
  aclrtPhysicalMemProp prop = device_prop();
  aclrtDrvMemHandle h = nullptr;
  CHILD_CHECK(aclrtMallocPhysical(&h, k2M, &prop, 0) == kOk, 7);
  CHILD_CHECK(aclrtMapMem(va, k2M, 0, h, 0) == kOk, 8);
  aclError rc = kOk;
  CHILD_CHECK(all_bytes(get(va, k2M, &rc), 0) && rc == kOk, 9);  // new memory, not the parent's
  const std::string bytes = pattern(k2M, 77);
  CHILD_CHECK(put(va, bytes) == kOk, 10);

  aclrtStream s = nullptr;
  CHILD_CHECK(aclrtCreateStream(&s) == kOk, 11);
  std::string back(k2M, '\0');
  CHILD_CHECK(aclrtMemcpyAsync(&back[0], k2M, va, k2M, ACL_MEMCPY_DEVICE_TO_HOST, s) == kOk, 12);
  CHILD_CHECK(aclrtMemsetAsync(va, k2M, 0x3c, 4096, s) == kOk, 13);
  CHILD_CHECK(aclrtSynchronizeStream(s) == kOk, 14);
  CHILD_CHECK(back == bytes, 15);
  CHILD_CHECK(all_bytes(get(va, 4096), 0x3c), 16);

  // Managed memory: the page moves to the device, and the CPU's next read faults it back.
  void* m = nullptr;
  CHILD_CHECK(aclrtMemAllocManaged(&m, k2M, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 17);
  CHILD_CHECK(aclrtMemsetAsync(m, k2M, 0x5e, k2M, s) == kOk, 18);
  CHILD_CHECK(aclrtSynchronizeStream(s) == kOk, 19);
  CHILD_CHECK(static_cast<volatile char*>(m)[12345] == 0x5e, 20);
  CHILD_CHECK(fault_tracking() == parent_tracks_faults, 21);
  if (parent_tracks_faults) {
    CHILD_CHECK(managed_counters().host_faults == 1, 22);
    CHILD_CHECK(fault_descriptors() == 1, 31);  // its own
  }

  CHILD_CHECK(aclrtFree(m) == kOk, 23);
  CHILD_CHECK(aclrtDestroyStream(s) == kOk, 24);
  CHILD_CHECK(aclrtUnmapMem(va) == kOk, 25);
  CHILD_CHECK(aclrtFreePhysical(h) == kOk, 26);
  CHILD_CHECK(aclrtReleaseMemAddress(va) == kOk, 27);
  CHILD_CHECK(aclrtResetDevice(0) == kOk, 28);
  CHILD_CHECK(aclFinalize() == kOk, 29);
  return 0;
}

TEST_F(ForkRestart, ChildRunsAWholeLifecycleWhileTheParentGoesOn) {
  // The parent holds a mapping, runs a stream, and has a managed page on the device (CPU access
  // revoked, the fault thread running).
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  const std::string bytes = pattern(k2M, 5);
  h2d(va, bytes);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  ASSERT_EQ(aclrtMemsetAsync(va, k2M, 0x01, 64, s), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  h2d(va, bytes.substr(0, 64));
  char* m = managed(k2M);
  ASSERT_EQ(aclrtMemset(m, k2M, 0x6d, k2M), kOk);
  const bool tracks = tracking();

  EXPECT_CHILD_DONE_OK(run_child_exiting([&] { return fresh_lifecycle(va, tracks); }));

  // The parent's mapping, stream and managed fault thread work as before.
  EXPECT_EQ(get(va, k2M), bytes);
  std::string back(4096, '\0');
  ASSERT_EQ(aclrtMemcpyAsync(&back[0], 4096, va, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(back, bytes.substr(0, 4096));
  ManagedDelta delta;
  EXPECT_EQ(static_cast<volatile char*>(m)[777], 0x6d);
  if (tracks) delta.expect(1, 0, 0, 1, "the parent's CPU fault is served");
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtFree(m), kOk);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// The parent's listener still serves after the fork, and a child importing the parent's export
// (a process of its own, starting its runtime afresh) gets the parent's bytes.
TEST_F(ForkRestart, ChildImportsWhatTheParentExports) {
  aclrtDrvMemHandle h = make_handle();
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  const std::string bytes = pattern(k2M, 9);
  h2d(va, bytes);
  uint64_t token = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            kOk);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    EXPECT_CHILD_DONE_OK(run_child_exiting([&] {
      CHILD_CHECK(aclrtSetDevice(0) == kOk, 1);
      CHILD_CHECK(live_count("exports") == 0, 2);
      aclrtDrvMemHandle imported = nullptr;
      CHILD_CHECK(aclrtMemImportFromShareableHandle(token, 0, &imported) == kOk, 3);
      CHILD_CHECK(imported != h, 4);
      void* mine = nullptr;
      CHILD_CHECK(aclrtReserveMemAddress(&mine, k2M, 0, nullptr, 0) == kOk, 5);
      CHILD_CHECK(aclrtMapMem(mine, k2M, 0, imported, 0) == kOk, 6);
      CHILD_CHECK(get(mine, k2M) == bytes, 7);
      CHILD_CHECK(aclrtUnmapMem(mine) == kOk && aclrtFreePhysical(imported) == kOk, 8);
      CHILD_CHECK(aclrtReleaseMemAddress(mine) == kOk, 9);
      return 0;
    }));
  }
  EXPECT_EQ(live_count("exports"), 1);
  EXPECT_EQ(get(va, k2M), bytes);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// A no-UC reservation lies outside the windows; the child's restart gives it back too, so the
// child can reserve the same fixed address.
TEST_F(ForkRestart, NoUcReservationOfTheParentIsFreeInTheChild) {
  ScopedEnvRuntime env("ACLVMM_SOC", "Ascend910_9391");  // A3: no-UC reservations exist
  ASSERT_TRUE(env.ok());
  void* const at_addr = reinterpret_cast<void*>(0x200000000000ull);
  void* nouc = nullptr;
  ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&nouc, kGiB, 0, at_addr, 0), kOk);
  ASSERT_EQ(nouc, at_addr);
  EXPECT_CHILD_DONE_OK(run_child_exiting([&] {
    CHILD_CHECK(aclrtSetDevice(0) == kOk, 1);
    void* p = nullptr;
    CHILD_CHECK(aclrtReserveMemAddressNoUCMemory(&p, kGiB, 0, at_addr, 0) == kOk, 2);
    CHILD_CHECK(p == at_addr, 3);
    CHILD_CHECK(aclrtReleaseMemAddress(p) == kOk, 4);
    return 0;
  }));
  // Still the parent's.
  void* again = nullptr;
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&again, kGiB, 0, at_addr, 0), kDrv);
  EXPECT_EQ(aclrtReleaseMemAddress(nouc), kOk);
}

}  // namespace
}  // namespace aclvmm_test
