// Rollback sweep of sharing (export, import from this process and from another one), managed
// memory (allocation with fault tracking, free, prefetch, copies) and the window claims of the
// first start; plus "drv.*" rules through aclvmmInjectFault and ACLVMM_FAULTS (harness:
// rollback_sweep.h).
#include <spawn.h>

#include <cstring>

#include "api/managed_util.h"
#include "api/test_env.h"
#include "integration/rollback_sweep.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

extern char** environ;

namespace rollback_sweep {
namespace {

constexpr size_t kManagedBytes = 8 * kMiB;  // four managed pages

class TotalPoints : public ::testing::Environment {
  void TearDown() override {
    if (g_points > 0) std::printf("[ sweep    ] %ld points in total\n", g_points.load());
    if (g_api_points > 0) {
      std::printf("[ sweep    ] %ld points compared through the API, %ld answers compared\n",
                  g_api_points.load(), g_api_comparisons.load());
    }
  }
};
::testing::Environment* const kTotal = ::testing::AddGlobalTestEnvironment(new TotalPoints);

class RollbackSweepShare : public RollbackSweepTest {};

TEST_F(RollbackSweepShare, ExportAndImportRollBack) {
  aclrtDrvMemHandle h = nullptr, imported = nullptr;
  uint64_t token = 0;
  Call exp;
  exp.name = "aclrtMemExportToShareableHandle";
  // The first export of a group of share ids binds the group's endpoint: each run is one.
  exp.setup = [&] {
    ASSERT_TRUE(share_test::endpoints_become(getpid(), 0));
    h = make_handle();
  };
  exp.run = [&] { return aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token); };
  exp.teardown = [&] { EXPECT_EQ(aclrtFreePhysical(h), kOk); };  // ends the export
  exp.watch = [&] { return Watch{{}, {h}}; };
  EXPECT_EQ(sweep(exp), 1);  // the endpoint

