// The device backend an AddressSpace under test programs its mappings through (the runtime opens
// one per start; a unit test opens its own): emu behind the injection decorator, reporting to a
// listener that arms nothing. Physical memory is made in it with create_in() (charged, as
// aclrtMallocPhysical does), blocks with add_device_block / add_host_block; the test reads and
// writes the emulated bytes behind either directly (bytes_of, bytes_at), as the device would.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "drivers/device_backend.h"
#include "drivers/emu/device/physical_object.h"
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

// p's object in `device` (p's side, device and types). The tests ask for sizes vmm_physical
// would have rounded (an odd mapping's): the object is p.size rounded up to its page, and p.size
// stays what the test said, which is all the core's records look at.
inline void create_in(const std::shared_ptr<dev::DeviceBackend>& device, PhysicalAllocation& p) {
  const uint64_t asked = p.size;
  const uint64_t page = p.page_type == kHuge1GPage ? dev::kGiB
                        : p.page_type == kHugePage ? 2 * dev::kMiB : 4096;
  p.size = (asked + page - 1) / page * page;
  const Status st = DeviceMemory::create(device, p);
  p.size = asked;
  EXPECT_TRUE(st.ok()) << st.code() << " " << st.message();
}

// The emulated bytes of p's object (emu's, D3: its PhysicalIds are its objects).
inline dev::emu::os::PhysicalMemory& bytes_of(const PhysicalAllocation& p) {
  return dev::emu::EmuPhysical::from_id(p.device_memory.id())->memory();
}

// The emulated bytes of the object the device maps at va (a block's; va is the block's start,
// or the offset is the caller's to add).
inline dev::emu::os::PhysicalMemory& bytes_at(dev::DeviceBackend& device, uint64_t va) {
  dev::AddressInfo info;
  EXPECT_TRUE(device.mmu().query(va, &info).ok());
  return dev::emu::EmuPhysical::from_id(info.memory)->memory();
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
