// HOST_NUMA locations of managed memory are placed with the NUMA policy of the page's host copy
// (issue 4, scope 3): a prefetch to a node moves the page there, PREFERRED_LOCATION on a node
// binds the page to it and UNSET restores the default policy. Checked with get_mempolicy on the
// page itself, as any NUMA-aware application would.
#include <numa.h>
#include <numaif.h>

#include <cstring>

#include "api/managed_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {

struct Policy {
  int mode = -1;
  unsigned long nodes = 0;  // nodes 0..63
};
Policy policy_at(const void* p) {
  Policy out;
  unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};
  if (get_mempolicy(&out.mode, mask, 1024, const_cast<void*>(p), MPOL_F_ADDR) != 0) out.mode = -1;
  out.nodes = mask[0];
  return out;
}
int node_of(const void* p) {
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, const_cast<void*>(p), MPOL_F_NODE | MPOL_F_ADDR) != 0) {
    return -1;
  }
  return node;
}

class ManagedNumaTest : public ManagedTest {
 protected:
  void SetUp() override {
    if (numa_available() < 0) GTEST_SKIP() << "no NUMA on this machine";
    ManagedTest::SetUp();
  }
  aclError prefetch(const void* p, size_t n, aclrtMemManagedLocation where) {
    aclError rc = aclrtMemManagedPrefetchAsync(p, n, where, 0, nullptr);
    if (rc != kOk) return rc;
    return aclrtSynchronizeStream(nullptr);
  }
  // The highest node: on a one-node machine node 0, still a real binding to check.
  int last_node() const { return numa_max_node(); }
};

TEST_F(ManagedNumaTest, PrefetchToANodeBindsAndPlacesThePage) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const int node = last_node();
  std::memset(p, 0x11, 4 * kMiB);
  EXPECT_EQ(policy_at(p).mode, MPOL_DEFAULT) << "fresh managed memory has no binding";
  ASSERT_EQ(prefetch(p, k2M, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, node)), kOk);
  const Policy pol = policy_at(p + 4096);
  EXPECT_EQ(pol.mode, MPOL_BIND);
  EXPECT_EQ(pol.nodes, 1ul << node);
  EXPECT_EQ(node_of(p + 4096), node);
  EXPECT_EQ(policy_at(p + k2M).mode, MPOL_DEFAULT) << "page 1 was not prefetched";
  EXPECT_EQ(static_cast<unsigned char>(p[123]), 0x11) << "placement keeps the bytes";
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A page on a device comes back to the host and lands on the node.
TEST_F(ManagedNumaTest, PrefetchFromADeviceToANode) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  const int node = last_node();
  std::memset(p, 0x22, k2M);
  ASSERT_EQ(prefetch(p, k2M, kDev0), kOk);
  ManagedDelta d;
  ASSERT_EQ(prefetch(p, k2M, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, node)), kOk);
  ManagedDelta::Expect back;
  back.to_host = 1;
  back.prefetch = 1;
  d.expect(back, "the prefetch brings the page back");
  EXPECT_EQ(policy_at(p).mode, MPOL_BIND);
  EXPECT_EQ(node_of(p + 8192), node);
  EXPECT_EQ(static_cast<unsigned char>(p[k2M - 1]), 0x22);
  d.expect(0, 0, 0, 0, "the CPU reads it without a fault");
  EXPECT_EQ(aclrtFree(p), kOk);
}

TEST_F(ManagedNumaTest, HostNumaCurrentUsesTheCallingThreadsNode) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  p[0] = 1;
  ASSERT_EQ(prefetch(p, k2M, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT, 0)), kOk);
  const Policy pol = policy_at(p);
  EXPECT_EQ(pol.mode, MPOL_BIND);
  EXPECT_NE(pol.nodes, 0ul);
  EXPECT_EQ(aclrtFree(p), kOk);
}

TEST_F(ManagedNumaTest, PreferredNodeBindsAndUnsetRestoresTheDefault) {
  char* p = managed(4 * kMiB);
  ASSERT_NE(p, nullptr);
  const int node = last_node();
  p[0] = 1;
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
                   mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, node)),
            kOk);
  for (size_t off : {size_t{0}, k2M + 4096}) {
    SCOPED_TRACE(off);
    const Policy pol = policy_at(p + off);
    EXPECT_EQ(pol.mode, MPOL_BIND);
    EXPECT_EQ(pol.nodes, 1ul << node);
  }
  p[k2M + 5] = 2;  // faulted in after the advice: placed by the policy
  EXPECT_EQ(node_of(p + k2M), node);
  ASSERT_EQ(advise(p, 4 * kMiB, ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION, kHost), kOk);
  EXPECT_EQ(policy_at(p).mode, MPOL_DEFAULT);
  EXPECT_EQ(policy_at(p + k2M).mode, MPOL_DEFAULT);
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[k2M + 5], 2);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Preferring the plain host or a device leaves the NUMA policy alone.
TEST_F(ManagedNumaTest, OtherPreferredLocationsDoNotBind) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  p[0] = 1;
  for (const aclrtMemManagedLocation& where : {kHost, kDev0}) {
    ASSERT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, where), kOk);
    EXPECT_EQ(policy_at(p).mode, MPOL_DEFAULT);
  }
  EXPECT_EQ(aclrtFree(p), kOk);
}

// A node the machine does not have is rejected up front (behavior.md §10: the driver's EINVAL).
TEST_F(ManagedNumaTest, MissingNodeIsRejected) {
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  const aclrtMemManagedLocation missing = mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, numa_max_node() + 1);
  EXPECT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, missing), kDrv);
  EXPECT_EQ(policy_at(p).mode, MPOL_DEFAULT) << "nothing changed";
  EXPECT_EQ(aclrtFree(p), kOk);
}

// ACLVMM_HOST_NUMA=off emulates a host without NUMA: node 0 is still a valid location (the one
// place there is), nothing is bound, and node 1 does not exist.
TEST_F(ManagedNumaTest, HostWithoutNumaPlacesNothing) {
  ScopedEnvRuntime env("ACLVMM_HOST_NUMA", "off");
  ASSERT_TRUE(env.ok());
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  p[0] = 1;
  EXPECT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0)),
            kOk);
  ASSERT_EQ(prefetch(p, k2M, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 0)), kOk);
  EXPECT_EQ(policy_at(p).mode, MPOL_DEFAULT);
  EXPECT_EQ(advise(p, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 1)),
            kDrv);
  EXPECT_EQ(aclrtFree(p), kOk);
}

}  // namespace
}  // namespace aclvmm_test
