// memops::MemoryOps (src/vmm/memory_ops.cpp) over the fake backend: every copy and fill is one
// request to the fake's copy engine, which moves the bytes (seen in the fake's physical objects,
// through FakeBackend::read_physical and cpu_access) with the executing device's rights, and in
// the managed window migrates the pages for it (charged to its ledger); each refusal of the
// engine is worded from the core's records when they have a reason, else from the engine's side,
// address and condition, and leaves the destination's bytes as they were; a copy with no device
// backend never reaches one.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

using testing::hex;

void* ptr(uint64_t va) { return reinterpret_cast<void*>(va); }

Accessor executed_by(int device) {
  Accessor who;
  who.device = device;
  return who;
}

class MemoryOpsFakeTest : public ::testing::Test {
 protected:
  // An aclrtMalloc block on `device` (the stand-in's current device decides where).
  uint64_t block_on(int device, uint64_t bytes = kMiB) {
    f_.rt.current = device;
    auto va = f_.vmm.device_malloc(bytes, 1);
    EXPECT_TRUE(va.ok()) << va.status().message();
    f_.rt.current = 1;
    return va.ok() ? *va : 0;
  }
  dev::PhysicalId object_at(uint64_t va) {
    dev::AddressInfo info;
    EXPECT_TRUE(f_.device().device()->mmu().query(va, &info).ok());
    return info.memory;
  }
  std::vector<uint8_t> bytes_of(uint64_t va, size_t n) {
    std::vector<uint8_t> out(n, 0);
    dev::AddressInfo info;
    EXPECT_TRUE(f_.device().device()->mmu().query(va, &info).ok());
    EXPECT_TRUE(f_.fake().read_physical(info.memory, info.offset, out.data(), n).ok());
    return out;
  }
  testing::FakeRuntime f_;
};

TEST_F(MemoryOpsFakeTest, CopiesAndFillsMoveTheFakesBytes) {
  const uint64_t a = block_on(0), b = block_on(0);
  std::vector<uint8_t> text(4096);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(f_.ops.copy(ptr(a), text.data(), text.size(), executed_by(0)).ok());
  EXPECT_EQ(bytes_of(a, text.size()), text) << "host to device";
  ASSERT_TRUE(f_.ops.copy(ptr(b + 100), ptr(a), text.size(), executed_by(0)).ok());
  EXPECT_EQ(bytes_of(b + 100, text.size()), text) << "device to device";
  ASSERT_TRUE(f_.ops.fill(ptr(b + 100), 0xa5, 50, executed_by(0)).ok());
  std::vector<uint8_t> filled = text;
  std::fill(filled.begin(), filled.begin() + 50, 0xa5);
  EXPECT_EQ(bytes_of(b + 100, text.size()), filled);
  std::vector<uint8_t> back(text.size(), 0);
  ASSERT_TRUE(f_.ops.copy(back.data(), ptr(b + 100), back.size(), executed_by(0)).ok());
  EXPECT_EQ(back, filled) << "device to host";

  // An aclrtMallocHost block is behind the MMU too: the copy is translated through its entry.
  auto pinned = f_.vmm.host_malloc(4096);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  ASSERT_TRUE(f_.ops.copy(ptr(*pinned), ptr(a), 64, executed_by(0)).ok());
  std::vector<uint8_t> seen(64, 0);
  ASSERT_TRUE(f_.fake().cpu_access(*pinned, seen.data(), seen.size(), false).ok());
  EXPECT_EQ(seen, std::vector<uint8_t>(text.begin(), text.begin() + 64));
  f_.device().expect_no_violations();
}

TEST_F(MemoryOpsFakeTest, AManagedSideMigratesItsPagesForTheExecutingDevice) {
  auto managed = f_.managed.allocate(2 * kMiB);
  ASSERT_TRUE(managed.ok()) << managed.status().message();
  const int64_t before = f_.recorder().usage_sum(0);
  const char text[] = "managed";
  ASSERT_TRUE(f_.ops.copy(ptr(*managed + 10), text, sizeof text, executed_by(0)).ok());
  EXPECT_EQ(f_.recorder().usage_sum(0) - before, static_cast<int64_t>(2 * kMiB))
      << "the page moved to device 0's ledger";
  EXPECT_EQ(f_.rt.pools[0]->used(), 2 * kMiB);
  char seen[sizeof text] = {};
  ASSERT_TRUE(f_.fake().cpu_access(*managed + 10, seen, sizeof seen, false).ok());
  EXPECT_STREQ(seen, text);
  f_.device().expect_no_violations();
}

