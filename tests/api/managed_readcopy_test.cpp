// READ_MOSTLY read copies and their invalidation (issue 4, emulation.md §6): a device read of a
// read-mostly page gives that device a read-only copy and leaves the page where it is; a write by
// anyone makes every other copy stale. A CPU write is caught with userfaultfd write-protection, so
// the next device read takes a new copy (a device fault and a page to the device again).
#include <sys/utsname.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

class ManagedReadCopyTest : public ManagedTest {
 protected:
  // A 4 MiB allocation with a pattern, page 0 advised READ_MOSTLY; skips without write tracking.
  char* read_mostly_page() {
    char* p = managed(4 * kMiB);
    if (!p) return nullptr;
    pat_ = pattern(4 * kMiB, 9);
    std::memcpy(p, pat_.data(), pat_.size());
    EXPECT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0), kOk);
    return p;
  }
  // Exactly one invalidation and nothing else happened since the last check.
  static void expect_invalidated(ManagedDelta& d, const char* what) {
    ManagedDelta::Expect e;
    e.invalidations = 1;
    d.expect(e, what);
  }
  std::string pat_;
};

#define REQUIRE_WRITE_TRACKING()                                                          \
  do {                                                                                    \
    if (!cpu_write_tracking()) GTEST_SKIP() << "no userfaultfd write-protection on shmem"; \
  } while (0)

bool kernel_at_least(int major, int minor) {
  struct utsname u;
  if (uname(&u) != 0) return false;
  int ma = 0, mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

// Write-protection of shmem arrived in Linux 5.19; where the kernel has it, it must be used (a
// silent fallback would turn every test below into a skip).
TEST_F(ManagedReadCopyTest, CpuWriteTrackingIsOnWhereTheKernelHasIt) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  if (!fault_tracking()) GTEST_SKIP() << "no CPU fault tracking here";
  if (!kernel_at_least(5, 19)) GTEST_SKIP() << "kernel older than 5.19";
  EXPECT_TRUE(cpu_write_tracking());
  EXPECT_EQ(aclrtFree(p), kOk);
}

TEST_F(ManagedReadCopyTest, CpuWriteInvalidatesTheDeviceCopy) {
  char* p = read_mostly_page();
  ASSERT_NE(p, nullptr);
  REQUIRE_WRITE_TRACKING();
  ManagedDelta d;
  EXPECT_EQ(get(p, k2M), pat_.substr(0, k2M));
  d.expect(0, 1, 1, 0, "device 0 takes a read copy");
  EXPECT_EQ(std::memcmp(p, pat_.data(), k2M), 0);
  d.expect(0, 0, 0, 0, "CPU reads do not disturb the copy");

  p[5] = 'x';
  pat_[5] = 'x';
  expect_invalidated(d, "the CPU write invalidates the copy");
  EXPECT_EQ(get(p, k2M), pat_.substr(0, k2M));
  d.expect(0, 1, 1, 0, "the next device read takes a new copy with the CPU's byte");

  p[6] = 'y';
  pat_[6] = 'y';
  expect_invalidated(d, "the new copy is protected again");
  p[7] = 'z';
  pat_[7] = 'z';
  d.expect(0, 0, 0, 0, "without copies a CPU write costs nothing");
  EXPECT_EQ(get(p, k2M), pat_.substr(0, k2M));
  d.expect(0, 1, 1, 0, "and the device reads the latest bytes");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// One write drops the copies of every device; page 1 (no advice) is untouched by it.
TEST_F(ManagedReadCopyTest, OneCpuWriteDropsTheCopiesOfEveryDevice) {
  char* p = read_mostly_page();
  ASSERT_NE(p, nullptr);
  REQUIRE_WRITE_TRACKING();
  ManagedDelta d;
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  d.expect(0, 2, 2, 0, "devices 0 and 1 take copies");

  std::memset(p + 100, 0x5a, 3000);  // many stores: one invalidation, not one per store
  std::memset(&pat_[100], 0x5a, 3000);
  expect_invalidated(d, "one write, one invalidation");
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  d.expect(0, 2, 2, 0, "both devices take new copies");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// UNSET_READ_MOSTLY drops the copies and the protection: CPU writes go through uncounted.
TEST_F(ManagedReadCopyTest, UnsetReadMostlyLiftsTheProtection) {
  char* p = read_mostly_page();
  ASSERT_NE(p, nullptr);
  REQUIRE_WRITE_TRACKING();
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_UNSET_READ_MOSTLY, kDev0), kOk);
  ManagedDelta d;
  p[0] = 'q';
  d.expect(0, 0, 0, 0, "no copies, no protection");
  EXPECT_EQ(p[0], 'q');
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A device write migrates a read-mostly page to the writer and makes the other copies stale;
// the CPU keeps reaching the page (read-mostly) and reads the device's bytes.
TEST_F(ManagedReadCopyTest, DeviceWriteMigratesThePageAndDropsTheCopies) {
  char* p = read_mostly_page();
  ASSERT_NE(p, nullptr);
  REQUIRE_WRITE_TRACKING();
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ManagedDelta d;
  put(p + 10, "DEVICE1");
  pat_.replace(10, 7, "DEVICE1");
  d.expect(0, 1, 1, 0, "the writer takes the page");
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(p, 4096), pat_.substr(0, 4096));
  d.expect(0, 1, 1, 0, "device 0's old copy was dropped: it takes a new one");
  EXPECT_EQ(std::memcmp(p, pat_.data(), k2M), 0);
  d.expect(0, 0, 0, 0, "the CPU reads the read-mostly page in place");
  p[0] = 'c';
  expect_invalidated(d, "a CPU write drops device 0's copy of the device-1-resident page");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// CPU threads writing while device reads take copies: every write lands, no thread stays
// blocked, and each device read sees a state some writer produced (bytes are never torn: each
// writer owns its own 8 bytes and writes them with one store).
TEST_F(ManagedReadCopyTest, ConcurrencyCpuWritersAndDeviceReaders) {
  char* p = read_mostly_page();
  ASSERT_NE(p, nullptr);
  REQUIRE_WRITE_TRACKING();
  constexpr int kWriters = 4;
  constexpr uint64_t kRounds = 200;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([p, w] {
      auto* slot = reinterpret_cast<volatile uint64_t*>(p + 4096 * w);
      for (uint64_t i = 1; i <= kRounds; ++i) {
        *slot = (uint64_t(w) << 32) | i;
        std::this_thread::yield();
      }
    });
  }
  std::thread reader([&] {
    aclrtSetDevice(0);
    while (!stop.load()) {
      for (int w = 0; w < kWriters; ++w) {
        uint64_t v = 0;
        if (aclrtMemcpy(&v, 8, p + 4096 * w, 8, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) continue;
        // Either the original pattern or a value this writer stored.
        std::string orig = pat_.substr(4096 * w, 8);
        uint64_t o = 0;
        std::memcpy(&o, orig.data(), 8);
        if (v != o && (v >> 32) != uint64_t(w)) ADD_FAILURE() << "torn value " << std::hex << v;
      }
    }
    aclrtResetDevice(0);
  });
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  for (int w = 0; w < kWriters; ++w) {
    uint64_t v = 0;
    std::memcpy(&v, p + 4096 * w, 8);
    EXPECT_EQ(v, (uint64_t(w) << 32) | kRounds);
    uint64_t dv = 0;
    ASSERT_EQ(aclrtMemcpy(&dv, 8, p + 4096 * w, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
    EXPECT_EQ(dv, v) << "the device reads the last write";
  }
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
