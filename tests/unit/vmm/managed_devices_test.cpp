// ManagedMemory gets the devices it charges from the DeviceDirectory it is constructed with
// (vmm/device_directory.h), not from the process's Runtime: on the real emu backend, with a
// directory of two small pools and no runtime started, a migration charges the pool of the
// directory's device, a page moving between devices moves its charge, and freeing gives it back.
#include <gtest/gtest.h>

#include <memory>

#include "base/status.h"
#include "unit/testing/test_device.h"
#include "unit/testing/window_releasing_backend.h"
#include "vmm/address_space.h"
#include "vmm/device_directory.h"
#include "vmm/managed.h"

namespace aclvmm {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

class TwoDevices final : public DeviceDirectory {
 public:
  std::shared_ptr<MemoryPool> pool(int id) const override {
    return id >= 0 && id < 2 ? pools[id] : nullptr;
  }
  int user_device(int id) const override { return 1 - id; }
  bool host_numa() const override { return false; }
  int device_count() const override { return 2; }
  void enable_peer_pair(int, int) override { ++peer_pairs; }
  const std::shared_ptr<dev::DeviceBackend>& device() const override { return no_device; }

  std::shared_ptr<MemoryPool> pools[2] = {std::make_shared<MemoryPool>(64 * kMiB),
                                          std::make_shared<MemoryPool>(64 * kMiB)};
  int peer_pairs = 0;
  std::shared_ptr<dev::DeviceBackend> no_device;  // managed memory maps nothing through the MMU
};

TEST(ManagedMemoryDevices, ChargesGoToTheDirectorysPools) {
  WindowReleasingBackend backend;
  ASSERT_TRUE(backend.ok()) << "no emu backend";
  std::shared_ptr<dev::DeviceBackend> device = testing::open_test_device();
  ASSERT_NE(device, nullptr);
  TwoDevices devices;
  {
    ManagedMemory managed(devices);
    managed.attach(&backend, device->windows().layout().managed, device->legacy_memory());
    auto va = managed.allocate(2 * kManagedPage);
    ASSERT_TRUE(va.ok()) << va.status().message();
    EXPECT_EQ(devices.pools[0]->used(), 0u);
    EXPECT_EQ(devices.pools[1]->used(), 0u);

    ASSERT_TRUE(managed.prefetch(*va, 2 * kManagedPage, ManagedLocation{1, 1}).ok());
    EXPECT_EQ(devices.pools[1]->used(), 2 * kManagedPage);
    EXPECT_EQ(devices.pools[0]->used(), 0u);

    // One page on to device 0: its charge moves with it.
    ASSERT_TRUE(managed.prefetch(*va, kManagedPage, ManagedLocation{1, 0}).ok());
    EXPECT_EQ(devices.pools[0]->used(), kManagedPage);
    EXPECT_EQ(devices.pools[1]->used(), kManagedPage);

    ASSERT_TRUE(managed.free(*va).ok());
    EXPECT_EQ(devices.pools[0]->used(), 0u);
    EXPECT_EQ(devices.pools[1]->used(), 0u);
  }
}

}  // namespace
}  // namespace aclvmm
