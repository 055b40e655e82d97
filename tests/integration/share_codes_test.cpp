// Codes and handle semantics of export / import (behavior.md section 7 and the decisions at its top;
// properties of imported handles: section 6). The other process is aclvmm_share_peer.
#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using ShareCodes = AclTest;

// §7 V1 export: a handle already exported, or itself imported ("blk has been shared") → 507899;
// import in the exporting process onto the exporter's device → 507899.
TEST_F(ShareCodes, ExportAndSameProcessMisuse) {
  LocalExport e = export_local(61);
  Peer p;
  ASSERT_EQ(p.rc("alloc 0 0 2097152"), kOk);
  const uint64_t foreign = p.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  aclrtDrvMemHandle imported = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(foreign, 0, &imported), kOk);
  uint64_t out = 0;
  unsigned char blob[16];
  aclrtDrvMemHandle same = nullptr;
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  };
  const Case cases[] = {
      {"export twice",
       [&] { return aclrtMemExportToShareableHandle(e.h, ACL_MEM_HANDLE_TYPE_NONE, 0, &out); }, kDrv},
      {"export twice, flags 1",
       [&] { return aclrtMemExportToShareableHandle(e.h, ACL_MEM_HANDLE_TYPE_NONE, 1, &out); }, kDrv},
      {"export twice, V2 DEFAULT",
       [&] { return aclrtMemExportToShareableHandleV2(e.h, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, blob); },
       kDrv},
      {"export of an imported handle",
       [&] { return aclrtMemExportToShareableHandle(imported, ACL_MEM_HANDLE_TYPE_NONE, 0, &out); }, kDrv},
      {"V2 export of an imported handle",
       [&] { return aclrtMemExportToShareableHandleV2(imported, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, blob); },
       kDrv},
      {"own export onto the same device",
       [&] { return aclrtMemImportFromShareableHandle(e.token, 0, &same); }, kDrv},
      {"own export onto the same device, V2",
       [&] { return aclrtMemImportFromShareableHandleV2(&e.token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &same); },
       kDrv},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  EXPECT_EQ(same, nullptr);
  EXPECT_EQ(live_count("exports"), 1);
  EXPECT_EQ(live_count("imports"), 1);
  EXPECT_EQ(aclrtFreePhysical(imported), kOk);
  EXPECT_EQ(p.finish(), 0);
  e.release();
}

// Decision at the top of behavior.md: import in the exporting process onto another device is
// allowed, and both handles are the same memory.
TEST_F(ShareCodes, SameProcessImportOntoAnotherDeviceSharesBytes) {
  LocalExport e = export_local(63);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclrtDrvMemHandle h1 = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(e.token, 1, &h1), kOk);
  ASSERT_NE(h1, nullptr);
  EXPECT_NE(h1, e.h);
  void* va1 = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va1, k2M, 0, h1, 0), kOk);
  EXPECT_EQ(get(va1, k2M), share_peer::peer_pattern(k2M, 63));
  const std::string fresh = pattern(4096, 99);
  h2d(at(va1, 12345), fresh);  // written through device 1's mapping
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(at(e.va, 12345), 4096), fresh);  // read through the exporter's
  EXPECT_EQ(aclrtUnmapMem(va1), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va1), kOk);
  EXPECT_EQ(aclrtFreePhysical(h1), kOk);
  e.release();
  aclrtResetDeviceForce(1);
}

// §7 driver: the same token imported again on the same device in one process returns the same
// handle value with ref++; each import needs its aclrtFreePhysical (then 107000, §1 double free).
TEST_F(ShareCodes, SameTokenTwiceOnOneDeviceIsOneHandle) {
  Peer p;
  ASSERT_EQ(p.rc("alloc 0 0 2097152"), kOk);
  ASSERT_EQ(p.rc("map 0 2097152"), kOk);
  ASSERT_EQ(p.rc("write 0 0 2097152 65"), kOk);
  const uint64_t t = p.export_token(0);
  int32_t self = 0;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&self), kOk);
  ASSERT_EQ(p.rc(line("setpid", hex(t), self)), kOk);
  aclrtDrvMemHandle a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(t, 0, &a), kOk);
  ASSERT_EQ(aclrtMemImportFromShareableHandle(t, 0, &b), kOk);
  EXPECT_EQ(a, b);
  EXPECT_EQ(live_count("imports"), 1);
  ASSERT_EQ(aclrtFreePhysical(a), kOk);
  // One reference left: the handle still works.
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, b, 0), kOk);
  EXPECT_EQ(get(va, k2M), share_peer::peer_pattern(k2M, 65));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  ASSERT_EQ(aclrtFreePhysical(b), kOk);
  EXPECT_EQ(aclrtFreePhysical(b), kRtParam);  // gone now
  EXPECT_EQ(live_count("imports"), 0);
  EXPECT_EQ(p.finish(), 0);
}

