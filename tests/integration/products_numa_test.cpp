// Host physical memory and NUMA (behavior.md §1, products.md "ACL_DDR_MEM_* are host-only"):
// HOST_NUMA memory is placed on the node in location.id, as the kernel reports it for the pages
// the CPU touched (get_mempolicy, move_pages); HOST memory gets no binding; the node and location
// errors; ACLVMM_HOST_NUMA=off emulates a host without NUMA (207000).
#include <numa.h>
#include <numaif.h>

#include <thread>

#include "api/test_env.h"
#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;

constexpr unsigned long kMaskBits = 1024;  // at least the kernel's MAX_NUMNODES
constexpr size_t kWords = kMaskBits / (8 * sizeof(unsigned long));

bool machine_has_numa() { return numa_available() >= 0; }

aclrtPhysicalMemProp numa_prop(aclrtMemAttr attr, uint32_t node) {
  return with_location(host_prop(attr), ACL_MEM_LOCATION_TYPE_HOST_NUMA, node);
}

aclError malloc_physical(const aclrtPhysicalMemProp& p, aclrtDrvMemHandle* h, size_t size = 4 * kMiB) {
  *h = nullptr;
  return aclrtMallocPhysical(h, size, &p, 0);
}

// The policy governing `addr` (MPOL_F_ADDR) and its node mask; mode -1 when the query fails.
struct Policy {
  int mode = -1;
  unsigned long mask[kWords] = {};
};
Policy policy_at(void* addr) {
  Policy p;
  if (get_mempolicy(&p.mode, p.mask, kMaskBits, addr, MPOL_F_ADDR) != 0) p.mode = -1;
  return p;
}
// The node of the page at `addr` (MPOL_F_NODE | MPOL_F_ADDR), -1 when the query fails.
int node_of_page(void* addr) {
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, addr, MPOL_F_NODE | MPOL_F_ADDR) != 0) return -1;
  return node;
}
// move_pages(2) without a target: the node of each page, or a negative errno per page.
std::vector<int> page_nodes(void* base, size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<void*> pages;
  for (size_t off = 0; off < size; off += page) pages.push_back(at(base, off));
  std::vector<int> status(pages.size(), -1);
  if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) return {};
  return status;
}

// Runs `fn` on a thread that has no current context.
aclError without_context(const std::function<aclError()>& fn) {
  aclError rc = -1;
  std::thread t([&] { rc = fn(); });
  t.join();
  return rc;
}

using HostNuma = AclTest;