  // behavior.md: a process may import its own export onto another device.
  Call local;
  local.name = "aclrtMemImportFromShareableHandle(own export, device 1)";
  local.setup = [&] {
    h = make_handle();
    ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token), kOk);
  };
  local.run = [&] { return aclrtMemImportFromShareableHandle(token, 1, &imported); };
  local.undo = [&] { EXPECT_EQ(aclrtFreePhysical(imported), kOk); };
  local.teardown = exp.teardown;
  local.watch = exp.watch;
  EXPECT_EQ(sweep(local), 0);  // the same memory object: nothing to ask the kernel

  share_test::Peer peer;
  ASSERT_EQ(peer.rc("alloc 0 0 " + std::to_string(k2M)), kOk);
  ASSERT_EQ(peer.rc("map 0 " + std::to_string(k2M)), kOk);
  token = peer.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  Call remote;
  remote.name = "aclrtMemImportFromShareableHandle(another process)";
  remote.run = [&] { return aclrtMemImportFromShareableHandle(token, 0, &imported); };
  unsigned seed = 0;
  remote.verify = [&] {  // the imported handle is the peer's memory
    void* va = reserve(k2M);
    ASSERT_EQ(aclrtMapMem(va, k2M, 0, imported, 0), kOk);
    h2d(va, pattern(4096, ++seed));
    EXPECT_EQ(peer.cmd("check 0 0 4096 " + std::to_string(seed)),
              (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  };
  remote.undo = [&] { EXPECT_EQ(aclrtFreePhysical(imported), kOk); };
  EXPECT_EQ(sweep(remote), 4);  // connect, send, receive, adopt the descriptor
}

class RollbackSweepManaged : public RollbackSweepTest {
 protected:
  void SetUp() override {
    RollbackSweepTest::SetUp();
    if (HasFatalFailure()) return;
    void* probe = nullptr;
    ASSERT_EQ(aclrtMemAllocManaged(&probe, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    tracking_ = fault_tracking();
    ASSERT_EQ(aclrtFree(probe), kOk);
  }
  // Prefetches the whole allocation and waits for it.
  aclError prefetch(int type) {
    aclError rc = aclrtMemManagedPrefetchAsync(p_, kManagedBytes, mloc(type), 0, nullptr);
    return rc != kOk ? rc : aclrtSynchronizeStream(nullptr);
  }
  // Written by the CPU: a copy with a current device would move the pages to it.
  void allocate() {
    ASSERT_EQ(aclrtMemAllocManaged(&p_, kManagedBytes, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    std::memcpy(p_, bytes_.data(), kManagedBytes);
  }
  void release() { EXPECT_EQ(aclrtFree(p_), kOk); }
  // The managed allocation; `bytes` false when the call writes it (a failed copy may have written
  // part of it). Plus other ranges the call reads.
  Watch watch_managed(bool bytes, std::vector<Watch::Range> others = {}) const {
    Watch w;
    w.ranges.push_back({p_, kManagedBytes, true, bytes});
    for (const Watch::Range& r : others) w.ranges.push_back(r);
    return w;
  }
  // Pages on the device (per the policy) or on the host: the counts differ when tracking is off.
  long long pages(long long tracked) const { return tracking_ ? tracked : 0; }

  bool tracking_ = false;
  void* p_ = nullptr;
  const std::string bytes_ = pattern(kManagedBytes, 9);
};

TEST_F(RollbackSweepManaged, AllocationAndFreeRollBack) {
  Call first;
  first.name = "aclrtMemAllocManaged(first of the runtime)";
  first.setup = [] { restart(); };  // fault tracking starts with the first allocation
  first.run = [&] { return aclrtMemAllocManaged(&p_, kManagedBytes, ACL_RT_MEM_ATTACH_GLOBAL); };
  first.undo = [&] { release(); };
  first.teardown = [] { restart(); };
  // Tracking that cannot start leaves managed memory on the host: that call succeeds.
  restart();
  EXPECT_EQ(sweep(first), pages(3) + 1);  // [userfaultfd,] memfd, mmap, [register]

  void* other = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&other, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);  // tracking on
  Call more = first;
  more.name = "aclrtMemAllocManaged";
  more.setup = more.teardown = [] {};
  EXPECT_EQ(sweep(more), pages(1) + 2);  // memfd, mmap, [register]

  Call free_call;
  free_call.name = "aclrtFree(managed)";
  free_call.setup = [&] { allocate(); };
  free_call.run = [&] { return aclrtFree(p_); };
  free_call.watch = [&] { return watch_managed(true); };
  EXPECT_EQ(sweep(free_call), pages(1) + 1);  // [unregister,] the placeholder back
  EXPECT_EQ(aclrtFree(other), kOk);
}

TEST_F(RollbackSweepManaged, PrefetchAndCopiesRollBack) {
  long long used = 0;
  Call to_device;
  to_device.name = "aclrtMemManagedPrefetchAsync(device 0) + synchronize";
  to_device.setup = [&] {
    allocate();
    used = device_used(stats(), 0);
  };
  to_device.run = [&] { return prefetch(ACL_MEM_LOCATIONTYPE_DEVICE); };
  to_device.verify = [&] {
    EXPECT_EQ(device_used(stats(), 0) - used, pages(4) * static_cast<long long>(k2M));
    EXPECT_EQ(get(p_, kManagedBytes), bytes_);
  };
  to_device.teardown = [&] { release(); };
  to_device.watch = [&] { return watch_managed(true); };
  // Per page: allocate it, then revoke the CPU's access. Failures there cost only the CPU fault
  // statistics (the CPU reaches the page in place), so the prefetch still succeeds.
  EXPECT_EQ(sweep(to_device), pages(8));

  Call to_host = to_device;
  to_host.name = "aclrtMemManagedPrefetchAsync(host) + synchronize";
  to_host.setup = [&] {
    allocate();
    ASSERT_EQ(prefetch(ACL_MEM_LOCATIONTYPE_DEVICE), kOk);
  };
  to_host.run = [&] { return prefetch(ACL_MEM_LOCATIONTYPE_HOST); };
  to_host.verify = [&] {
    // The CPU reads every byte itself: a page whose access could not be given back faults and
    // the fault thread resolves it.
    EXPECT_EQ(std::memcmp(p_, bytes_.data(), kManagedBytes), 0);
  };
  EXPECT_EQ(sweep(to_host), pages(4));  // give the CPU each page back

  std::string out(kManagedBytes, '\0');
  Call h2d_resident = to_host;
  h2d_resident.name = "aclrtMemcpy(host to managed pages on device 0)";
  h2d_resident.run = [&] {
    return aclrtMemcpy(p_, kManagedBytes, bytes_.data(), kManagedBytes, ACL_MEMCPY_HOST_TO_DEVICE);
  };
  h2d_resident.verify = [&] { EXPECT_EQ(get(p_, kManagedBytes), bytes_); };
  h2d_resident.watch = [&] { return watch_managed(false, {{bytes_.data(), kManagedBytes}}); };
  EXPECT_EQ(sweep(h2d_resident), 1);  // pwrite (pages resident: nothing migrates)

  Call d2h_resident = h2d_resident;
  d2h_resident.name = "aclrtMemcpy(managed pages on device 0 to host)";
  d2h_resident.run = [&] {
    return aclrtMemcpy(&out[0], kManagedBytes, p_, kManagedBytes, ACL_MEMCPY_DEVICE_TO_HOST);
  };
  d2h_resident.verify = [&] { EXPECT_EQ(out, bytes_); };
  d2h_resident.watch = [&] { return watch_managed(true, {{out.data(), kManagedBytes, false, false}}); };
  EXPECT_EQ(sweep(d2h_resident), 1);  // pread

  Call zero = h2d_resident;
  zero.name = "aclrtMemset(managed pages on device 0, 0)";
  zero.run = [&] { return aclrtMemset(p_, kManagedBytes, 0, kManagedBytes); };
  zero.verify = [&] { EXPECT_TRUE(all_bytes(get(p_, kManagedBytes), '\0')); };
  zero.watch = [&] { return watch_managed(false); };
  EXPECT_EQ(sweep(zero), 2);  // punch the hole, allocate the pages again for fault tracking

  // A copy that migrates first: a transfer that fails after the migration leaves the pages where
  // the device's faults put them (as on the device, whose page faults are served before its
  // copy fails), so only the migration's own steps are swept here; the transfer is swept above.
  Call h2d_migrating = h2d_resident;
  h2d_migrating.name = "aclrtMemcpy(host to managed pages on the host)";
  h2d_migrating.setup = [&] { allocate(); };
  EXPECT_EQ(sweep(h2d_migrating, {"drv.populate", "drv.uffd_revoke"}), pages(8));
}

// Advice changes what the CPU may reach in place; a step that fails there may cost a CPU fault
// later, but the advice itself is recorded and reported as in a clean run.
TEST_F(RollbackSweepManaged, AdviceRollsBack) {
  auto advice = [&](const std::string& name, aclrtMemManagedAdviseType a, aclrtMemManagedLocation where,
                    aclrtMemManagedAdviseType undo, std::function<void()> more_setup) {
    Call c;
    c.name = name;
    c.setup = [this, more_setup] {
      allocate();
      ASSERT_EQ(prefetch(ACL_MEM_LOCATIONTYPE_DEVICE), kOk);
      more_setup();
    };
    c.run = [this, a, where] { return aclrtMemManagedAdvise(p_, kManagedBytes, a, where); };
    c.verify = [this] { EXPECT_EQ(get(p_, kManagedBytes), bytes_); };
    c.undo = [this, undo, where] { EXPECT_EQ(aclrtMemManagedAdvise(p_, kManagedBytes, undo, where), kOk); };
    c.teardown = [this] { release(); };
    c.watch = [this] { return watch_managed(true); };
    return c;
  };
  const aclrtMemManagedLocation host_loc = mloc(ACL_MEM_LOCATIONTYPE_HOST);
  auto nothing = [] {};
  // Pages on device 0 that the CPU is given back in place: one resolve per page.
  EXPECT_EQ(sweep(advice("aclrtMemManagedAdvise(SET_ACCESSED_BY host) on pages on device 0",
                         ACL_MEM_ADVISE_SET_ACCESSED_BY, host_loc, ACL_MEM_ADVISE_UNSET_ACCESSED_BY,
                         nothing)),
            pages(4));
  EXPECT_EQ(sweep(advice("aclrtMemManagedAdvise(SET_READ_MOSTLY) on pages on device 0",
                         ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0, ACL_MEM_ADVISE_UNSET_READ_MOSTLY,
                         nothing)),
            pages(4));
  // ... and taken from it again: populate, then revoke, per page.
  EXPECT_EQ(sweep(advice("aclrtMemManagedAdvise(UNSET_ACCESSED_BY host) on pages on device 0",
                         ACL_MEM_ADVISE_UNSET_ACCESSED_BY, host_loc, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                         [this, host_loc] {
                           ASSERT_EQ(aclrtMemManagedAdvise(p_, kManagedBytes, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                                                           host_loc),
                                     kOk);
                         })),
            pages(8));
  EXPECT_EQ(sweep(advice("aclrtMemManagedAdvise(SET_PREFERRED_LOCATION host NUMA 0) on pages on device 0",
                         ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0),
                         ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION, nothing)),
            4);  // the NUMA policy of each page (failures are logged: the node is a preference)
}

// aclInit in a fresh process: the three windows are claimed by the first start. The claims are
// swept in children (this process claimed its windows long ago): RollbackSweepWindowsChild.Claim.
// The windows are 12 TiB of inaccessible placeholders together; under ASan they are placed next
// to each other (and merge into one maps line), so the bytes are counted, not the lines. The
// slack absorbs the sanitizer committing parts of its own reserved ranges meanwhile.
long long placeholder_bytes() {
  long long n = 0;
  for (const MapsLine& m : maps_lines()) {
    const bool anonymous = m.text.find('/') == std::string::npos && m.text.find('[') == std::string::npos;
    if (anonymous && m.text.find(" ---p ") != std::string::npos) n += static_cast<long long>(m.end - m.start);
  }
  return n;
}
constexpr long long kWindowBytes = 12ll << 40, kSlack = 1ll << 30;

TEST(RollbackSweepWindowsChild, Claim) {
  const char* nth_text = std::getenv("ACLVMM_SWEEP_CLAIM_NTH");
  if (!nth_text) GTEST_SKIP() << "a child of RollbackSweepWindows.ClaimsRollBack";
  const uint32_t nth = static_cast<uint32_t>(std::atoi(nth_text));
  EXPECT_EQ(aclvmmInjectFault(nullptr, 1, 1), kParam);  // opens the log before the baseline
  const size_t fds = open_fds();
  const long long before = placeholder_bytes();
  // ENOMEM would only shrink the window: EPERM fails the claim.
  ASSERT_EQ(aclvmmInjectFault("drv.claim_window", nth, 1), kOk);
  const aclError rc = aclInit(nullptr);
  const bool fired = aclvmmFaultRemaining("drv.claim_window") == 0;
  ASSERT_EQ(aclvmmInjectFault("drv.claim_window", 0, 0), kOk);
  if (fired) {
    EXPECT_NE(rc, kOk);
    EXPECT_EQ(open_fds(), fds);
    EXPECT_LT(std::llabs(placeholder_bytes() - before), kSlack)
        << "the windows claimed before the failing one must be given back";
    ASSERT_EQ(aclInit(nullptr), kOk) << "the next start claims them again";
  } else {
    ASSERT_EQ(rc, kOk);
  }
  EXPECT_LT(std::llabs(placeholder_bytes() - before - kWindowBytes), kSlack) << "three windows";
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  void* va = reserve(k2M);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclFinalize(), kOk);
  // Tells the parent whether the claim failed (10) or not (11); 1 for a failed check.
  std::exit(::testing::Test::HasFailure() ? 1 : fired ? 10 : 11);
}

TEST(RollbackSweepWindows, ClaimsRollBack) {
  long points = 0;
  for (int nth = 1; nth <= 4; ++nth) {
    const std::string var = "ACLVMM_SWEEP_CLAIM_NTH=" + std::to_string(nth);
    std::vector<char*> envp;
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(const_cast<char*>(var.c_str()));
    envp.push_back(nullptr);
    char exe[] = "/proc/self/exe";
    char filter[] = "--gtest_filter=RollbackSweepWindowsChild.Claim";
    char* argv[] = {exe, filter, nullptr};
    fflush(nullptr);
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()), 0);
    const ChildResult r = wait_child(pid);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_code, nth <= 3 ? 10 : 11) << "claim " << nth << " (10: it failed and "
                                                  "rolled back, 11: there was no such claim)";
    points += r.exit_code == 10;
  }
  g_points += points;
  std::printf("[ sweep    ] aclInit(first start): %ld points\n", points);
}

