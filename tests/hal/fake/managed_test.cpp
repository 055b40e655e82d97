// Managed memory (hal.md §3.9, behavior.md §10): advice, range attributes, prefetch and batch
// prefetch with the driver's location types, and their refusals.
#include <gtest/gtest.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

int32_t managed_attribute(void* p, size_t size, uint32_t attribute) {
  int32_t value = 12345;
  void* data[] = {&value};
  size_t sizes[] = {sizeof value};
  uint32_t attributes[] = {attribute};
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, sizes, attributes, 1, ptr(p), size),
            DRV_ERROR_NONE);
  return value;
}

TEST(FakeHalManaged, AdviceAttributesAndPrefetch) {
  OpenDevices open({0, 1, 2});
  ASSERT_TRUE(open.ok());
  void* m = nullptr;
  ASSERT_EQ(halMemAlloc(&m, 4 * kMiB, 0x21C00ull), DRV_ERROR_NONE);
  const drv_uvm_location dev1{DRV_UVM_LOCATION_TYPE_DEVICE, 1};
  const drv_uvm_location dev2{DRV_UVM_LOCATION_TYPE_DEVICE, 2};
  const drv_uvm_location host{DRV_UVM_LOCATION_TYPE_HOST, 0};
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_PREFERRED_LOC), -2);  // unset
  EXPECT_EQ(halMemManagedAdvise(ptr(m), 4 * kMiB, PREFER_LOCATION, dev1), DRV_ERROR_NONE);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_PREFERRED_LOC), 1);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_PREFERRED_LOC_TYPE),
            DRV_UVM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_PREFERRED_LOC_ID), 1);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_READ_MOSTLY), 0);
  EXPECT_EQ(halMemManagedAdvise(ptr(m), 2 * kMiB, READ_MOSTLY, {}), DRV_ERROR_NONE);
  EXPECT_EQ(managed_attribute(m, 2 * kMiB, MEM_RANGE_ATTR_READ_MOSTLY), 1);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_READ_MOSTLY), 0);  // not every page
  EXPECT_EQ(halMemManagedAdvise(ptr(m), 4 * kMiB, ACCESS_BY_LOCATION, dev2), DRV_ERROR_NONE);
  int32_t by[2] = {7, 7};
  void* data[] = {by};
  size_t sizes[] = {sizeof by};
  uint32_t attributes[] = {MEM_RANGE_ATTR_ACCESS_BY};
  ASSERT_EQ(halMemManagedRangeGetAttributes(data, sizes, attributes, 1, ptr(m), 4 * kMiB),
            DRV_ERROR_NONE);
  EXPECT_EQ(by[0], 2);
  EXPECT_EQ(by[1], -2);
  EXPECT_EQ(halMemManagedPrefetch(ptr(m), 4 * kMiB, dev2, 0), DRV_ERROR_NONE);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_LAST_PREFETCH_LOC), 2);
  EXPECT_EQ(halMemManagedPrefetch(ptr(m), 4 * kMiB, host, 0), DRV_ERROR_NONE);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_LAST_PREFETCH_LOC), -1);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_LAST_PREFETCH_LOC_TYPE),
            DRV_UVM_LOCATION_TYPE_HOST);
  // Batch: the first range to device 1, the second to device 2.
  DVdeviceptr ptrs[] = {ptr(m), ptr(m) + 2 * kMiB};
  size_t lens[] = {2 * kMiB, 2 * kMiB};
  drv_uvm_location locs[] = {dev1, dev2};
  size_t starts[] = {0, 1};
  EXPECT_EQ(halMemManagedPrefetchBatch(ptrs, lens, 2, locs, starts, 2, 0), DRV_ERROR_NONE);
  EXPECT_EQ(managed_attribute(m, 2 * kMiB, MEM_RANGE_ATTR_LAST_PREFETCH_LOC), 1);
  EXPECT_EQ(managed_attribute(static_cast<char*>(m) + 2 * kMiB, 2 * kMiB,
                              MEM_RANGE_ATTR_LAST_PREFETCH_LOC),
            2);
  EXPECT_EQ(managed_attribute(m, 4 * kMiB, MEM_RANGE_ATTR_LAST_PREFETCH_LOC), -2);  // mixed
  // The CPU still reads what it wrote, wherever the pages went.
  static_cast<uint8_t*>(m)[3 * kMiB] = 0x42;
  EXPECT_EQ(static_cast<uint8_t*>(m)[3 * kMiB], 0x42);
  EXPECT_EQ(halMemFree(m), DRV_ERROR_NONE);
}

