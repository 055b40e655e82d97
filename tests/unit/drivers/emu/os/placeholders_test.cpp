// Tests of emu's placeholder windows and the CPU views inside them (os/placeholders.h),
// against the real kernel: bytes, return codes, faults.
#include <gtest/gtest.h>

#include "unit/testing/emu_os_fixture.h"

namespace aclvmm::dev::emu::os {
namespace {

using namespace fixture;  // NOLINT: EmuDriver and its helpers

TEST_F(EmuDriver, ClaimWindowAtFreeAddress) {
  const uint64_t size = 256 * kMiB;
  const uint64_t want = free_range(size, 2 * kMiB);
  ASSERT_NE(want, 0u);
  uint64_t base = 0;
  ASSERT_EQ(claim_window(want, size, 2 * kMiB, &base), 0);
  EXPECT_EQ(base, want);
  EXPECT_EQ(claim_fixed(base, size), -EEXIST) << "the window is reserved";
  EXPECT_EQ(release_window(base, size), 0);
  EXPECT_EQ(claim_fixed(base, size), 0) << "released address space is free again";
  EXPECT_EQ(release_window(base, size), 0);
}

TEST_F(EmuDriver, ClaimWindowOnOccupiedAddressRelocatesAligned) {
  const uint64_t size = 64 * kMiB;
  const uint64_t first = window(size);
  for (uint64_t align : {page(), 2 * kMiB, kGiB}) {
    uint64_t base = 0;
    ASSERT_EQ(claim_window(first, size, align, &base), 0) << align;
    EXPECT_NE(base, first);
    EXPECT_EQ(base % align, 0u) << align;
    EXPECT_TRUE(base + size <= first || base >= first + size) << "no overlap";
    EXPECT_EQ(claim_fixed(base, size), -EEXIST);
    // Trimmed to exactly `size`: the page on either side was given back (or belongs to another
    // mapping); the window's own edges stay reserved.
    EXPECT_EQ(claim_fixed(base + size - page(), page()), -EEXIST);
    EXPECT_EQ(release_window(base, size), 0);
  }
  uint64_t base = 0;
  EXPECT_EQ(claim_window(0, 0, 0, &base), -EINVAL);
  EXPECT_EQ(claim_window(0, size, 3 * page(), &base), -EINVAL);
  EXPECT_EQ(claim_window(0, size + 1, 0, &base), -EINVAL);
}

// The vendor windows (emulation.md section 3): claimed in place on a plain process, moved (aligned,
// still reserved) where a sanitizer's shadow memory lives.
TEST_F(EmuDriver, ClaimVendorWindows) {
  const struct {
    uint64_t addr, size;
  } vendor[] = {{0x70000000000ull, 1ull << 40}, {0x100000000000ull, 8ull << 40}};
  for (const auto& v : vendor) {
    uint64_t base = 0;
    int rc = claim_window(v.addr, v.size, kGiB, &base);
#if defined(__SANITIZE_THREAD__)
    // TSan confines the application to a few TiB of its own ranges: no room for 8 TiB.
    if (rc == -ENOMEM && v.size > (1ull << 40)) continue;
#endif
    ASSERT_EQ(rc, 0) << std::hex << v.addr;
    EXPECT_EQ(base % kGiB, 0u);
    EXPECT_EQ(claim_fixed(base, page()), -EEXIST);
    EXPECT_EQ(claim_fixed(base + v.size - page(), page()), -EEXIST);
    EXPECT_EQ(release_window(base, v.size), 0);
  }
}

TEST_F(EmuDriver, ClaimFixedOnOccupiedIsEexist) {
  const uint64_t size = 16 * kMiB;
  const uint64_t w = window(size);
  EXPECT_EQ(claim_fixed(w, size), -EEXIST);
  EXPECT_EQ(claim_fixed(w + size - page(), 2 * page()), -EEXIST) << "partial overlap";
  EXPECT_EQ(claim_fixed(w + 1, page()), -EINVAL);
  // Ordinary process memory counts as occupied too.
  std::vector<uint8_t> heap(4 * page());
  uint64_t inside = (reinterpret_cast<uintptr_t>(heap.data()) + page() - 1) & ~(page() - 1);
  EXPECT_EQ(claim_fixed(inside, page()), -EEXIST);
}

TEST_F(EmuDriver, MapCpuReadWriteSharesBothWays) {
  const uint64_t size = 2 * kMiB;
  auto mem = alloc(size);
  const uint64_t w = window(size);
  ASSERT_EQ(map_cpu(w, size, *mem, 0, CpuAccess::kReadWrite), 0);
  const char msg[] = "written by write()";
  ASSERT_EQ(mem->write(page() + 3, msg, sizeof msg), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(ptr(w + page() + 3)), msg);
  std::memcpy(ptr(w + size - 4), "cpu", 4);
  char got[4] = {};
  ASSERT_EQ(mem->read(size - 4, got, 4), 0);
  EXPECT_STREQ(got, "cpu");
  // Punched pages disappear from the mapping too.
  ASSERT_EQ(mem->fill(0, 0, size), 0);
  EXPECT_EQ(ptr(w + page() + 3)[0], 0);
  EXPECT_EQ(ptr(w + size - 4)[0], 0);
  EXPECT_EQ(unmap_cpu(w, size), 0);
}

TEST_F(EmuDriver, MapCpuAtOffsetAndValidation) {
  auto mem = alloc(4 * page() + 10);  // the partial last page is mappable
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(mem->fill(2 * page(), 0x42, 2 * page() + 10), 0);
  ASSERT_EQ(map_cpu(w, 3 * page(), *mem, 2 * page(), CpuAccess::kRead), 0);
  EXPECT_EQ(ptr(w)[0], 0x42);
  EXPECT_EQ(ptr(w + 2 * page())[9], 0x42);
  EXPECT_EQ(ptr(w + 2 * page())[10], 0);
  EXPECT_EQ(map_cpu(w + 1, page(), *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(map_cpu(w, page() + 1, *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(map_cpu(w, page(), *mem, 1, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(map_cpu(w, 6 * page(), *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(map_cpu(w, page(), *mem, 5 * page(), CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(map_cpu(w, page(), *mem, 0, static_cast<CpuAccess>(2)), -EINVAL);
  EXPECT_EQ(unmap_cpu(w, 0), -EINVAL);
  EXPECT_EQ(unmap_cpu(w + 1, page()), -EINVAL);
}

TEST_F(EmuDriver, MapCpuReadOnlyWriteFaults) {
  auto mem = alloc(kMiB);
  ASSERT_EQ(mem->fill(0, 0x77, kMiB), 0);
  const uint64_t w = window(kMiB);
  ASSERT_EQ(map_cpu(w, kMiB, *mem, 0, CpuAccess::kRead), 0);
  EXPECT_EQ(ptr(w)[kMiB - 1], 0x77);
  EXPECT_EQ(child_signal([&] { *reinterpret_cast<volatile uint8_t*>(ptr(w)) = 1; }), SIGSEGV);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), 0);
  EXPECT_EQ(host_fill(ptr(w), 1, 16), -EFAULT);
  uint8_t b = 0;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 0x77);
}

TEST_F(EmuDriver, UnmapCpuRestoresPlaceholder) {
  auto mem = alloc(kMiB);
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(map_cpu(w, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ptr(w)[0] = 9;
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), 0);
  ASSERT_EQ(unmap_cpu(w, kMiB), 0);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), SIGSEGV);
  EXPECT_EQ(claim_fixed(w, kMiB), -EEXIST) << "still reserved";
  uint8_t b = 0;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 9) << "unmapping keeps the physical bytes";

  // kNone behaves like unmap_cpu.
  ASSERT_EQ(map_cpu(w, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ASSERT_EQ(map_cpu(w, kMiB, *mem, 0, CpuAccess::kNone), 0);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), SIGSEGV);
  EXPECT_EQ(claim_fixed(w, kMiB), -EEXIST);
}

TEST_F(EmuDriver, TwoMappingsShareBytes) {
  auto mem = alloc(kMiB);
  const uint64_t a = window(2 * kMiB);
  const uint64_t b = window(2 * kMiB);
  ASSERT_EQ(map_cpu(a, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ASSERT_EQ(map_cpu(b + kMiB, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ptr(a)[100] = 0x31;
  EXPECT_EQ(ptr(b + kMiB)[100], 0x31);
  ptr(b + kMiB)[kMiB - 1] = 0x32;
  EXPECT_EQ(ptr(a)[kMiB - 1], 0x32);
  // The mappings keep the memory alive after the handle goes away.
  mem.reset();
  EXPECT_EQ(ptr(a)[100], 0x31);
  EXPECT_EQ(unmap_cpu(a, kMiB), 0);
  EXPECT_EQ(unmap_cpu(b + kMiB, kMiB), 0);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