// HOST_NUMA node 0 with every host attribute: the CPU mapping is bound to node 0 (MPOL_BIND),
// every touched page is on node 0, and the bytes are those of the physical memory.
TEST_F(HostNuma, NodeZeroMemoryIsBoundToNodeZero) {
  const aclrtMemAttr attrs[] = {ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL, ACL_DDR_MEM_P2P_HUGE,
                                ACL_DDR_MEM_P2P_NORMAL, ACL_MEM_HUGE, ACL_MEM_P2P_HUGE};
  for (aclrtMemAttr attr : attrs) {
    SCOPED_TRACE(attr);
    aclrtDrvMemHandle h = nullptr;
    const aclError rc = malloc_physical(numa_prop(attr, 0), &h);
    if (!machine_has_numa()) {
      EXPECT_EQ(rc, kNotSupported);
      continue;
    }
    ASSERT_EQ(rc, kOk);
    aclrtPhysicalMemProp prop{};
    ASSERT_EQ(aclrtMemGetAllocationPropertiesFromHandle(h, &prop), kOk);
    EXPECT_EQ(prop.location.type, ACL_MEM_LOCATION_TYPE_HOST_NUMA);
    EXPECT_EQ(prop.location.id, 0u);
    void* va = reserve(4 * kMiB);
    ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
    const std::string bytes = pattern(4 * kMiB, 31);
    std::memcpy(va, bytes.data(), bytes.size());  // the CPU touches every page

    const Policy p = policy_at(va);
    EXPECT_EQ(p.mode, MPOL_BIND);
    EXPECT_EQ(p.mask[0], 1ul) << "bound to node 0 only";
    for (size_t off : {size_t(0), 2 * kMiB + 4096, 4 * kMiB - 1}) EXPECT_EQ(node_of_page(at(va, off)), 0) << off;
    const std::vector<int> nodes = page_nodes(va, 4 * kMiB);
    ASSERT_EQ(nodes.size(), 4 * kMiB / static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    for (size_t i = 0; i < nodes.size(); ++i) ASSERT_EQ(nodes[i], 0) << "page " << i;

    EXPECT_EQ(get(va, bytes.size()), bytes);  // the device path sees the CPU's bytes
    aclrtPtrAttributes pa{};
    ASSERT_EQ(aclrtPointerGetAttributes(va, &pa), kOk);
    EXPECT_EQ(pa.location.type, ACL_MEM_LOCATION_TYPE_HOST);
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
}

// HOST memory has no node: its mapping follows the process's own policy, not a binding.
TEST_F(HostNuma, HostMemoryIsNotBound) {
  int task_mode = -1;
  unsigned long task_mask[kWords] = {};
  ASSERT_EQ(get_mempolicy(&task_mode, task_mask, kMaskBits, nullptr, 0), 0);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(malloc_physical(host_prop(ACL_DDR_MEM_HUGE), &h), kOk);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
  std::memset(va, 0x33, 4 * kMiB);
  EXPECT_EQ(policy_at(va).mode, task_mode);
  if (machine_has_numa()) {
    const std::vector<int> nodes = page_nodes(va, 4 * kMiB);
    ASSERT_FALSE(nodes.empty());
    for (int n : nodes) ASSERT_GE(n, 0);
  }
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// §1: HOST takes id 0 only (1..63 → 207000, ≥ 64 → 107000); a HOST_NUMA node the host does
// not have → 107000 (ids ≥ 64 by the driver's check, the others as the emulator's choice);
// HOST_NUMA needs a current context (107002); DDR attributes are host-only (100000).
TEST_F(HostNuma, LocationErrors) {
  const uint32_t missing = machine_has_numa() ? static_cast<uint32_t>(numa_max_node() + 1) : 1;
  const aclError numa_missing = machine_has_numa() ? kRtParam : kNotSupported;
  struct Case {
    const char* name;
    aclrtPhysicalMemProp prop;
    aclError expected;
  } cases[] = {
      {"HOST_NUMA, first node the host lacks", numa_prop(ACL_DDR_MEM_HUGE, missing), numa_missing},
      {"HOST_NUMA node 63", numa_prop(ACL_DDR_MEM_HUGE, 63), numa_missing},
      {"HOST_NUMA node 64", numa_prop(ACL_DDR_MEM_HUGE, 64), numa_missing},
      {"HOST_NUMA node 0xffffffff", numa_prop(ACL_DDR_MEM_HUGE, 0xffffffffu), numa_missing},
      {"HOST id 1", with_location(host_prop(ACL_DDR_MEM_HUGE), ACL_MEM_LOCATION_TYPE_HOST, 1), kNotSupported},
      {"HOST id 63", with_location(host_prop(ACL_DDR_MEM_HUGE), ACL_MEM_LOCATION_TYPE_HOST, 63), kNotSupported},
      {"HOST id 64", with_location(host_prop(ACL_DDR_MEM_HUGE), ACL_MEM_LOCATION_TYPE_HOST, 64), kRtParam},
      {"DEVICE with ACL_DDR_MEM_HUGE", device_prop(0, ACL_DDR_MEM_HUGE), kParam},
      {"DEVICE with ACL_DDR_MEM_P2P_NORMAL", device_prop(0, ACL_DDR_MEM_P2P_NORMAL), kParam},
      {"HOST_NUMA with ACL_HBM_MEM (not in the table)", numa_prop(ACL_HBM_MEM, 0), kParam},
  };
  const LiveCounts live = live_counts();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(malloc_physical(c.prop, &h), c.expected);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(live_counts(), live);
  }
  const aclrtPhysicalMemProp p = numa_prop(ACL_DDR_MEM_HUGE, 0);
  EXPECT_EQ(without_context([&] {
              aclrtDrvMemHandle h = nullptr;
              return malloc_physical(p, &h);
            }),
            kNoContext);
  // HOST needs no context.
  aclrtDrvMemHandle h = nullptr;
  EXPECT_EQ(without_context([&] { return malloc_physical(host_prop(ACL_DDR_MEM_HUGE), &h); }), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// ACLVMM_HOST_NUMA=off: HOST_NUMA → 207000 after the context check; HOST memory and the
// granularity query are unaffected; switching back restores HOST_NUMA.
TEST_F(HostNuma, OffEmulatesAHostWithoutNuma) {
  const aclrtPhysicalMemProp p = numa_prop(ACL_DDR_MEM_HUGE, 0);
  {
    ScopedEnvRuntime env("ACLVMM_HOST_NUMA", "off");
    ASSERT_TRUE(env.ok());
    (void)recent_msg();
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(malloc_physical(p, &h), kNotSupported);
    EXPECT_EQ(h, nullptr);
    EXPECT_NE(recent_msg().find("ACLVMM_HOST_NUMA"), std::string::npos);
    EXPECT_EQ(malloc_physical(numa_prop(ACL_DDR_MEM_HUGE, 64), &h), kNotSupported);
    EXPECT_EQ(without_context([&] {
                aclrtDrvMemHandle x = nullptr;
                return malloc_physical(p, &x);
              }),
              kNoContext);
    EXPECT_EQ(live_count("physical_handles"), 0);
    aclrtPhysicalMemProp g = p;
    size_t granularity = 0;
    EXPECT_EQ(aclrtMemGetAllocationGranularity(&g, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &granularity), kOk);
    EXPECT_EQ(granularity, k2M);
    ASSERT_EQ(malloc_physical(host_prop(ACL_DDR_MEM_HUGE), &h), kOk);
    void* va = reserve(4 * kMiB);
    ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), kOk);
    std::memset(va, 0x44, 4096);
    EXPECT_EQ(get(va, 4096), std::string(4096, '\x44'));
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
  aclrtDrvMemHandle h = nullptr;
  EXPECT_EQ(malloc_physical(p, &h), machine_has_numa() ? kOk : kNotSupported);
  if (h) {
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
  }
}

// configuration.md: a malformed value fails the start with a message naming the accepted values.
TEST(HostNumaConfig, MalformedValueFailsAclInit) {
  ScopedEnv env("ACLVMM_HOST_NUMA", "no");
  EXPECT_EQ(aclInit(nullptr), kParam);
  const std::string msg = recent_msg();
  EXPECT_NE(msg.find("ACLVMM_HOST_NUMA=\"no\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("on, off"), std::string::npos) << msg;
  env.restore();
  ASSERT_EQ(aclInit(nullptr), kOk);
  EXPECT_EQ(aclFinalize(), kOk);
}

}  // namespace