// §7 kernel: unknown or released token → EFAULT → 107017: never exported, exporter freed its
// handle, exporter process exited; both V1 and V2 DEFAULT.
TEST_F(ShareCodes, UnknownOrReleasedTokenIs107017) {
  Peer p;
  ASSERT_EQ(p.rc("alloc 0 0 2097152"), kOk);
  ASSERT_EQ(p.rc("alloc 1 0 2097152"), kOk);
  const uint64_t freed = p.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const uint64_t exited = p.export_token(1, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(p.rc("free 0"), kOk);
  Peer q;  // finalizes but stays alive
  ASSERT_EQ(q.rc("alloc 0 0 2097152"), kOk);
  const uint64_t finalized = q.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(q.rc("fin"), kOk);
  const double t0 = now_s();
  ASSERT_EQ(p.finish(), 0);
  const uint64_t unknown = (uint64_t{2} << 32) | (share_id_of(exited) ^ 0x13572468u);
  struct Case {
    const char* name;
    uint64_t token;
  };
  const Case cases[] = {
      {"never exported", unknown},
      {"exporter freed its handle", freed},
      {"exporter exited", exited},
      {"exporter called aclFinalize", finalized},
      {"bits 40-63 set", exited | (uint64_t{1} << 40)},
      {"share id 0", uint64_t{0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMemImportFromShareableHandle(c.token, 0, &h), kBadHandle);
    EXPECT_EQ(aclrtMemImportFromShareableHandleV2(const_cast<uint64_t*>(&c.token),
                                                  ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &h),
              kBadHandle);
    EXPECT_EQ(h, nullptr);
  }
  EXPECT_LT(now_s() - t0, 5.0);  // refusals are immediate, no timeout involved
  EXPECT_EQ(live_count("imports"), 0);
  EXPECT_EQ(q.finish(), 0);
}

// §7: a token stops being known the moment its export ends — the exporter's own SetPid right after
// aclrtFreePhysical and another process's import right after it both see 107017 (no window in
// which the ended export still answers differently).
TEST_F(ShareCodes, TokenIsUnknownRightAfterRelease) {
  Peer im;
  int32_t self = getpid();
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    aclrtDrvMemHandle h = make_handle();
    uint64_t t = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &t), kOk);
    ASSERT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(aclrtMemSetPidToShareableHandle(t, &self, 1), kBadHandle);
  }
  Peer ex;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(ex.rc("alloc 0 0 2097152"), kOk);
    const uint64_t t = ex.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
    ASSERT_EQ(ex.rc("free 0"), kOk);
    EXPECT_EQ(Peer::code_of(im.cmd(line("import 0", hex(t), 0))), kBadHandle);
  }
  EXPECT_EQ(ex.finish(), 0);
  EXPECT_EQ(im.finish(), 0);
}

