// Which device may reach which memory: aclrtMemSetAccess grants for other devices and for the owner,
// copies executed on another device, and peer access for aclrtMalloc memory (behavior.md §8, §13
// peer access, decisions table "memcpy/memset ... the executing device may not access";
// emulation.md §4 "Devices"; clients.md A8).
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

constexpr size_t kCopyBytes = 64 * 1024;  // bytes moved by each copy

// Runs `op` with `device` current on this thread; device 0 is current again afterwards.
aclError on_device(int device, const std::function<aclError()>& op) {
  EXPECT_EQ(aclrtSetDevice(device), kOk);
  const aclError rc = op();
  EXPECT_EQ(aclrtSetDevice(0), kOk);
  return rc;
}
// Copies and sets of kCopyBytes bytes executed on `device`.
aclError read_on(int device, const void* src, std::string* out) {
  out->assign(kCopyBytes, '\0');
  return on_device(device, [&] {
    return aclrtMemcpy(out->data(), kCopyBytes, src, kCopyBytes, ACL_MEMCPY_DEVICE_TO_HOST);
  });
}
aclError write_on(int device, void* dst, const std::string& in) {
  return on_device(device, [&] { return put(dst, in); });
}
aclError memset_on(int device, void* dst, int value) {
  return on_device(device, [&] { return aclrtMemset(dst, kCopyBytes, value, kCopyBytes); });
}
aclError d2d_on(int device, void* dst, const void* src) {
  return on_device(device, [&] {
    return aclrtMemcpy(dst, kCopyBytes, src, kCopyBytes, ACL_MEMCPY_DEVICE_TO_DEVICE);
  });
}

// The 2 MiB device-0 mapping of MappedTest, holding `bytes_` (written by device 0).
class AccessDeviceTest : public MappedTest {
 protected:
  void SetUp() override {
    MappedTest::SetUp();
    if (HasFatalFailure()) return;
    bytes_ = pattern(kCopyBytes, 1);
    ASSERT_EQ(write_on(0, va_, bytes_), kOk);
  }
  void TearDown() override {
    aclrtResetDeviceForce(1);
    MappedTest::TearDown();
  }
  // What device 0 (the owner, READWRITE) sees.
  std::string contents() {
    std::string out;
    EXPECT_EQ(read_on(0, va_, &out), kOk);
    return out;
  }

  std::string bytes_;
};

using AccessMemcpyTest = AclTest;
using AccessVisibleDevicesTest = AclTest;

// Decisions table + emulation.md §4: a device other than the owner reaches a mapping only after
// a grant; without one every copy or memset executed on it fails with 507899 and changes nothing.
TEST_F(AccessDeviceTest, OtherDeviceNeedsAGrant) {
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  void* dev1_buf = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev1_buf, kCopyBytes, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  struct Op {
    const char* name;
    std::function<aclError()> run;
  };
  const Op ops[] = {
      {"D2H read on device 1",
       [&] {
         std::string s;
         return read_on(1, va_, &s);
       }},
      {"H2D write on device 1", [&] { return write_on(1, va_, pattern(kCopyBytes, 9)); }},
      {"memset on device 1", [&] { return memset_on(1, va_, 0x77); }},
      {"D2D to device-1 memory on device 1", [&] { return d2d_on(1, dev1_buf, va_); }},
      {"D2D from device-1 memory on device 1", [&] { return d2d_on(1, va_, dev1_buf); }},
  };
  for (const Op& op : ops) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.run(), kDrv);
    EXPECT_EQ(contents(), bytes_);
  }
  EXPECT_EQ(aclrtFree(dev1_buf), kOk);
}

// Decisions table: device 1 can be granted READWRITE, downgraded to READ, revoked and granted
// again; each state decides what copies executed on device 1 may do (reads need READ, writes
// READWRITE; a refused write leaves the bytes alone).
TEST_F(AccessDeviceTest, GrantDowngradeRevokeForDevice1) {
  struct Step {
    const char* name;
    int flags;
    aclError read, write;
  };
  const Step steps[] = {
      {"grant READWRITE", kRW, kOk, kOk},
      {"downgrade to READ", kRead, kOk, kDrv},
      {"revoke (NONE)", kNone, kDrv, kDrv},
      {"grant READ after revoke", kRead, kOk, kDrv},
      {"grant READWRITE again", kRW, kOk, kOk},
  };
  unsigned seed = 20;
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    ASSERT_EQ(set1(va_, k2M, s.flags, dev(1)), kOk);
    EXPECT_EQ(access_of(va_, dev(1)), s.flags);
    EXPECT_EQ(access_of(va_, dev(0)), kRW);  // the owner keeps its access

    std::string seen;
    EXPECT_EQ(read_on(1, va_, &seen), s.read);
    if (s.read == kOk) {
      EXPECT_EQ(seen, bytes_);
    }

    const std::string next = pattern(kCopyBytes, ++seed);
    EXPECT_EQ(write_on(1, va_, next), s.write);
    if (s.write == kOk) bytes_ = next;
    EXPECT_EQ(contents(), bytes_);

    EXPECT_EQ(memset_on(1, va_, 0x3c), s.write);
    if (s.write == kOk) bytes_.assign(kCopyBytes, '\x3c');
    EXPECT_EQ(contents(), bytes_);
  }
}

