// Rollback sweep of the VMM and malloc calls: physical memory, reservations, mappings, access,
// aclrtMalloc / aclrtMallocHost (harness and rules: rollback_sweep.h).
#include "integration/rollback_sweep.h"

#include <cstring>
#include <vector>

#include "api/test_env.h"

namespace rollback_sweep {
namespace {

aclrtPhysicalMemProp numa_prop() {
  return with_location(host_prop(), ACL_MEM_LOCATION_TYPE_HOST_NUMA, 0);
}

// A handle of `prop` that setup makes and teardown frees.
struct HandleFixture {
  aclrtDrvMemHandle h = nullptr;
  void make(aclrtPhysicalMemProp prop) { ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kOk); }
  void free() { EXPECT_EQ(aclrtFreePhysical(h), kOk); }
  // Gives the handle bytes of its own through a mapping of its own, so that a failure that lost
  // or replaced them shows.
  void fill(unsigned seed) {
    void* scratch = reserve(k2M);
    ASSERT_EQ(aclrtMapMem(scratch, k2M, 0, h, 0), kOk);
    h2d(scratch, pattern(k2M, seed));
    EXPECT_EQ(aclrtUnmapMem(scratch), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(scratch), kOk);
  }
};

// A 2 MiB reservation and a handle of `prop`, mapped (`how` 1), mapped without access (2) or not.
struct MappingFixture {
  void* va = nullptr;
  HandleFixture handle;
  void make(aclrtPhysicalMemProp prop, int how) {
    ASSERT_EQ(aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), kOk);
    handle.make(prop);
    handle.fill(kSeed);
    if (how == 1) {
      ASSERT_EQ(aclrtMapMem(va, k2M, 0, handle.h, 0), kOk);
    } else if (how == 2) {
      ASSERT_EQ(aclrtMemMapNoAccess(va, k2M, 0, handle.h, 0), kOk);
    }
  }
  void free(bool mapped) {
    if (mapped) {
      EXPECT_EQ(aclrtUnmapMem(va), kOk);
    }
    handle.free();
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
  // What a call on this mapping touches: the range and its handle.
  Watch watch() const { return Watch{{{va, k2M}}, {handle.h}}; }
  static constexpr unsigned kSeed = 7;  // every setup the same bytes: a clean run's answers compare
};

Call malloc_physical(const std::string& name, aclrtPhysicalMemProp prop, HandleFixture* made) {
  Call c;
  c.name = name;
  c.run = [prop, made] {
    aclrtPhysicalMemProp p = prop;
    return aclrtMallocPhysical(&made->h, k2M, &p, 0);
  };
  c.undo = [made] { made->free(); };
  return c;
}

// Maps (or maps without access) a fresh handle of `prop` into a fresh reservation.
Call map_call(const std::string& name, aclrtPhysicalMemProp prop, bool no_access, MappingFixture* m) {
  Call c;
  c.name = name;
  c.setup = [prop, m] { m->make(prop, 0); };
  c.run = [m, no_access] {
    return no_access ? aclrtMemMapNoAccess(m->va, k2M, 0, m->handle.h, 0)
                     : aclrtMapMem(m->va, k2M, 0, m->handle.h, 0);
  };
  c.undo = [m] { EXPECT_EQ(aclrtUnmapMem(m->va), kOk); };
  c.teardown = [m] { m->free(false); };
  c.watch = [m] { return m->watch(); };
  return c;
}

// aclrtMemSetAccess with `changes` at once on a mapping made with `how` (1 mapped, 2 without
// access) and given `first` in setup; `back` restores it after a successful run.
Call access_call(const std::string& name, aclrtPhysicalMemProp prop, int how,
                 std::vector<aclrtMemAccessDesc> first, std::vector<aclrtMemAccessDesc> changes,
                 std::vector<aclrtMemAccessDesc> back, MappingFixture* m) {
  Call c;
  c.name = name;
  c.setup = [prop, how, first, m] {
    m->make(prop, how);
    if (!first.empty()) {
      ASSERT_EQ(aclrtMemSetAccess(m->va, k2M, const_cast<aclrtMemAccessDesc*>(first.data()), first.size()), kOk);
    }
  };
  c.run = [m, changes]() mutable { return aclrtMemSetAccess(m->va, k2M, changes.data(), changes.size()); };
  c.verify = [m, changes] {
    for (const aclrtMemAccessDesc& d : changes) {
      EXPECT_EQ(access_of(m->va, d.location), static_cast<int>(load_raw(d.flags)));
    }
  };
  c.undo = [m, back]() mutable {
    EXPECT_EQ(aclrtMemSetAccess(m->va, k2M, back.data(), back.size()), kOk);
  };
  c.teardown = [m] { m->free(true); };
  c.watch = [m] { return m->watch(); };
  return c;
}

// aclrtMemSetAccess for the host alone: `flags` on, `back` after.
Call host_access_call(const std::string& name, aclrtPhysicalMemProp prop, int how, int flags,
                      int back, MappingFixture* m) {
  return access_call(name, prop, how, {}, {desc(flags, host())}, {desc(back, host())}, m);
}

Call unmap_call(const std::string& name, aclrtPhysicalMemProp prop, MappingFixture* m) {
  Call c;
  c.name = name;
  c.setup = [prop, m] { m->make(prop, 1); };
  c.run = [m] { return aclrtUnmapMem(m->va); };
  c.teardown = [m] { m->free(false); };
  c.watch = [m] { return m->watch(); };
  return c;
}

bool host_numa_available() {
  aclrtPhysicalMemProp p = numa_prop();
  aclrtDrvMemHandle h = nullptr;
  if (aclrtMallocPhysical(&h, k2M, &p, 0) != kOk) return false;
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  return true;
}

class RollbackSweepVmm : public RollbackSweepTest {};

TEST_F(RollbackSweepVmm, MallocPhysicalRollsBack) {
  HandleFixture made;
  EXPECT_EQ(sweep(malloc_physical("aclrtMallocPhysical(device)", device_prop(), &made)), 1);
  EXPECT_EQ(sweep(malloc_physical("aclrtMallocPhysical(host)", host_prop(), &made)), 1);
  if (host_numa_available()) {
    EXPECT_EQ(sweep(malloc_physical("aclrtMallocPhysical(host NUMA)", numa_prop(), &made)), 1);
  }
}

TEST_F(RollbackSweepVmm, MapAndNoAccessMapRollBack) {
  MappingFixture m;
  // Device memory needs no system call to map: the device MMU is the core's own table.
  EXPECT_EQ(sweep(map_call("aclrtMapMem(device)", device_prop(), false, &m)), 0);
  EXPECT_EQ(sweep(map_call("aclrtMapMem(host)", host_prop(), false, &m)), 1);  // mmap
  EXPECT_EQ(sweep(map_call("aclrtMemMapNoAccess(host)", host_prop(), true, &m)), 0);
  if (host_numa_available()) {
    EXPECT_EQ(sweep(map_call("aclrtMapMem(host NUMA)", numa_prop(), false, &m)), 2);  // + mbind
  }
}

TEST_F(RollbackSweepVmm, HostAccessChangesRollBack) {
  MappingFixture m;
  EXPECT_EQ(sweep(host_access_call("aclrtMemSetAccess(host READWRITE on a no-access mapping)",
                                   host_prop(), 2, kRW, kNone, &m)),
            1);
  // A downgrade replaces the CPU mapping: when that fails, the old one must come back.
  EXPECT_EQ(sweep(host_access_call("aclrtMemSetAccess(host READ on a mapped range)", host_prop(),
                                   1, kRead, kRW, &m)),
            1);
  EXPECT_EQ(sweep(host_access_call("aclrtMemSetAccess(host NONE on a mapped range)", host_prop(),
                                   1, kNone, kRW, &m)),
            1);
  if (host_numa_available()) {
    EXPECT_EQ(sweep(host_access_call("aclrtMemSetAccess(host READ on mapped NUMA memory)",
                                     numa_prop(), 1, kRead, kRW, &m)),
              2);
  }
}

// Several descriptors are applied all or none (docs/emulation.md): when the CPU side of one fails,
// the rights the others gave must be gone again, which only the API's answers show.
TEST_F(RollbackSweepVmm, AccessChangesOfSeveralLocationsRollBackAsOne) {
  MappingFixture m;
  EXPECT_EQ(sweep(access_call("aclrtMemSetAccess(device 1 READWRITE + host READ on a host mapping)",
                              host_prop(), 1, {}, {desc(kRW, dev(1)), desc(kRead, host())},
                              {desc(kNone, dev(1)), desc(kRW, host())}, &m)),
            1);  // the CPU mapping replaced by a read-only one
  EXPECT_EQ(sweep(access_call("aclrtMemSetAccess(host READWRITE on a device mapping)", device_prop(), 1,
                              {}, {desc(kRW, host())}, {desc(kNone, host())}, &m)),
            1);  // a CPU mapping of device memory
  EXPECT_EQ(sweep(access_call("aclrtMemSetAccess(device 1 READ + host READWRITE on a device mapping)",
                              device_prop(), 1, {}, {desc(kRead, dev(1)), desc(kRW, host())},
                              {desc(kNone, dev(1)), desc(kNone, host())}, &m)),
            1);
  EXPECT_EQ(sweep(access_call("aclrtMemSetAccess(host NONE on a device mapping the host reads)",
                              device_prop(), 1, {desc(kRead, host())}, {desc(kNone, host())},
                              {desc(kRead, host())}, &m)),
            1);  // the CPU mapping removed
  EXPECT_EQ(sweep(access_call("aclrtMemSetAccess(device 1 READWRITE + host READWRITE on a no-access "
                              "host mapping)",
                              host_prop(), 2, {}, {desc(kRW, dev(1)), desc(kRW, host())},
                              {desc(kNone, dev(1)), desc(kNone, host())}, &m)),
            1);
}

TEST_F(RollbackSweepVmm, UnmapRollsBack) {
  MappingFixture m;
  EXPECT_EQ(sweep(unmap_call("aclrtUnmapMem(device)", device_prop(), &m)), 0);
  EXPECT_EQ(sweep(unmap_call("aclrtUnmapMem(host)", host_prop(), &m)), 1);
}

TEST_F(RollbackSweepVmm, ReservationsRollBack) {
  void* va = nullptr;
  Call reserve;
  reserve.name = "aclrtReserveMemAddress";
  reserve.run = [&va] { return aclrtReserveMemAddress(&va, 4 * k2M, 0, nullptr, 0); };
  reserve.undo = [&va] { EXPECT_EQ(aclrtReleaseMemAddress(va), kOk); };
  EXPECT_EQ(sweep(reserve), 0);

  // Fixed-address no-UC reservations (A3) claim their own range from the kernel.
  ScopedEnvRuntime a3("ACLVMM_SOC", "Ascend910_9391");
  ASSERT_TRUE(a3.ok());
  void* const fixed = reinterpret_cast<void*>(0x180000000000ull);
  windows().emplace_back(0x180000000000ull, 0x180000000000ull + 2 * kGiB);
  Call no_uc;
  no_uc.name = "aclrtReserveMemAddressNoUCMemory";
  no_uc.run = [&va, fixed] { return aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, fixed, 0); };
  no_uc.undo = [&va] { EXPECT_EQ(aclrtReleaseMemAddress(va), kOk); };
  EXPECT_EQ(sweep(no_uc), 1);
  Call release;
  release.name = "aclrtReleaseMemAddress(no-UC)";
  release.setup = [&va, fixed] {
    ASSERT_EQ(aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, fixed, 0), kOk);
  };
  release.run = [&va] { return aclrtReleaseMemAddress(va); };
  // Nothing is mapped: the answers are refusals, which must stay refusals (no bytes to read).
  release.watch = [&va] { return Watch{{{va, kGiB, false, false}}, {}}; };
  EXPECT_EQ(sweep(release), 1);  // munmap
}