TEST(FakeHalManaged, Refusals) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const Layout l = layout();
  void* m = nullptr;
  ASSERT_EQ(halMemAlloc(&m, 2 * kMiB, 0x21C00ull), DRV_ERROR_NONE);
  const DVdeviceptr p = ptr(m);
  const drv_uvm_location dev0{DRV_UVM_LOCATION_TYPE_DEVICE, 0};
  const drv_uvm_location invalid{DRV_UVM_LOCATION_TYPE_INVALID, 0};
  uint8_t plain[64];
  EXPECT_EQ(halMemManagedAdvise(p, 0, PREFER_LOCATION, dev0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedAdvise(ptr(plain), 64, PREFER_LOCATION, dev0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedAdvise(p, 2 * kMiB, 6, dev0), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemManagedAdvise(p, 2 * kMiB, PREFER_LOCATION, invalid), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(halMemManagedAdvise(p, 2 * kMiB, PREFER_LOCATION, {DRV_UVM_LOCATION_TYPE_DEVICE, 9}),
            DRV_ERROR_PARA_ERROR);
  // In the window, but not allocated: the kernel's EINVAL.
  EXPECT_EQ(halMemManagedAdvise(l.managed.base + l.managed.size - 2 * kMiB, 2 * kMiB,
                                PREFER_LOCATION, dev0),
            DRV_ERROR_PARA_ERROR);
  int32_t v = 0;
  void* data[] = {&v};
  size_t four[] = {4}, eight[] = {8}, six[] = {6};
  uint32_t attr[] = {MEM_RANGE_ATTR_PREFERRED_LOC};
  uint32_t zero[] = {0}, nine[] = {9}, by[] = {MEM_RANGE_ATTR_ACCESS_BY};
  EXPECT_EQ(halMemManagedRangeGetAttributes(nullptr, four, attr, 1, p, 4096),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, four, attr, 0, p, 4096),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, four, attr, 1, p, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, four, zero, 1, p, 4096),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, four, nine, 1, p, 4096),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, eight, attr, 1, p, 4096),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, six, by, 1, p, 4096), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedRangeGetAttributes(data, four, attr, 1, ptr(plain), 64),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedPrefetch(p, 2 * kMiB, dev0, 1), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemManagedPrefetch(p, 2 * kMiB, {DRV_UVM_LOCATION_TYPE_DEVICE, 65}, 0),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedPrefetch(p, 4 * kMiB, dev0, 0), DRV_ERROR_PARA_ERROR);  // past the end
  EXPECT_EQ(halMemManagedPrefetch(ptr(plain), 64, dev0, 0), DRV_ERROR_INVALID_VALUE);
  DVdeviceptr ptrs[] = {p, p};
  size_t lens[] = {4096, 4096};
  drv_uvm_location locs[] = {dev0, dev0};
  size_t bad_first[] = {1, 0}, not_rising[] = {0, 0};
  EXPECT_EQ(halMemManagedPrefetchBatch(ptrs, lens, 2, locs, bad_first, 2, 0),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedPrefetchBatch(ptrs, lens, 2, locs, not_rising, 2, 0),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemManagedPrefetchBatch(ptrs, lens, 2, locs, bad_first, 1, 1),
            DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemAdvise(p, 4096, 1, 0), DRV_ERROR_NOT_SUPPORT);
  EXPECT_GE(halGetCurrentThreadNumaNode(), 0);
  EXPECT_EQ(halMemFree(m), DRV_ERROR_NONE);
}

}  // namespace
}  // namespace fakehal_test