// Decisions table: the owner device can be downgraded and revoked too, and restored.
TEST_F(AccessDeviceTest, OwnerCanBeDowngraded) {
  struct Step {
    const char* name;
    int flags;
    aclError read, write;
  };
  const Step steps[] = {
      {"owner READ", kRead, kOk, kDrv},
      {"owner NONE", kNone, kDrv, kDrv},
      {"owner READWRITE", kRW, kOk, kOk},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    ASSERT_EQ(set1(va_, k2M, s.flags, dev(0)), kOk);
    EXPECT_EQ(access_of(va_, dev(0)), s.flags);
    std::string seen;
    EXPECT_EQ(read_on(0, va_, &seen), s.read);
    if (s.read == kOk) {
      EXPECT_EQ(seen, bytes_);
    }
    EXPECT_EQ(write_on(0, va_, pattern(kCopyBytes, 5)), s.write);
    EXPECT_EQ(memset_on(0, va_, 0), s.write);
    if (s.write == kOk) bytes_.assign(kCopyBytes, '\0');
  }
  EXPECT_EQ(contents(), bytes_);
}

// A copy between a device-0 and a device-1 mapping runs on one device and needs access to both
// sides: on device 1 after the grant it works; on device 0 (no access to device 1's mapping) it
// is 507899.
TEST_F(AccessDeviceTest, DeviceToDeviceCopyNeedsAccessToBothSides) {
  void* va1 = reserve(k2M);
  aclrtDrvMemHandle h1 = make_handle(k2M, 1);
  ASSERT_EQ(aclrtMapMem(va1, k2M, 0, h1, 0), kOk);
  EXPECT_EQ(d2d_on(0, va1, va_), kDrv);
  EXPECT_EQ(d2d_on(1, va1, va_), kDrv);  // device 1 may not read device 0's mapping yet
  ASSERT_EQ(set1(va_, k2M, kRW, dev(1)), kOk);
  EXPECT_EQ(d2d_on(1, va1, va_), kOk);
  std::string seen;
  EXPECT_EQ(read_on(1, va1, &seen), kOk);
  EXPECT_EQ(seen, bytes_);
  EXPECT_EQ(read_on(0, va1, &seen), kDrv);
  EXPECT_EQ(aclrtUnmapMem(va1), kOk);
  EXPECT_EQ(aclrtFreePhysical(h1), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va1), kOk);
}

// Decisions table: for async calls the access failure is reported by the next synchronisation
// of the stream.
TEST_F(AccessDeviceTest, AsyncCopyOnOtherDeviceFailsAtSynchronisation) {
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  std::string out(kCopyBytes, '\0');
  EXPECT_EQ(aclrtMemcpyAsync(out.data(), kCopyBytes, va_, kCopyBytes, ACL_MEMCPY_DEVICE_TO_HOST, s),
            kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kDrv);
  ASSERT_EQ(set1(va_, k2M, kRead, dev(1)), kOk);
  EXPECT_EQ(aclrtMemcpyAsync(out.data(), kCopyBytes, va_, kCopyBytes, ACL_MEMCPY_DEVICE_TO_HOST, s),
            kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(out, bytes_);
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
}

// aclrtMalloc memory of device 0 is reached from device 1 only after device 1 enabled peer
// access to device 0 (§13); disabling it again closes the path. Peer access is one-way.
TEST_F(AccessMemcpyTest, MallocMemoryNeedsPeerAccess) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, kCopyBytes, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  const std::string in = pattern(kCopyBytes, 4);
  ASSERT_EQ(write_on(0, p, in), kOk);

  std::string seen;
  EXPECT_EQ(read_on(1, p, &seen), kDrv);
  EXPECT_EQ(write_on(1, p, pattern(kCopyBytes, 6)), kDrv);

  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ASSERT_EQ(aclrtDeviceEnablePeerAccess(0, 0), kOk);
  void* q = nullptr;  // device-1 memory
  ASSERT_EQ(aclrtMalloc(&q, kCopyBytes, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);

  EXPECT_EQ(read_on(1, p, &seen), kOk);
  EXPECT_EQ(seen, in);
  const std::string next = pattern(kCopyBytes, 7);
  EXPECT_EQ(write_on(1, p, next), kOk);
  EXPECT_EQ(read_on(0, p, &seen), kOk);
  EXPECT_EQ(seen, next);
  // Device 0 did not enable access to device 1.
  EXPECT_EQ(read_on(0, q, &seen), kDrv);
  EXPECT_EQ(d2d_on(1, q, p), kOk);
  EXPECT_EQ(read_on(1, q, &seen), kOk);
  EXPECT_EQ(seen, next);

  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(aclrtDeviceDisablePeerAccess(0), kOk);
  EXPECT_EQ(aclrtFree(q), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(read_on(1, p, &seen), kDrv);
  EXPECT_EQ(aclrtFree(p), kOk);
  aclrtResetDeviceForce(1);
}

// §8: location ids name driver devices and are passed through unconverted, so with
// ASCEND_RT_VISIBLE_DEVICES=2,3 the owner of a user-device-0 mapping is DEVICE 2 and user device 1
// is granted as DEVICE 3 (clients.md A8: grants use the driver's logical id).
TEST_F(AccessVisibleDevicesTest, LocationIdsAreDriverIds) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,3");
  ASSERT_TRUE(env.ok());
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle(k2M, 0);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_EQ(access_of(va, dev(2)), kRW);
  EXPECT_EQ(access_of(va, dev(0)), kNone);
  const std::string in = pattern(kCopyBytes, 3);
  ASSERT_EQ(write_on(0, va, in), kOk);
  std::string seen;
  EXPECT_EQ(read_on(1, va, &seen), kDrv);

  ASSERT_EQ(set1(va, k2M, kRW, dev(3)), kOk);
  EXPECT_EQ(access_of(va, dev(3)), kRW);
  EXPECT_EQ(access_of(va, dev(1)), kNone);
  EXPECT_EQ(read_on(1, va, &seen), kOk);  // user device 1 = driver device 3
  EXPECT_EQ(seen, in);
  aclrtResetDeviceForce(1);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