TEST_F(RollbackSweepVmm, MallocAndMallocHostRollBack) {
  void* p = nullptr;
  Call dev;
  dev.name = "aclrtMalloc";
  dev.run = [&p] { return aclrtMalloc(&p, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST); };
  dev.verify = [&p] {
    h2d(p, pattern(4096, 1));
    EXPECT_EQ(get(p, 4096), pattern(4096, 1));
  };
  dev.undo = [&p] { EXPECT_EQ(aclrtFree(p), kOk); };
  EXPECT_EQ(sweep(dev), 1);  // memfd

  Call pinned;
  pinned.name = "aclrtMallocHost";
  pinned.run = [&p] { return aclrtMallocHost(&p, 3 * kMiB); };
  pinned.verify = [&p] {
    static_cast<char*>(p)[5] = 7;  // the CPU reaches it directly
    EXPECT_EQ(static_cast<char*>(p)[5], 7);
  };
  pinned.undo = [&p] { EXPECT_EQ(aclrtFreeHost(p), kOk); };
  EXPECT_EQ(sweep(pinned), 2);  // memfd, mmap

  Call free_host;
  free_host.name = "aclrtFreeHost";
  free_host.setup = [&p] {
    ASSERT_EQ(aclrtMallocHost(&p, 3 * kMiB), kOk);
    const std::string bytes = pattern(3 * kMiB, 5);
    std::memcpy(p, bytes.data(), bytes.size());
  };
  free_host.run = [&p] { return aclrtFreeHost(p); };
  free_host.watch = [&p] { return Watch{{{p, 3 * kMiB}}, {}}; };
  EXPECT_EQ(sweep(free_host), 1);  // the placeholder back over the mapping
}

