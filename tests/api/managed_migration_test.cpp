// Managed memory: migration between the host and devices, counted by the "managed" statistics
// (emulation.md §6, §8). A device operation on k pages that live elsewhere raises device_faults
// and bytes_to_device by k pages; a later CPU access to one of them faults it back (host_faults,
// bytes_to_host). The bytes are always the same single copy.
#include <cstring>
#include <string>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

class ManagedMigrationTest : public ManagedTest {};

// emulation.md §6, §8: "fault_tracking" reports whether CPU faults are tracked; on this machine
// (userfaultfd available) it is true once managed memory exists.
TEST_F(ManagedMigrationTest, FaultTrackingIsOnAfterAnAllocation) {
  const Json before = stats();
  const Json* v = before.path("managed.fault_tracking");
  ASSERT_TRUE(v && v->type == Json::kBool);
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(fault_tracking());
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A device memset of k pages → k device faults, k pages to the device; repeating it costs
// nothing; a CPU read of one of them → 1 host fault, 1 page to the host, the device's bytes.
TEST_F(ManagedMigrationTest, DeviceOpsFaultPagesInAndCpuReadsFaultThemBack) {
  char* p = managed(16 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  ManagedDelta d;
  // [1 MiB, 4 MiB) touches pages 0 and 1.
  ASSERT_EQ(aclrtMemset(p + kMiB, 3 * kMiB, 0x5a, 3 * kMiB), kOk);
  d.expect(0, 2, 2, 0, "memset of pages 0-1");
  ASSERT_EQ(aclrtMemset(p + kMiB, 3 * kMiB, 0x5b, 3 * kMiB), kOk);
  d.expect(0, 0, 0, 0, "pages 0-1 are already on device 0");
  // [6 MiB, 11 MiB) touches pages 3, 4 and 5.
  h2d(p + 6 * kMiB, pattern(5 * kMiB, 1));
  d.expect(0, 3, 3, 0, "H2D copy into pages 3-5");

  EXPECT_EQ(p[2 * kMiB + 5], 0x5b) << "CPU read of page 1";
  d.expect(1, 0, 0, 1, "the CPU read pulls page 1 back");
  EXPECT_TRUE(all_bytes(std::string(p + 2 * kMiB, 2 * kMiB), 0x5b));
  d.expect(0, 0, 0, 0, "page 1 is on the host now");
  EXPECT_EQ(p[0], 0) << "page 0 below the memset";
  EXPECT_EQ(p[kMiB], 0x5b);
  d.expect(1, 0, 0, 1, "page 0 comes back");
  EXPECT_EQ(std::string(p + 6 * kMiB, 5 * kMiB), pattern(5 * kMiB, 1));
  d.expect(3, 0, 0, 3, "pages 3-5 come back");
  EXPECT_TRUE(all_bytes(std::string(p + 14 * kMiB, 2 * kMiB), '\0'));
  d.expect(0, 0, 0, 0, "page 7 never left the host");
  EXPECT_EQ(aclrtFree(p), kOk);
}

// After the CPU pulled a page back and wrote it, a D2H copy (a device read) sees the CPU's bytes.
TEST_F(ManagedMigrationTest, CpuWritesAfterMigrationBackAreVisibleToD2HCopies) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  ManagedDelta d;
  ASSERT_EQ(aclrtMemset(p, 4 * kMiB, 0x11, 4 * kMiB), kOk);
  d.expect(0, 2, 2, 0, "memset of both pages");
  const std::string pat = pattern(k2M, 9);
  std::memcpy(p, pat.data(), k2M);  // a CPU write fault on page 0
  d.expect(1, 0, 0, 1, "CPU write to page 0");
  EXPECT_EQ(std::memcmp(p, pat.data(), k2M), 0);
  const std::string back = get(p, 4 * kMiB);
  d.expect(0, 1, 1, 0, "the D2H copy takes page 0 back; page 1 is still on the device");
  EXPECT_EQ(back.substr(0, k2M), pat);
  EXPECT_TRUE(all_bytes(back.substr(k2M), 0x11));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Device residency is charged to the executing device (emulation.md §6) and moves with the page:
// device 1 → device 0 is one more device fault; a CPU access or aclrtFree gives the charge back.
TEST_F(ManagedMigrationTest, ResidencyIsChargedToTheExecutingDevice) {
  char* p = managed(6 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  const long long used0 = device_used(stats(), 0), used1 = device_used(stats(), 1);
  ManagedDelta d;
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ASSERT_EQ(aclrtMemset(p, 6 * kMiB, 0x21, 6 * kMiB), kOk);
  d.expect(0, 3, 3, 0, "device 1 takes 3 pages");
  EXPECT_EQ(device_used(stats(), 1), used1 + static_cast<long long>(6 * kMiB));
  EXPECT_EQ(device_used(stats(), 0), used0);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  ASSERT_EQ(aclrtMemset(p, k2M, 0x22, k2M), kOk);
  d.expect(0, 1, 1, 0, "device 0 takes page 0 from device 1");
  EXPECT_EQ(device_used(stats(), 1), used1 + static_cast<long long>(4 * kMiB));
  EXPECT_EQ(device_used(stats(), 0), used0 + static_cast<long long>(k2M));
  EXPECT_EQ(p[2 * kMiB], 0x21);
  d.expect(1, 0, 0, 1, "the CPU takes page 1 from device 1");
  EXPECT_EQ(device_used(stats(), 1), used1 + static_cast<long long>(k2M));
  EXPECT_EQ(p[0], 0x22);
  EXPECT_EQ(p[4 * kMiB], 0x21);
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(device_used(stats(), 0), used0);
  EXPECT_EQ(device_used(stats(), 1), used1);
}

// A zero memset on the device (which may free the backing pages) still leaves the pages on the
// device: the CPU's next access faults them back and reads zeros; the same for a partial one.
TEST_F(ManagedMigrationTest, ZeroMemsetOnTheDeviceThenCpuAccess) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  std::memset(p, 0x7f, 4 * kMiB);
  ManagedDelta d;
  ASSERT_EQ(aclrtMemset(p, 4 * kMiB, 0, 4 * kMiB), kOk);
  d.expect(0, 2, 2, 0, "zero memset of both pages");
  EXPECT_TRUE(all_bytes(std::string(p, k2M), '\0'));
  d.expect(1, 0, 0, 1, "page 0 faults back");
  ASSERT_EQ(aclrtMemset(p + 4096, 8192, 0, 8192), kOk);
  d.expect(0, 1, 1, 0, "a partial zero memset of page 0");
  EXPECT_EQ(p[4096 + 8191], 0);
  d.expect(1, 0, 0, 1, "page 0 faults back again");
  p[k2M + 5] = 1;  // page 1: a CPU write fault
  d.expect(1, 0, 0, 1, "page 1 faults back on a write");
  EXPECT_EQ(get(p + k2M, 8), std::string("\0\0\0\0\0\x01\0\0", 8));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A D2D copy between two managed ranges: both sides are device accesses.
TEST_F(ManagedMigrationTest, CopyBetweenManagedRangesMigratesBothSides) {
  char* a = managed(4 * kMiB);
  char* b = managed(4 * kMiB);
  ASSERT_TRUE(a && b);
  REQUIRE_MANAGED_TRACKING();
  const std::string pat = pattern(4 * kMiB, 5);
  std::memcpy(a, pat.data(), pat.size());
  ManagedDelta d;
  ASSERT_EQ(aclrtMemcpy(b, 4 * kMiB, a, 4 * kMiB, ACL_MEMCPY_DEVICE_TO_DEVICE), kOk);
  d.expect(0, 4, 4, 0, "2 source + 2 destination pages");
  EXPECT_EQ(std::memcmp(b, pat.data(), pat.size()), 0);
  d.expect(2, 0, 0, 2, "the CPU reads b back");
  EXPECT_EQ(aclrtFree(a), kOk);
  EXPECT_EQ(aclrtFree(b), kOk);
}

struct FillArgs {
  char* dst;
  size_t n;
  char value;
  aclError rc;
};
void fill_kernel(aclvmmKernelContext* ctx, void* raw) {
  auto* a = static_cast<FillArgs*>(raw);
  std::string buf(a->n, a->value);
  a->rc = aclvmmKernelWrite(ctx, a->dst, buf.data(), a->n);
}

// Emulated kernels reach managed memory like copies do: the pages migrate to the stream's device.
TEST_F(ManagedMigrationTest, EmulatedKernelWritesMigrateAndTheCpuSeesThem) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  ManagedDelta d;
  FillArgs args{p + k2M - 10, 20, 0x42, -1};
  ASSERT_EQ(aclvmmLaunchKernel(s, fill_kernel, &args), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(args.rc, kOk);
  d.expect(0, 2, 2, 0, "20 bytes across the page boundary");
  EXPECT_EQ(std::string(p + k2M - 11, 22), std::string(1, '\0') + std::string(20, 0x42) + std::string(1, '\0'));
  d.expect(2, 0, 0, 2, "both pages come back");
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Many alternations over 16 MiB: the device writes a pattern, the CPU checks it and writes
// another, the device reads that back; byte-exact every time, with exact fault counts.
TEST_F(ManagedMigrationTest, ByteExactAcrossManyAlternations) {
  constexpr size_t kSize = 16 * kMiB;
  constexpr long long kPages = kSize / k2M;
  char* p = managed(kSize);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  ManagedDelta d;
  for (unsigned round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string from_device = pattern(kSize, 2 * round + 100);
    const std::string from_cpu = pattern(kSize, 2 * round + 101);
    h2d(p, from_device);
    // Round 0 starts on the host; later rounds start where the last round left the pages: on
    // the device, except page 3, which the CPU took back.
    const long long faults = round == 0 ? kPages : 1;
    d.expect(0, faults, faults, 0, "device write");
    ASSERT_EQ(std::memcmp(p, from_device.data(), kSize), 0) << "the CPU sees the device's bytes";
    d.expect(kPages, 0, 0, kPages, "CPU check");
    std::memcpy(p, from_cpu.data(), kSize);
    d.expect(0, 0, 0, 0, "CPU write (pages are on the host)");
    ASSERT_EQ(get(p, kSize), from_cpu) << "the device sees the CPU's bytes";
    d.expect(0, kPages, kPages, 0, "device read");
    // A partial device write in the middle of one page, checked byte by byte by the CPU.
    const size_t off = 3 * k2M + 1000 + round;
    ASSERT_EQ(aclrtMemset(p + off, 100, static_cast<int32_t>(round + 1), 100), kOk);
    d.expect(0, 0, 0, 0, "page 3 is on the device");
    EXPECT_EQ(p[off - 1], from_cpu[off - 1]);
    EXPECT_EQ(p[off], static_cast<char>(round + 1));
    EXPECT_EQ(p[off + 99], static_cast<char>(round + 1));
    EXPECT_EQ(p[off + 100], from_cpu[off + 100]);
    d.expect(1, 0, 0, 1, "page 3 comes back");
    std::memcpy(p + off, from_cpu.data() + off, 100);
  }
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
