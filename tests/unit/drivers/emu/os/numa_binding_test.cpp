// Tests of emu's NUMA binding of a CPU view (os/numa_binding.h),
// against the real kernel: bytes, return codes, faults.
#include <gtest/gtest.h>

#include "unit/testing/emu_os_fixture.h"

namespace aclvmm::dev::emu::os {
namespace {

using namespace fixture;  // NOLINT: EmuDriver and its helpers

TEST_F(EmuDriver, BindNuma) {
  auto mem = alloc(2 * kMiB);
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(map_cpu(w, 2 * kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  if (dev::host::numa_node_count() == 0) {
    EXPECT_EQ(bind_numa(w, 2 * kMiB, 0), -EOPNOTSUPP);
    return;
  }
  EXPECT_EQ(bind_numa(w, 2 * kMiB, 0), 0);
  ptr(w)[0] = 1;  // faults a page in under the policy
  int mode = -1;
  ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, ptr(w), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_BIND);
  int node = -1;
  ASSERT_EQ(get_mempolicy(&node, nullptr, 0, ptr(w), MPOL_F_NODE | MPOL_F_ADDR), 0);
  EXPECT_EQ(node, 0);
  EXPECT_EQ(bind_numa(w, 2 * kMiB, 100000), -EINVAL);
  EXPECT_EQ(bind_numa(w, 2 * kMiB, -2), -EINVAL);
  EXPECT_EQ(bind_numa(w + 1, page(), 0), -EINVAL);
  // -1 restores the default policy.
  EXPECT_EQ(bind_numa(w, 2 * kMiB, -1), 0);
  ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, ptr(w), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_DEFAULT);
  EXPECT_EQ(ptr(w)[0], 1);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