// §7 / emulation.md §5: a token names (exporting device, share id); the same share id with another
// device field is a token no export produced → unknown (107017), for import in another process,
// for import and SetPid in the exporting process.
TEST_F(ShareCodes, TokenWithAnotherDeviceFieldIsUnknown) {
  LocalExport e = export_local(67, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  LocalExport w = export_local(68);
  const uint64_t forged = e.token ^ (uint64_t{5} << 32);
  const uint64_t forged_w = w.token ^ (uint64_t{2} << 32);
  Peer p;
  EXPECT_EQ(Peer::code_of(p.cmd(line("import 0", hex(forged), 0))), kBadHandle);
  int32_t self = getpid();
  EXPECT_EQ(aclrtMemSetPidToShareableHandle(forged_w, &self, 1), kBadHandle);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(aclrtMemImportFromShareableHandle(forged, 1, &h), kBadHandle);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(p.finish(), 0);
  e.release();
  w.release();
  aclrtResetDeviceForce(1);
}

// §7 V1 import: onto a device other than the exporter's, the runtime enables P2P both ways — after
// importing device-0 memory onto device 1, aclrtMalloc memory of device 0 is reachable from device 1
// and the other way round (it was not before).
TEST_F(ShareCodes, ImportOntoAnotherDeviceEnablesPeerAccessBothWays) {
  Peer p;
  ASSERT_EQ(p.rc("alloc 0 0 2097152"), kOk);
  const uint64_t t = p.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const std::string b0 = pattern(8192, 70), b1 = pattern(8192, 71);
  void* d0 = nullptr;
  void* d1 = nullptr;
  ASSERT_EQ(aclrtMalloc(&d0, 8192, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(d0, b0);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ASSERT_EQ(aclrtMalloc(&d1, 8192, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  h2d(d1, b1);
  aclError rc = kOk;
  get(d0, 8192, &rc);  // device 1 reads device 0's memory: no peer access yet
  EXPECT_EQ(rc, kDrv);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(t, 1, &h), kOk);
  EXPECT_EQ(get(d0, 8192, &rc), b0);  // 1 -> 0
  EXPECT_EQ(rc, kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(d1, 8192, &rc), b1);  // 0 -> 1
  EXPECT_EQ(rc, kOk);
  EXPECT_EQ(aclrtMemcpy(d0, 8192, d1, 8192, ACL_MEMCPY_DEVICE_TO_DEVICE), kOk);
  EXPECT_EQ(get(d0, 8192), b1);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFree(d0), kOk);
  EXPECT_EQ(aclrtFree(d1), kOk);
  EXPECT_EQ(p.finish(), 0);
  aclrtResetDeviceForce(1);
}

// §3 / §7 / §8 / §6: an imported handle maps, takes aclrtMemSetAccess and frees like a local one;
// its properties are the exporter's record: device id of the exporter, and an ACL_HBM_MEM_NORMAL
// export reads back as ACL_HBM_MEM_HUGE.
TEST_F(ShareCodes, ImportedHandleBehavesLikeALocalOne) {
  Peer p;
  ASSERT_EQ(p.rc("dev 3"), kOk);
  ASSERT_EQ(p.rc(line("alloc 0 3 4194304", static_cast<int>(ACL_HBM_MEM_NORMAL))), kOk);
  ASSERT_EQ(p.rc("map 0 4194304"), kOk);
  ASSERT_EQ(p.rc("write 0 0 4194304 73"), kOk);
  const uint64_t t = p.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  EXPECT_EQ(device_of(t), 3u);

  const size_t used_before = static_cast<size_t>(device_used(stats(), 0));
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(t, 0, &h), kOk);
  aclrtPhysicalMemProp prop{};
  ASSERT_EQ(aclrtMemGetAllocationPropertiesFromHandle(h, &prop), kOk);
  EXPECT_EQ(load_raw(prop.memAttr), static_cast<uint32_t>(ACL_HBM_MEM_HUGE));
  EXPECT_EQ(load_raw(prop.location.type), static_cast<uint32_t>(ACL_MEM_LOCATION_TYPE_DEVICE));
  EXPECT_EQ(prop.location.id, 3u);
  EXPECT_EQ(load_raw(prop.handleType), static_cast<uint32_t>(ACL_MEM_HANDLE_TYPE_NONE));

  // Map it twice (two VAs), read the exporter's bytes, grant HOST access and read by CPU.
  void* va = reserve(4 * kMiB);
  void* vb = reserve(2 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMapMem(vb, 2 * kMiB, 0, h, 0), kOk);  // smaller than the handle: first pages
  const std::string all = share_peer::peer_pattern(4 * kMiB, 73);
  EXPECT_EQ(get(va, 4 * kMiB), all);
  EXPECT_EQ(get(vb, 2 * kMiB), all.substr(0, 2 * kMiB));
  ASSERT_EQ(set1(va, 4 * kMiB, kRW, host()), kOk);
  EXPECT_EQ(access_of(va, host()), kRW);
  EXPECT_EQ(std::memcmp(at(va, 3 * kMiB), all.data() + 3 * kMiB, 4096), 0);
  const std::string cpu = share_peer::peer_pattern(4096, 99);
  std::memcpy(at(va, kMiB), cpu.data(), cpu.size());  // a CPU write the exporter sees
  EXPECT_EQ(p.cmd("check 0 1048576 4096 99"), (std::vector<std::string>{"0", "1"}));
  // Free while mapped, then the last unmap releases it (§1, §3).
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtUnmapMem(vb), kOk);
  EXPECT_EQ(get(at(va, kMiB), 4096), cpu);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(vb), kOk);
  // Importing charged nothing to this process's device 0: the memory is the exporter's.
  EXPECT_EQ(static_cast<size_t>(device_used(stats(), 0)), used_before);
  EXPECT_EQ(p.finish(), 0);
}

}  // namespace