// One "drv.*" rule through each way of arming it.
TEST_F(RollbackSweepTest, InjectFaultFailsOneBackendStep) {
  ASSERT_EQ(aclvmmInjectFault("drv.map_cpu", 1, 12), kOk);
  EXPECT_EQ(aclvmmFaultRemaining("drv.map_cpu"), 1u);
  void* p = nullptr;
  EXPECT_EQ(aclrtMallocHost(&p, 4096), kNoMemory) << "ENOMEM in the mmap";
  EXPECT_EQ(aclvmmFaultRemaining("drv.map_cpu"), 0u) << "fired";
  ASSERT_EQ(aclrtMallocHost(&p, 4096), kOk) << "once";
  EXPECT_EQ(aclrtFreeHost(p), kOk);
  ASSERT_EQ(aclvmmInjectFault("drv.create_physical", 2, 22), kOk);  // EINVAL
  aclrtDrvMemHandle a = make_handle();
  EXPECT_EQ(aclvmmFaultRemaining("drv.create_physical"), 1u);
  aclrtDrvMemHandle b = nullptr;
  aclrtPhysicalMemProp prop = device_prop();
  EXPECT_EQ(aclrtMallocPhysical(&b, k2M, &prop, 0), kDrv) << "the second memfd: EINVAL";
  EXPECT_EQ(aclrtFreePhysical(a), kOk);
  EXPECT_EQ(aclvmmFaultRemaining(nullptr), 0u);
}

