// Host physical memory mapped READ-only for the host: no copy or set may write it (issue 13).
//
// Who executes each call (emulation.md §4 "Devices"; docs/emulation.md "Who may touch which
// bytes"): every runtime operation — aclrtMemcpy of any kind, including HOST_TO_HOST between two
// host buffers, aclrtMemset, their async forms and emulated kernels — runs on a device (the
// calling thread's current device, or the stream's), never as a plain CPU store into the
// mapping. A device reaches host-located physical memory through the host's mapping of it, so
// the HOST location's rights govern it: after aclrtMemSetAccess(HOST, READ) every such write
// fails with 507899 (decisions table, "memcpy/memset ... that the executing device may not
// access"), whatever the source, the kind, the current device (or none) and any DEVICE grant on
// the host mapping. Reads still work. The bytes stay as they were, the rights stay READ, and
// nothing crashes: each row checks all three.
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "aclvmm/aclvmm.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr size_t kRowBytes = 64 * 1024;  // bytes each row tries to write

// One write attempt: an emulated kernel's aclvmmKernelWrite of `n` bytes.
struct KernelWrite {
  void* dst;
  const void* src;
  size_t n;
  aclError rc = -1;
};
void kernel_write(aclvmmKernelContext* ctx, void* raw) {
  auto* w = static_cast<KernelWrite*>(raw);
  w->rc = aclvmmKernelWrite(ctx, w->dst, w->src, w->n);
}

