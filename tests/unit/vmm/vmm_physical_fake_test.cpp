// vmm::Vmm's physical handles (src/vmm/vmm_physical.cpp) over the fake backend: aclrtMallocPhysical
// makes one object in the fake's PhysicalAllocator, at the location, in the types and of the
// rounded size asked, charged to the fake's ledger (which the pools mirror, D8), and the handle's
// last release gives it back; each refusal of the fake is worded and leaves no object, handle or
// charge; the runtime's and the driver's own checks answer before the fake is asked anything.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

vmm::PhysicalSpec on_device(int device) {
  vmm::PhysicalSpec spec;
  spec.device = device;
  return spec;
}

dev::PhysicalProperties object_of(testing::FakeRuntime& f, uint64_t handle) {
  dev::PhysicalProperties props;
  auto phys = f.physical.find(handle);
  EXPECT_TRUE(phys != nullptr);
  if (phys == nullptr) return props;
  EXPECT_TRUE(f.device().device()->physical().properties(phys->device_memory.id(), &props).ok());
  return props;
}

TEST(VmmPhysicalFakeTest, AHandleIsOneObjectOfTheFakeUntilItsLastRelease) {
  testing::FakeRuntime f;
  auto handle = f.vmm.malloc_physical(3 * kMiB, on_device(1));  // rounded to 2 MiB pages
  ASSERT_TRUE(handle.ok()) << handle.status().message();
  EXPECT_EQ(f.fake().live_physical_objects(), 1u);
  const dev::PhysicalProperties props = object_of(f, *handle);
  EXPECT_EQ(props.location.kind, dev::Location::Kind::kDevice);
  EXPECT_EQ(props.location.id, 1);
  EXPECT_EQ(props.size, 4 * kMiB);
  EXPECT_EQ(f.recorder().usage_sum(1), static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(f.rt.pools[1]->used(), 4 * kMiB) << "the pool mirrors the fake's ledger";

  vmm::PhysicalSpec host;
  host.side = Side::kHost;
  auto pinned = f.vmm.malloc_physical(2 * kMiB, host);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(object_of(f, *pinned).location.kind, dev::Location::Kind::kHost);
  EXPECT_EQ(f.rt.host->used(), 2 * kMiB);

  // A mapping retains the handle: aclrtFreePhysical then only drops the caller's reference.
  auto va = f.vmm.reserve(4 * kMiB, 0, 0, false);
  ASSERT_TRUE(va.ok()) << va.status().message();
  ASSERT_TRUE(f.vmm.map(*va, 4 * kMiB, 0, *handle, false).ok());
  auto retained = f.vmm.retain(*va);
  ASSERT_TRUE(retained.ok()) << retained.status().message();
  EXPECT_EQ(*retained, *handle);
  ASSERT_TRUE(f.vmm.free_physical(*handle).ok());  // the retain's reference
  ASSERT_TRUE(f.vmm.free_physical(*handle).ok());  // the malloc's
  ASSERT_TRUE(f.physical.find(*handle) != nullptr) << "the mapping's reference keeps it";
  EXPECT_EQ(f.physical.find(*handle)->ref.load(), 1);
  const Status again = f.vmm.free_physical(*handle);
  EXPECT_EQ(again.code(), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(again.message().find("it is freed by its last aclrtUnmapMem"), std::string::npos)
      << again.message();
  EXPECT_EQ(f.fake().live_physical_objects(), 2u);
  ASSERT_TRUE(f.vmm.unmap(*va).ok());  // the last reference: the object goes
  EXPECT_EQ(f.fake().live_physical_objects(), 1u);
  EXPECT_EQ(f.rt.pools[1]->used(), 0u);
  EXPECT_EQ(f.physical.size(), 1u);
  EXPECT_EQ(f.vmm.free_physical(*handle).code(), ACL_ERROR_RT_PARAM_INVALID) << "freed";
  ASSERT_TRUE(f.vmm.free_physical(*pinned).ok());
  EXPECT_EQ(f.fake().live_physical_objects(), 0u);
  EXPECT_EQ(f.rt.host->used(), 0u);
  ASSERT_TRUE(f.vmm.release(*va).ok());
  f.device().expect_no_violations();
}

TEST(VmmPhysicalFakeTest, EachRefusalOfTheFakeIsWordedAndLeavesNothing) {
  const struct {
    const char* what;
    Side side;
    uint64_t size;
    const char* step;  // armed to fail with EIO, or null
    int code;
    const char* words;  // the message starts with them
  } cases[] = {
      // FakeConfig: 64 MiB per device, 256 MiB of host memory; the pools' numbers are named.
      {"a device's ledger full", Side::kDevice, 66 * kMiB, nullptr,
       ACL_ERROR_RT_MEMORY_ALLOCATION,
       "device 0 is out of memory: 69206016 bytes requested, 67108864 free"},
      {"the host's ledger full", Side::kHost, 258 * kMiB, nullptr, ACL_ERROR_RT_MEMORY_ALLOCATION,
       "host memory cannot hold 270532608 more bytes"},
      {"an injected dev.phys.create", Side::kDevice, 2 * kMiB, steps::kPhysicalCreate,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "the backend could not create 2097152 bytes of physical memory: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;
    if (c.step != nullptr) f.recorder().arm(c.step, 1, EIO);
    vmm::PhysicalSpec spec;
    spec.side = c.side;
    auto handle = f.vmm.malloc_physical(c.size, spec);
    EXPECT_EQ(handle.status().code(), c.code) << handle.status().message();
    EXPECT_EQ(handle.status().message().rfind(c.words, 0), 0u) << handle.status().message();
    EXPECT_FALSE(f.recorder().armed(steps::kPhysicalCreate)) << "the fake was asked";
    EXPECT_EQ(f.physical.size(), 0u) << "no handle";
    EXPECT_EQ(f.fake().live_physical_objects(), 0u);
    EXPECT_EQ(f.recorder().usage_sum(0), 0);
    EXPECT_EQ(f.recorder().usage_sum(dev::kNoDevice), 0);
    f.device().expect_no_violations();
  }
}

TEST(VmmPhysicalFakeTest, TheRuntimesOwnChecksNeverReachTheFake) {
  const struct {
    const char* what;
    void (*setup)(testing::FakeRuntime&, vmm::PhysicalSpec&, uint64_t&);
    int code;
    const char* words;  // a part of the message
  } cases[] = {
      {"no device opened", [](testing::FakeRuntime& f, vmm::PhysicalSpec&, uint64_t&) { f.rt.set_svm(false); },
       ACL_ERROR_RT_INVALID_HANDLE, "call aclrtSetDevice first"},
      {"reserve not 0", [](testing::FakeRuntime&, vmm::PhysicalSpec& s, uint64_t&) { s.reserve = 1; },
       ACL_ERROR_RT_PARAM_INVALID, "prop->reserve must be 0"},
      {"host location id 1",
       [](testing::FakeRuntime&, vmm::PhysicalSpec& s, uint64_t&) {
         s.side = Side::kHost;
         s.device = 1;
       },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "host memory takes location id 0"},
      {"host location id 2^31",
       [](testing::FakeRuntime&, vmm::PhysicalSpec& s, uint64_t&) {
         s.side = Side::kHost;
         s.device = INT32_MIN;
       },
       ACL_ERROR_RT_PARAM_INVALID, "host location id 2147483648 is out of range"},
      {"NUMA off",
       [](testing::FakeRuntime& f, vmm::PhysicalSpec& s, uint64_t&) {
         f.rt.numa = false;
         s.side = Side::kHostNuma;
       },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACLVMM_HOST_NUMA=off"},
      {"NUMA node past the host's two",
       [](testing::FakeRuntime&, vmm::PhysicalSpec& s, uint64_t&) {
         s.side = Side::kHostNuma;
         s.device = 2;
       },
       ACL_ERROR_RT_PARAM_INVALID, "NUMA node 2 does not exist on this host"},
      {"1 GiB pages ruled out",
       [](testing::FakeRuntime&, vmm::PhysicalSpec& s, uint64_t&) { s.page_type = kHuge1GPage; },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "1 GiB pages are not supported on StandInSoc"},
      {"1 GiB pages of plain host memory",
       [](testing::FakeRuntime& f, vmm::PhysicalSpec& s, uint64_t&) {
         f.rt.product.huge_1g_pages = true;
         s.side = Side::kHost;
         s.page_type = kHuge1GPage;
       },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "exist only for P2P memory"},
      {"vendor quirks: not whole 2 MiB",
       [](testing::FakeRuntime& f, vmm::PhysicalSpec&, uint64_t& size) {
         f.rt.product.quirks = true;
         size = 3 * kMiB;
       },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "size 3145728 is not a multiple of 2 MiB"},
      {"a size that wraps when rounded",
       [](testing::FakeRuntime&, vmm::PhysicalSpec&, uint64_t& size) { size = ~0ull - 4096; },
       ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large"},
      {"no pool for the device",
       [](testing::FakeRuntime& f, vmm::PhysicalSpec&, uint64_t&) { f.rt.pools[0] = nullptr; },
       ACL_ERROR_RT_MEMORY_ALLOCATION, "device 0 is out of memory"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;
    auto pool0 = f.rt.pools[0];
    vmm::PhysicalSpec spec;
    uint64_t size = 2 * kMiB;
    c.setup(f, spec, size);
    auto handle = f.vmm.malloc_physical(size, spec);
    EXPECT_EQ(handle.status().code(), c.code) << handle.status().message();
    EXPECT_NE(handle.status().message().find(c.words), std::string::npos)
        << handle.status().message();
    EXPECT_EQ(f.physical.size(), 0u);
    EXPECT_EQ(f.fake().live_physical_objects(), 0u);
    EXPECT_TRUE(f.recorder().usage().empty()) << "the fake's ledger was never charged";
    f.device().expect_no_violations();
    f.rt.pools[0] = pool0;
  }
}

// A host with NUMA nodes as the fake reports them: a NUMA node's memory is the host's.
TEST(VmmPhysicalFakeTest, NumaMemoryIsTheHostsAndAHostWithoutNodesRefusesIt) {
  {
    testing::FakeRuntime f;
    vmm::PhysicalSpec spec;
    spec.side = Side::kHostNuma;
    spec.device = 1;
    auto handle = f.vmm.malloc_physical(2 * kMiB, spec);
    ASSERT_TRUE(handle.ok()) << handle.status().message();
    EXPECT_EQ(object_of(f, *handle).location.kind, dev::Location::Kind::kHostNuma);
    EXPECT_EQ(object_of(f, *handle).location.id, 1);
    EXPECT_EQ(f.rt.host->used(), 2 * kMiB);
    ASSERT_TRUE(f.vmm.free_physical(*handle).ok());
  }
  dev::fake::FakeConfig no_numa;
  no_numa.numa_nodes = 0;
  testing::FakeRuntime f(no_numa);
  f.rt.numa = true;  // the configuration allows it; the host has none
  vmm::PhysicalSpec spec;
  spec.side = Side::kHostNuma;
  auto handle = f.vmm.malloc_physical(2 * kMiB, spec);
  EXPECT_EQ(handle.status().code(), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  EXPECT_EQ(handle.status().message(), "this host has no NUMA support");
  EXPECT_EQ(f.fake().live_physical_objects(), 0u);
}

}  // namespace
}  // namespace aclvmm