// The device interface's own steps ("dev.*", drivers/injection_steps.h) are armed the same way:
// the decorator around the backend fails the operation before the backend runs it.
TEST_F(RollbackSweepTest, InjectFaultFailsOneDeviceInterfaceStep) {
  ASSERT_EQ(aclvmmInjectFault("dev.phys.create", 1, 22), kOk);  // EINVAL
  aclrtDrvMemHandle h = nullptr;
  aclrtPhysicalMemProp prop = device_prop();
  EXPECT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kDrv);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(aclvmmFaultRemaining("dev.phys.create"), 0u) << "fired";
  aclrtDrvMemHandle a = make_handle();
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kOk);
  ASSERT_EQ(aclvmmInjectFault("dev.mmu.map", 1, 12), kOk);  // ENOMEM
  EXPECT_EQ(aclrtMapMem(va, k2M, 0, a, 0), kNoMemory);
  aclrtPtrAttributes attr{};
  EXPECT_EQ(aclrtPointerGetAttributes(va, &attr), 107017) << "nothing stays mapped";
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, a, 0), kOk) << "once";
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(a), kOk);
  EXPECT_EQ(aclvmmFaultRemaining(nullptr), 0u);
}

TEST_F(RollbackSweepTest, EnvironmentRuleFailsOneBackendStep) {
  ScopedEnvRuntime env("ACLVMM_FAULTS", "drv.create_physical:2:12");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(aclvmmFaultRemaining("drv.create_physical"), 2u);
  void* p[3] = {};
  EXPECT_EQ(aclrtMalloc(&p[0], 4096, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  EXPECT_EQ(aclrtMalloc(&p[1], 4096, ACL_MEM_MALLOC_HUGE_FIRST), kNoMemory);
  EXPECT_EQ(aclrtMalloc(&p[2], 4096, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  EXPECT_EQ(aclrtFree(p[0]), kOk);
  EXPECT_EQ(aclrtFree(p[2]), kOk);
}

}  // namespace
}  // namespace rollback_sweep