// ACLVMM_HOST_ACCESS=open: device memory gets CPU mappings too.
TEST_F(RollbackSweepVmm, OpenHostAccessMappingsRollBack) {
  ScopedEnvRuntime open("ACLVMM_HOST_ACCESS", "open");
  ASSERT_TRUE(open.ok());
  void* p = nullptr;
  Call dev;
  dev.name = "aclrtMalloc(open host access)";
  dev.run = [&p] { return aclrtMalloc(&p, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST); };
  dev.undo = [&p] { EXPECT_EQ(aclrtFree(p), kOk); };
  EXPECT_EQ(sweep(dev), 2);  // memfd, mmap
  Call free_dev;
  free_dev.name = "aclrtFree(open host access)";
  free_dev.setup = [&p] {
    ASSERT_EQ(aclrtMalloc(&p, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    h2d(p, pattern(3 * kMiB, 6));
  };
  free_dev.run = [&p] { return aclrtFree(p); };
  free_dev.watch = [&p] { return Watch{{{p, 3 * kMiB}}, {}}; };
  EXPECT_EQ(sweep(free_dev), 1);
  MappingFixture m;
  EXPECT_EQ(sweep(map_call("aclrtMapMem(device, open host access)", device_prop(), false, &m)), 1);
  EXPECT_EQ(sweep(map_call("aclrtMemMapNoAccess(device, open host access)", device_prop(), true,
                           &m)),
            1);
}

}  // namespace
}  // namespace rollback_sweep
