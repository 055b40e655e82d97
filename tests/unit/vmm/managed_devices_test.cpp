// ManagedMemory over the DeviceDirectory it is constructed with (vmm/device_directory.h), not the
// process's Runtime: on the real emu backend, with a directory whose user ids are the physical
// ids reversed and no runtime started, the pages live in the directory's device backend
// (step 6: its UnifiedMemory charges its own ledger, a migration between devices moves the
// charge, freeing gives it back), and attributes report the application's device ids, sorted
// after the conversion.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "unit/testing/test_device.h"
#include "vmm/device_directory.h"
#include "vmm/managed.h"

namespace aclvmm {
namespace {

class ReversedDevices final : public DeviceDirectory {
 public:
  explicit ReversedDevices(std::shared_ptr<dev::DeviceBackend> device) : device_(std::move(device)) {}
  std::shared_ptr<MemoryPool> pool(int) const override { return nullptr; }
  int user_device(int id) const override { return 7 - id; }
  bool host_numa() const override { return false; }
  int device_count() const override { return 8; }
  void enable_peer_pair(int, int) override {}
  const std::shared_ptr<dev::DeviceBackend>& device() const override { return device_; }

 private:
  std::shared_ptr<dev::DeviceBackend> device_;
};

uint64_t used(dev::DeviceBackend& be, int device) {
  dev::MemoryInfo info;
  EXPECT_TRUE(be.devices().memory_info(device, dev::MemoryKind::kHbm, &info).ok());
  return info.total - info.free;
}

TEST(ManagedMemoryDevices, PagesLiveInTheDirectorysBackend) {
  std::shared_ptr<dev::DeviceBackend> device = testing::open_test_device();
  ASSERT_NE(device, nullptr);
  ReversedDevices devices(device);
  ManagedMemory managed(devices);
  managed.attach(device->windows().layout().managed);
  auto va = managed.allocate(3 * kMiB);  // rounded to two pages
  ASSERT_TRUE(va.ok()) << va.status().message();
  EXPECT_EQ(managed.range_of(*va + kManagedPage)->size, 2 * kManagedPage);
  const uint64_t before0 = used(*device, 0), before1 = used(*device, 1);
  if (!device->unified_memory().tracking().residency) GTEST_SKIP() << "no fault tracking here";

  ASSERT_TRUE(managed.prefetch(*va, 2 * kManagedPage, ManagedLocation{1, 1}).ok());
  EXPECT_EQ(used(*device, 1) - before1, 2 * kManagedPage);
  EXPECT_EQ(used(*device, 0), before0);
  // One page on to device 0: its charge moves with it.
  ASSERT_TRUE(managed.prefetch(*va, kManagedPage, ManagedLocation{1, 0}).ok());
  EXPECT_EQ(used(*device, 0) - before0, kManagedPage);
  EXPECT_EQ(used(*device, 1) - before1, kManagedPage);

  // Attributes in user ids: physical 0 is user 7, physical 1 user 6.
  auto last = managed.attribute(6, *va, kManagedPage, 1);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, std::vector<int32_t>{7});
  auto last_id = managed.attribute(8, *va + kManagedPage, kManagedPage, 1);
  ASSERT_TRUE(last_id.ok());
  EXPECT_EQ(*last_id, std::vector<int32_t>{6});
  ASSERT_TRUE(managed.advise(*va, kManagedPage, 4, ManagedLocation{1, 0}).ok());
  ASSERT_TRUE(managed.advise(*va, kManagedPage, 4, ManagedLocation{1, 2}).ok());
  ASSERT_TRUE(managed.advise(*va, kManagedPage, 4, ManagedLocation{2, 0}).ok());
  auto by = managed.attribute(3, *va, kManagedPage, 4);
  ASSERT_TRUE(by.ok());
  EXPECT_EQ(*by, (std::vector<int32_t>{-1, 5, 7, -2})) << "host first, then sorted user ids";

  ASSERT_TRUE(managed.free(*va).ok());
  EXPECT_EQ(used(*device, 0), before0);
  EXPECT_EQ(used(*device, 1), before1);
  EXPECT_EQ(managed.live(), 0u);
}

}  // namespace
}  // namespace aclvmm
