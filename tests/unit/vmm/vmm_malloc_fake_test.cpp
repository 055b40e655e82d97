// vmm::Vmm's aclrtMalloc and aclrtMallocHost (src/vmm/vmm_malloc.cpp) over the fake backend: each
// allocation is one block of the fake's BlockAllocator (D10), of the size the policy's page size
// and the ACL padding make, on the calling thread's device (or the host), charged to the fake's
// ledger (which the pools mirror, D8), and its free gives the block back; each refusal of the
// fake is worded and leaves no block, region or charge; the runtime's own checks answer before
// the fake is asked anything.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

dev::AddressInfo query(testing::FakeRuntime& f, uint64_t va) {
  dev::AddressInfo info;
  EXPECT_TRUE(f.device().device()->mmu().query(va, &info).ok());
  return info;
}

TEST(VmmMallocFakeTest, EachPolicyMakesOneBlockOfItsPagesOnTheCurrentDevice) {
  const struct {
    const char* what;
    uint64_t size;
    int policy;
    uint64_t bytes;      // the block: 32-byte aligned, 32 bytes of padding, whole pages
    uint32_t page_size;  // what pointer queries report
  } cases[] = {
      {"HUGE_FIRST, 1 MiB", kMiB, 0, 2 * kMiB, 2 * kMiB},
      {"HUGE_FIRST, small", 100, 0, 4096, 4096},
      {"HUGE_ONLY, small", 100, 1, 2 * kMiB, 2 * kMiB},
      {"NORMAL_ONLY", 3 * kMiB, 2, 3 * kMiB + 4096, 4096},
      {"HUGE_ONLY_P2P, 2 MiB", 2 * kMiB, 4, 4 * kMiB, 2 * kMiB},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;  // the stand-in's current device is 1
    auto ptr = f.vmm.device_malloc(c.size, c.policy);
    ASSERT_TRUE(ptr.ok()) << ptr.status().message();
    EXPECT_TRUE(f.layout().device.contains(*ptr));
    const dev::AddressInfo info = query(f, *ptr);
    EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kDeviceBlock);
    EXPECT_EQ(info.range.base, *ptr);
    EXPECT_EQ(info.range.size, c.bytes);
    EXPECT_EQ(info.page_size, c.page_size);
    EXPECT_EQ(info.owner.id, 1);
    EXPECT_EQ(f.fake().live_physical_objects(), 1u);
    EXPECT_EQ(f.recorder().usage_sum(1), static_cast<int64_t>(c.bytes));
    EXPECT_EQ(f.rt.pools[1]->used(), c.bytes);
    EXPECT_EQ(f.rt.pools[0]->used(), 0u);
    auto info_core = f.vmm.pointer_info(*ptr);
    ASSERT_TRUE(info_core.ok());
    EXPECT_EQ(info_core->page_size, c.page_size);
    ASSERT_TRUE(f.vmm.device_free(*ptr).ok());
    EXPECT_EQ(f.fake().live_mappings(), 0u);
    EXPECT_EQ(f.fake().live_physical_objects(), 0u);
    EXPECT_EQ(f.rt.pools[1]->used(), 0u);
    EXPECT_EQ(f.vmm.device_free(*ptr).code(), ACL_ERROR_RT_PARAM_INVALID) << "freed twice";
    f.device().expect_no_violations();
  }
}

TEST(VmmMallocFakeTest, AHostBlockIsTheHostsAndItsBytesAreTheBlocks) {
  testing::FakeRuntime f;
  auto ptr = f.vmm.host_malloc(100);
  ASSERT_TRUE(ptr.ok()) << ptr.status().message();
  const dev::AddressInfo info = query(f, *ptr);
  EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kHostBlock);
  EXPECT_EQ(info.range.size, 4096u) << "the fake's host page";
  EXPECT_EQ(f.recorder().usage_sum(dev::kNoDevice), 4096);
  EXPECT_EQ(f.rt.host->used(), 4096u);
  // The test's CPU reaches the block (its owner is the host).
  const char text[] = "pinned";
  ASSERT_TRUE(f.fake().cpu_access(*ptr + 64, const_cast<char*>(text), sizeof text, true).ok());
  char seen[sizeof text] = {};
  ASSERT_TRUE(f.fake().read_physical(info.memory, 64, seen, sizeof seen).ok());
  EXPECT_STREQ(seen, text);
  EXPECT_EQ(f.vmm.device_free(*ptr).code(), ACL_ERROR_RT_PARAM_INVALID) << "not aclrtMalloc's";
  ASSERT_TRUE(f.vmm.host_free(*ptr).ok());
  EXPECT_EQ(f.fake().live_mappings(), 0u);
  EXPECT_EQ(f.rt.host->used(), 0u);
  f.device().expect_no_violations();
}