// Two 2 MiB host handles mapped back to back in one 4 MiB reservation: `ro_` (the second) is
// READ for the host, `rw_` (the first) stays READWRITE. Sources of every kind hold `incoming_`.
class AccessReadOnlyHostTest : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    base_ = reserve(2 * k2M);
    for (int i = 0; i < 2; ++i) {
      aclrtPhysicalMemProp prop = host_prop();
      ASSERT_EQ(aclrtMallocPhysical(&h_[i], k2M, &prop, 0), kOk);
      ASSERT_EQ(aclrtMapMem(at(base_, i * k2M), k2M, 0, h_[i], 0), kOk);
    }
    rw_ = static_cast<char*>(base_);
    ro_ = rw_ + k2M;
    h2d(rw_, old_rw_);
    h2d(ro_, old_ro_);
    ASSERT_EQ(set1(ro_, k2M, kRead, host()), kOk);
    ASSERT_EQ(aclrtCreateStream(&stream_), kOk);
    ASSERT_EQ(aclrtMalloc(&dev_, kRowBytes, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    h2d(dev_, incoming_);
    ASSERT_EQ(aclrtMallocHost(&pinned_, kRowBytes), kOk);
    std::memcpy(pinned_, incoming_.data(), kRowBytes);
    vmm_dev_ = reserve(k2M);
    dev_h_ = make_handle();
    ASSERT_EQ(aclrtMapMem(vmm_dev_, k2M, 0, dev_h_, 0), kOk);
    h2d(vmm_dev_, incoming_);
    ASSERT_EQ(aclrtMemAllocManaged(&managed_, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    std::memcpy(managed_, incoming_.data(), kRowBytes);
  }
  void TearDown() override {
    EXPECT_EQ(aclrtFree(managed_), kOk);
    EXPECT_EQ(aclrtUnmapMem(vmm_dev_), kOk);
    EXPECT_EQ(aclrtFreePhysical(dev_h_), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(vmm_dev_), kOk);
    EXPECT_EQ(aclrtFreeHost(pinned_), kOk);
    EXPECT_EQ(aclrtFree(dev_), kOk);
    EXPECT_EQ(aclrtDestroyStream(stream_), kOk);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(aclrtUnmapMem(at(base_, i * k2M)), kOk);
      EXPECT_EQ(aclrtFreePhysical(h_[i]), kOk);
    }
    EXPECT_EQ(aclrtReleaseMemAddress(base_), kOk);
    AclTest::TearDown();
  }

  // Both mappings hold what SetUp wrote, read by the CPU (the host may read both) and by a
  // device copy; the host's rights are unchanged.
  void expect_unchanged() {
    EXPECT_EQ(std::string(ro_, k2M), old_ro_) << "CPU view of the READ mapping";
    EXPECT_EQ(std::string(rw_, k2M), old_rw_) << "CPU view of the READWRITE mapping";
    EXPECT_EQ(get(ro_, k2M), old_ro_) << "device copy of the READ mapping";
    EXPECT_EQ(get(rw_, k2M), old_rw_) << "device copy of the READWRITE mapping";
    EXPECT_EQ(access_of(ro_, host()), kRead);
    EXPECT_EQ(access_of(rw_, host()), kRW);
  }
  aclError copy_in(void* dst, const void* src, aclrtMemcpyKind kind) {
    return aclrtMemcpy(dst, kRowBytes, src, kRowBytes, kind);
  }
  aclError copy_in_async(const void* src, aclrtMemcpyKind kind) {
    const aclError rc = aclrtMemcpyAsync(ro_, kRowBytes, src, kRowBytes, kind, stream_);
    return rc != kOk ? rc : aclrtSynchronizeStream(stream_);
  }

  void* base_ = nullptr;
  aclrtDrvMemHandle h_[2] = {};
  char* rw_ = nullptr;
  char* ro_ = nullptr;
  aclrtStream stream_ = nullptr;
  void* dev_ = nullptr;      // aclrtMalloc on device 0
  void* pinned_ = nullptr;   // aclrtMallocHost
  void* vmm_dev_ = nullptr;  // a device-0 VMM mapping
  aclrtDrvMemHandle dev_h_ = nullptr;
  void* managed_ = nullptr;
  const std::string old_rw_ = pattern(k2M, 1), old_ro_ = pattern(k2M, 2);
  const std::string incoming_ = pattern(kRowBytes, 3);
  std::string plain_ = pattern(kRowBytes, 3);  // plain process memory
};

// Every way of writing the READ mapping: 507899, bytes and rights unchanged.
TEST_F(AccessReadOnlyHostTest, EveryWriteIsRefusedAndChangesNothing) {
  struct Row {
    const char* name;
    std::function<aclError()> run;
    bool checks_message_itself = false;  // the message is kept per thread
  } rows[] = {
      {"memcpy from aclrtMalloc memory, DEVICE_TO_HOST",
       [&] { return copy_in(ro_, dev_, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"memcpy from aclrtMalloc memory, DEVICE_TO_DEVICE",
       [&] { return copy_in(ro_, dev_, ACL_MEMCPY_DEVICE_TO_DEVICE); }},
      {"memcpy from a device VMM mapping, DEFAULT",
       [&] { return copy_in(ro_, vmm_dev_, ACL_MEMCPY_DEFAULT); }},
      {"memcpy from plain host memory, HOST_TO_HOST",
       [&] { return copy_in(ro_, plain_.data(), ACL_MEMCPY_HOST_TO_HOST); }},
      {"memcpy from plain host memory, HOST_TO_DEVICE",
       [&] { return copy_in(ro_, plain_.data(), ACL_MEMCPY_HOST_TO_DEVICE); }},
      {"memcpy from aclrtMallocHost memory, HOST_TO_HOST",
       [&] { return copy_in(ro_, pinned_, ACL_MEMCPY_HOST_TO_HOST); }},
      {"memcpy from managed memory, DEFAULT",
       [&] { return copy_in(ro_, managed_, ACL_MEMCPY_DEFAULT); }},
      {"memcpy from the READWRITE host mapping, HOST_TO_HOST",
       [&] { return copy_in(ro_, rw_, ACL_MEMCPY_HOST_TO_HOST); }},
      {"memcpy within the READ mapping (the source is readable)",
       [&] { return copy_in(ro_ + kRowBytes, ro_, ACL_MEMCPY_HOST_TO_HOST); }},
      {"memcpy across both mappings: nothing of the READWRITE part is written either",
       [&] { return copy_in(ro_ - kRowBytes / 2, plain_.data(), ACL_MEMCPY_HOST_TO_HOST); }},
      {"memcpy with no current context (a thread that never set a device)",
       [&] {
         aclError rc = -1;
         std::thread([&] {
           rc = copy_in(ro_, plain_.data(), ACL_MEMCPY_HOST_TO_HOST);
           EXPECT_FALSE(recent_msg().empty()) << "the refusal says why, on its thread";
         }).join();
         return rc;
       },
       true},
      {"memcpy executed on device 1",
       [&] {
         EXPECT_EQ(aclrtSetDevice(1), kOk);
         const aclError rc = copy_in(ro_, plain_.data(), ACL_MEMCPY_HOST_TO_DEVICE);
         EXPECT_EQ(aclrtSetDevice(0), kOk);
         return rc;
       }},
      {"memcpy after a READWRITE grant to device 0 on the host mapping",
       [&] {
         EXPECT_EQ(set1(ro_, k2M, kRW, dev(0)), kOk);
         return copy_in(ro_, dev_, ACL_MEMCPY_DEVICE_TO_HOST);
       }},
      {"memcpyAsync from aclrtMalloc memory + synchronize",
       [&] { return copy_in_async(dev_, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"memcpyAsync from plain host memory + synchronize",
       [&] { return copy_in_async(plain_.data(), ACL_MEMCPY_HOST_TO_HOST); }},
      {"memset", [&] { return aclrtMemset(ro_, kRowBytes, 0x5a, kRowBytes); }},
      {"memset of zeros (would punch a hole)", [&] { return aclrtMemset(ro_, k2M, 0, k2M); }},
      {"memset across both mappings",
       [&] { return aclrtMemset(ro_ - kRowBytes / 2, kRowBytes, 0x5a, kRowBytes); }},
      {"memsetAsync + synchronize",
       [&] {
         const aclError rc = aclrtMemsetAsync(ro_, kRowBytes, 0x5a, kRowBytes, stream_);
         return rc != kOk ? rc : aclrtSynchronizeStream(stream_);
       }},
      {"aclvmmKernelWrite in an emulated kernel",
       [&] {
         KernelWrite w{ro_, plain_.data(), kRowBytes};
         EXPECT_EQ(aclvmmLaunchKernel(stream_, kernel_write, &w), kOk);
         const aclError sync = aclrtSynchronizeStream(stream_);
         EXPECT_EQ(w.rc, kDrv) << "aclvmmKernelWrite itself";
         return sync;
       }},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.run(), kDrv);
    if (!r.checks_message_itself) {
      EXPECT_FALSE(recent_msg().empty()) << "the refusal says why";
    }
    expect_unchanged();
    EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk) << "the stream's error was reported once";
  }
}

// Control rows: the READ mapping is still readable by every kind of copy, and the same writes
// succeed once READWRITE is granted back (so the refusals above are the rights, not the address).
TEST_F(AccessReadOnlyHostTest, ReadsWorkAndWritesWorkAgainAfterReadWrite) {
  std::string out(kRowBytes, '\0');
  EXPECT_EQ(aclrtMemcpy(&out[0], kRowBytes, ro_, kRowBytes, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_EQ(out, old_ro_.substr(0, kRowBytes));
  EXPECT_EQ(aclrtMemcpy(dev_, kRowBytes, ro_, kRowBytes, ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  EXPECT_EQ(get(dev_, kRowBytes), old_ro_.substr(0, kRowBytes));
  expect_unchanged();

  ASSERT_EQ(set1(ro_, k2M, kRW, host()), kOk);
  EXPECT_EQ(copy_in(ro_, dev_, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_EQ(std::string(ro_, kRowBytes), old_ro_.substr(0, kRowBytes))
      << "dev_ held the READ mapping's bytes";
  EXPECT_EQ(copy_in(ro_, plain_.data(), ACL_MEMCPY_HOST_TO_HOST), kOk);
  EXPECT_EQ(std::string(ro_, kRowBytes), incoming_);
  EXPECT_EQ(copy_in_async(pinned_, ACL_MEMCPY_HOST_TO_HOST), kOk);
  EXPECT_EQ(aclrtMemset(ro_ + kRowBytes, kRowBytes, 0x5a, kRowBytes), kOk);
  EXPECT_TRUE(all_bytes(std::string(ro_ + kRowBytes, kRowBytes), 0x5a));
  EXPECT_EQ(std::string(ro_, kRowBytes), incoming_);
}

}  // namespace
}  // namespace aclvmm_test
