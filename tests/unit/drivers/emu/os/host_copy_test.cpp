// Tests of emu's guarded CPU copies and fills of process memory (os/host_copy.h), and the host facts beside them,
// against the real kernel: bytes, return codes, faults.
#include <gtest/gtest.h>

#include "unit/testing/emu_os_fixture.h"

namespace aclvmm::dev::emu::os {
namespace {

using namespace fixture;  // NOLINT: EmuDriver and its helpers

TEST_F(EmuDriver, HostCopyAndFill) {
  std::vector<uint8_t> src(3 * kMiB + 17), dst(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i ^ (i >> 8));
  ASSERT_EQ(host_copy(dst.data(), src.data(), src.size()), 0);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(host_copy(dst.data(), src.data(), 0), 0);
  EXPECT_EQ(host_copy(kBadPtr, kBadPtr, 0), 0);

  EXPECT_EQ(host_copy(dst.data(), kBadPtr, 64), -EFAULT);
  EXPECT_EQ(host_copy(kBadPtr, src.data(), 64), -EFAULT);
  EXPECT_EQ(host_copy(nullptr, src.data(), 1), -EFAULT);
  const uint64_t w = window(2 * kMiB);
  EXPECT_EQ(host_copy(ptr(w), src.data(), 64), -EFAULT);
  EXPECT_EQ(host_copy(dst.data(), ptr(w), 64), -EFAULT);

  ASSERT_EQ(host_fill(dst.data() + 1, 0xAB, dst.size() - 2), 0);
  EXPECT_EQ(dst.front(), src.front());
  EXPECT_EQ(dst.back(), src.back());
  EXPECT_EQ(std::count(dst.begin() + 1, dst.end() - 1, 0xAB), static_cast<long>(dst.size() - 2));
  ASSERT_EQ(host_fill(dst.data(), 0, 10), 0);
  EXPECT_EQ(std::count(dst.begin(), dst.begin() + 10, 0), 10);
  EXPECT_EQ(dst[10], 0xAB);
  EXPECT_EQ(host_fill(kBadPtr, 1, 64), -EFAULT);
  EXPECT_EQ(host_fill(nullptr, 1, 64), -EFAULT);
  EXPECT_EQ(host_fill(ptr(w), 1, 64), -EFAULT);
  EXPECT_EQ(host_fill(kBadPtr, 1, 0), 0);
}

TEST_F(EmuDriver, HostFacts) {
  const uint64_t total = dev::host::memory_total();
  const uint64_t avail = dev::host::memory_free();
  EXPECT_GT(total, 0u);
  EXPECT_GT(avail, 0u);
  EXPECT_LE(avail, total);
  EXPECT_EQ(static_cast<size_t>(page_size()), static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_GE(dev::host::numa_node_count(), 0);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