TEST(VmmMallocFakeTest, EachRefusalOfTheFakeIsWordedAndLeavesNothing) {
  const struct {
    const char* what;
    bool host;
    uint64_t size;
    const char* step;  // armed to fail with `error`, or null
    int error;
    int code;
    const char* words;  // the message starts with them
  } cases[] = {
      // FakeConfig: 64 MiB per device, 256 MiB of host memory; the device is named by its user
      // id (the stand-in's current device 1 is user device 0).
      {"the device's ledger full", false, 64 * kMiB, nullptr, 0, ACL_ERROR_RT_MEMORY_ALLOCATION,
       "device 0 is out of memory: 69206016 bytes requested"},
      {"the host's ledger full", true, 257 * kMiB, nullptr, 0, ACL_ERROR_RT_MEMORY_ALLOCATION,
       "host memory cannot hold 269484032 more bytes"},
      {"an injected dev.block.allocate", false, kMiB, steps::kBlockAllocate, EIO,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the backend could not allocate 2097152 bytes of device memory: "},
      {"an injected dev.block.allocate (host)", true, 100, steps::kBlockAllocate, EIO,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the backend could not allocate 4096 bytes of host memory: "},
      {"an injected out of memory", false, kMiB, steps::kBlockAllocate, ENOMEM,
       ACL_ERROR_RT_MEMORY_ALLOCATION, "device 0 is out of memory: 2097152 bytes requested"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;
    if (c.step != nullptr) f.recorder().arm(c.step, 1, c.error);
    auto ptr = c.host ? f.vmm.host_malloc(c.size) : f.vmm.device_malloc(c.size, 0);
    EXPECT_EQ(ptr.status().code(), c.code) << ptr.status().message();
    EXPECT_EQ(ptr.status().message().rfind(c.words, 0), 0u) << ptr.status().message();
    if (c.step != nullptr) {
      EXPECT_FALSE(f.recorder().armed(c.step)) << "the fake was not asked";
    }
    EXPECT_EQ(f.space.region_count(RegionKind::kDeviceMalloc), 0u);
    EXPECT_EQ(f.space.region_count(RegionKind::kHostPinned), 0u);
    EXPECT_EQ(f.fake().live_mappings(), 0u);
    EXPECT_EQ(f.fake().live_ranges(), 0u);
    EXPECT_EQ(f.fake().live_physical_objects(), 0u);
    EXPECT_EQ(f.rt.pools[1]->used() + f.rt.host->used(), 0u);
    f.device().expect_no_violations();
  }
}

// A free the fake refuses keeps the allocation: its block, its charge and its record.
TEST(VmmMallocFakeTest, AFreeTheFakeRefusesKeepsTheAllocation) {
  testing::FakeRuntime f;
  auto ptr = f.vmm.device_malloc(kMiB, 0);
  ASSERT_TRUE(ptr.ok()) << ptr.status().message();
  f.recorder().arm(steps::kBlockFree, 1, EBUSY);
  const Status st = f.vmm.device_free(*ptr);
  EXPECT_EQ(st.code(), ACL_ERROR_RT_DRV_INTERNAL_ERROR) << st.message();
  EXPECT_EQ(st.message().rfind("the allocation at 0x", 0), 0u) << st.message();
  EXPECT_NE(st.message().find(" could not be freed: "), std::string::npos) << st.message();
  EXPECT_EQ(f.space.region_count(RegionKind::kDeviceMalloc), 1u);
  EXPECT_EQ(f.fake().live_mappings(), 1u);
  EXPECT_EQ(f.rt.pools[1]->used(), 2 * kMiB);
  ASSERT_TRUE(f.vmm.device_free(*ptr).ok());
  EXPECT_EQ(f.fake().live_mappings(), 0u);
  f.device().expect_no_violations();
}

TEST(VmmMallocFakeTest, TheRuntimesOwnChecksNeverReachTheFake) {
  const struct {
    const char* what;
    void (*setup)(testing::StandInRuntime&);
    bool host;
    uint64_t size;
    int policy;
    int code;
    const char* words;
  } cases[] = {
      {"no current device", [](testing::StandInRuntime& rt) { rt.current = -1; }, false, kMiB, 0,
       ACL_ERROR_RT_CONTEXT_NULL, "stand-in: no device"},
      {"no current context", [](testing::StandInRuntime& rt) { rt.current = -1; }, true, kMiB, 0,
       ACL_ERROR_RT_CONTEXT_NULL, "stand-in: no context"},
      {"1 GiB pages ruled out", [](testing::StandInRuntime&) {}, false, kMiB, 6,
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "1 GiB pages are not supported on StandInSoc"},
      {"a size that wraps", [](testing::StandInRuntime&) {}, false, ~0ull - 16, 0,
       ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large"},
      {"a host size that wraps", [](testing::StandInRuntime&) {}, true, ~0ull - 16, 0,
       ACL_ERROR_RT_MEMORY_ALLOCATION, "host memory cannot hold"},
      {"no pool for the device", [](testing::StandInRuntime& rt) { rt.pools[1] = nullptr; },
       false, kMiB, 0, ACL_ERROR_RT_MEMORY_ALLOCATION, "device 0 is out of memory"},
      {"no host pool", [](testing::StandInRuntime& rt) { rt.host = nullptr; }, true, kMiB, 0,
       ACL_ERROR_RT_MEMORY_ALLOCATION, "host memory cannot hold 1048576 more bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;
    auto pool1 = f.rt.pools[1];
    auto host = f.rt.host;
    c.setup(f.rt);
    auto ptr = c.host ? f.vmm.host_malloc(c.size) : f.vmm.device_malloc(c.size, c.policy);
    EXPECT_EQ(ptr.status().code(), c.code) << ptr.status().message();
    EXPECT_NE(ptr.status().message().find(c.words), std::string::npos) << ptr.status().message();
    EXPECT_EQ(f.fake().live_mappings(), 0u);
    EXPECT_EQ(f.fake().live_physical_objects(), 0u);
    EXPECT_TRUE(f.recorder().usage().empty()) << "the fake's ledger was never charged";
    f.rt.pools[1] = pool1;
    f.rt.host = host;
    f.device().expect_no_violations();
  }
}

}  // namespace
}  // namespace aclvmm
