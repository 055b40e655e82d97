// The emulated NPU behind the device interface (drivers/emu/device/emu_device_backend.h): the
// options it refuses, the capabilities of step 1's units, and ACLVMM_HOST_NUMA=off.
#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "drivers/emu/device/emu_device_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

BackendOptions options(int32_t devices, uint64_t memory) {
  BackendOptions o;
  o.emulation.device_count = devices;
  o.emulation.device_memory = memory;
  return o;
}

TEST(EmuDeviceBackendTest, RefusesMachinesItCannotEmulate) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  for (const BackendOptions& o : {options(0, kGiB), options(kMaxDevices + 1, kGiB), options(2, 0)}) {
    EXPECT_EQ(EmuDeviceBackend::open(o, listener, &be).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(be, nullptr);
  }
  ASSERT_TRUE(EmuDeviceBackend::open(options(kMaxDevices, kGiB), listener, &be).ok());
  EXPECT_EQ(be->devices().device_count(), kMaxDevices);
}

// Steps 1-7: devices, physical memory, host services, the device MMU, blocks, sharing, copies,
// managed memory and the windows; no host tasks yet.
TEST(EmuDeviceBackendTest, CapabilitiesClaimOnlyTheUnitsItHas) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  ASSERT_TRUE(EmuDeviceBackend::open(options(2, kGiB), listener, &be).ok());
  const Capabilities& c = be->capabilities();
  EXPECT_EQ(c.giant_page, kGiB);
  EXPECT_TRUE(c.map_routes);
  EXPECT_EQ(c.host_numa, be->host().numa_node_count() > 0);
  EXPECT_TRUE(c.sharing);  // step 5
  EXPECT_TRUE(c.fabric_sharing);
  EXPECT_TRUE(c.disable_validation);
  EXPECT_TRUE(c.managed_memory);  // step 6
  EXPECT_TRUE(c.map_without_access);
  EXPECT_TRUE(c.access_none_and_read);
  EXPECT_TRUE(c.cpu_visible_device_memory);
  EXPECT_TRUE(c.cpu_visible_host_memory);
  EXPECT_FALSE(c.host_tasks);
  EXPECT_FALSE(c.authoritative_queries);
  EXPECT_GT(be->windows().layout().device.size, 0u) << "the windows come with the open (step 7)";
  uint64_t va = 0;
  EXPECT_EQ(be->windows().reserve(ReserveRequest{}, &va).condition(),
            Condition::kInvalidArgument) << "a reservation of nothing";
  DeviceProperties p;
  ASSERT_TRUE(be->devices().properties(1, &p).ok());
  EXPECT_EQ(p.soc_name, "Ascend910B1");
  EXPECT_EQ(p.memory_total, kGiB);
  EXPECT_EQ(be->describe(Result::from_errno(ENOMEM)).find("(errno 12)") != std::string::npos, true);
}

TEST(EmuDeviceBackendTest, HostNumaOffIsAHostWithoutNuma) {
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  BackendOptions o = options(1, kGiB);
  o.emulation.host_numa = false;
  ASSERT_TRUE(EmuDeviceBackend::open(o, listener, &be).ok());
  EXPECT_EQ(be->host().numa_node_count(), 0);
  EXPECT_EQ(be->host().current_numa_node(), 0);
  EXPECT_FALSE(be->capabilities().host_numa);
  PhysicalId id;
  EXPECT_EQ(be->physical()
                .create({Location::host_numa(0), PageType::kHuge, MemType::kDdr, 2 * kMiB}, &id)
                .condition(),
            Condition::kNotSupported);
}

}  // namespace
}  // namespace aclvmm::dev::emu
