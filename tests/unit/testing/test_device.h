// The device backend an AddressSpace under test programs its mappings through (the runtime opens
// one per start; a unit test opens its own): emu behind the injection decorator, reporting to a
// listener that arms nothing. Memory a test made through a drv::Backend gets its PhysicalId with
// adopt_into() (uncharged), as imported memory does in the core; blocks come from the device
// (add_device_block / add_host_block).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "drivers/device_backend.h"
#include "unit/testing/recording_listener.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm::testing {

inline RecordingListener& test_device_listener() {
  static RecordingListener* listener = new RecordingListener();  // outlives every backend
  return *listener;
}

inline std::shared_ptr<dev::DeviceBackend> open_test_device(bool host_access_open = false) {
  dev::BackendOptions options;
  options.emulation.device_count = 8;
  options.emulation.device_memory = 64 * dev::kGiB;
  options.emulation.host_access_open = host_access_open;
  std::unique_ptr<dev::DeviceBackend> be;
  EXPECT_TRUE(dev::open_device_backend("emu", options, &test_device_listener(), &be).ok());
  return std::shared_ptr<dev::DeviceBackend>(std::move(be));
}

inline void adopt_into(const std::shared_ptr<dev::DeviceBackend>& device, PhysicalAllocation& p) {
  const Status st = DeviceMemory::adopt(device, p);
  EXPECT_TRUE(st.ok()) << st.code() << " " << st.message();
}

// An aclrtMalloc block (page_size as its policy gives it) and an aclrtMallocHost block, as
// vmm_malloc asks for them; `phys` gets the block's bytes.
inline StatusOr<uint64_t> add_device_block(AddressSpace& as, uint64_t size, uint64_t requested,
                                           uint32_t page_size, int device,
                                           std::shared_ptr<PhysicalAllocation> phys) {
  BlockSpec spec;
  spec.kind = RegionKind::kDeviceMalloc;
  spec.size = size;
  spec.requested = requested;
  spec.page_size = page_size;
  spec.device = device;
  return as.add_block(spec, std::move(phys));
}

inline StatusOr<uint64_t> add_host_block(AddressSpace& as, uint64_t size, uint64_t requested,
                                         std::shared_ptr<PhysicalAllocation> phys) {
  BlockSpec spec;
  spec.kind = RegionKind::kHostPinned;
  spec.size = size;
  spec.requested = requested;
  return as.add_block(spec, std::move(phys));
}

}  // namespace aclvmm::testing