TEST_F(MemoryOpsFakeTest, EachRefusalIsWordedAndLeavesTheDestinationAsItWas) {
  const uint64_t own = block_on(0), other = block_on(1);
  auto managed = f_.managed.allocate(2 * kMiB);
  ASSERT_TRUE(managed.ok()) << managed.status().message();
  const uint64_t nothing = own + 4 * kMiB;  // in the device window, not allocated
  ASSERT_TRUE(f_.layout().device.contains(nothing));
  const uint64_t unmanaged = *managed + 8 * kMiB;
  std::vector<uint8_t> host(64, 0x11);
  const uint64_t host_va = reinterpret_cast<uint64_t>(host.data());
  const struct {
    const char* what;
    const char* step;  // armed to fail with EIO, or null
    bool fill;
    uint64_t dst, src;
    int device;
    int code;
    std::string message;
  } cases[] = {
      // An injected failure names no side and no address (injecting_units.cpp): the words name
      // the operation and end with the engine's errno.
      {"an injected dev.copy.copy", steps::kCopySync, false, own, host_va, 0,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "the copy of 64 bytes from " + hex(host_va) + " to " + hex(own) + " failed: errno 5"},
      {"an injected dev.copy.fill", steps::kFillSync, true, own, 0, 0,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the fill of 64 bytes at " + hex(own) + " failed: errno 5"},
      {"nothing allocated there", nullptr, false, nothing, own, 0, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       hex(nothing) + " is not allocated device memory"},
      {"another device's block", nullptr, false, other, own, 0, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "device 0 may not write the memory at " + hex(other) + " (mapped for device 1)"},
      {"reading another device's block", nullptr, false, own, other, 0,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "device 0 may not read the memory at " + hex(other) + " (mapped for device 1)"},
      {"no current context", nullptr, true, own, 0, -1, ACL_ERROR_RT_CONTEXT_NULL,
       "device memory at " + hex(own) + " needs a current context (aclrtSetDevice)"},
      {"a managed page never allocated", nullptr, false, unmanaged, own, 0,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, hex(unmanaged) + " is not inside a managed allocation"},
      {"the null page", nullptr, false, 0x10, own, 0, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "writing the host buffer at 0x10 failed: the address is not accessible"},
      {"reading the null page", nullptr, false, own, 0x20, 0, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "reading the host buffer at 0x20 failed: the address is not accessible"},
  };
  const std::vector<uint8_t> own_bytes = bytes_of(own, 64);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    if (c.step != nullptr) f_.recorder().arm(c.step, 1, EIO);
    const Status st = c.fill ? f_.ops.fill(ptr(c.dst), 0x77, 64, executed_by(c.device))
                             : f_.ops.copy(ptr(c.dst), ptr(c.src), 64, executed_by(c.device));
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_EQ(st.message(), c.message);
    if (c.step != nullptr) {
      EXPECT_FALSE(f_.recorder().armed(c.step)) << "the engine was not asked";
    }
    EXPECT_EQ(bytes_of(own, 64), own_bytes) << "nothing was written";
    EXPECT_EQ(f_.recorder().usage_sum(0), static_cast<int64_t>(2 * kMiB)) << "no page migrated";
    f_.device().expect_no_violations();
  }
}

// A managed page finding its executing device full: 207001, nothing migrated.
TEST_F(MemoryOpsFakeTest, AManagedPageFindingItsDeviceFullIsOutOfMemory) {
  vmm::PhysicalSpec all_of_0;
  auto filler = f_.vmm.malloc_physical(64 * kMiB, all_of_0);
  ASSERT_TRUE(filler.ok()) << filler.status().message();
  auto managed = f_.managed.allocate(2 * kMiB);
  ASSERT_TRUE(managed.ok()) << managed.status().message();
  const char text[] = "no room";
  const Status st = f_.ops.copy(ptr(*managed), text, sizeof text, executed_by(0));
  EXPECT_EQ(st.code(), ACL_ERROR_RT_MEMORY_ALLOCATION) << st.message();
  EXPECT_EQ(st.message(), "device 0 has no room for a managed page");
  EXPECT_EQ(f_.rt.pools[0]->used(), 64 * kMiB);
  ASSERT_TRUE(f_.vmm.free_physical(*filler).ok());
  f_.device().expect_no_violations();
}

TEST_F(MemoryOpsFakeTest, WithoutADeviceBackendNothingIsAsked) {
  const uint64_t a = block_on(0);
  f_.rt.device_backend = nullptr;  // a task racing the runtime's teardown
  char host[16] = {};
  const Status copied = f_.ops.copy(ptr(a), host, sizeof host, executed_by(0));
  const Status filled = f_.ops.fill(ptr(a), 1, sizeof host, executed_by(0));
  f_.rt.device_backend = f_.device().device();
  for (const Status& st : {copied, filled}) {
    EXPECT_EQ(st.code(), kAclInternalError);
    EXPECT_EQ(st.message(), "the copy found no device backend (the runtime is stopped)");
  }
  EXPECT_EQ(bytes_of(a, 16), std::vector<uint8_t>(16, 0));
  f_.device().expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
