// The virtual-memory operations of the runtime and driver layers (behavior.md sections 1-9).
// The ACL layer (src/api) has already done its own checks; these do the runtime's and the
// driver's, in the vendor's order, and return the vendor's codes.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm::vmm {

struct PhysicalSpec {
  Side side = Side::kDevice;
  int device = 0;  // physical device id (kDevice) or NUMA node (kHostNuma); 0 for kHost
  PageType page_type = kHugePage;
  MemType mem_type = kHbm;
  uint64_t reserve = 0;
};

StatusOr<uint64_t> malloc_physical(uint64_t size, const PhysicalSpec& spec);
Status free_physical(uint64_t handle);
StatusOr<PhysicalSpec> properties(uint64_t handle);
StatusOr<uint64_t> retain(uint64_t va);

StatusOr<uint64_t> reserve(uint64_t size, uint64_t alignment, uint64_t expect, bool no_uc);
Status release(uint64_t va);
Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle, bool no_access);
Status unmap(uint64_t va);
Status set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes);
StatusOr<int> get_access(uint64_t va, bool host, int device);

StatusOr<AddressRange> address_range(uint64_t ptr);
// aclrtMemP2PMap: the peer device `device` reaches [ptr, ptr+size) of another device's memory.
Status p2p_map(uint64_t ptr, uint64_t size, int device);
StatusOr<PointerInfo> pointer_info(uint64_t ptr);

// aclrtMalloc / aclrtMallocHost and their frees.
StatusOr<uint64_t> device_malloc(uint64_t size, int policy);
Status device_free(uint64_t ptr);
StatusOr<uint64_t> host_malloc(uint64_t size);
Status host_free(uint64_t ptr);

}  // namespace aclvmm::vmm
