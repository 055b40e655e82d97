// aclrtMalloc and aclrtMallocHost: whole allocations that carry their own physical memory, one
// BlockAllocator call each (D10); the policy's page size and the ACL padding are computed here.
#include "vmm/vmm.h"

namespace aclvmm::vmm {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Page size the driver would pick for an aclrtMalloc policy (aclrtMemMallocPolicy, low byte).
uint64_t page_size_for(int policy, uint64_t bytes) {
  switch (policy & 0xff) {
    case 1: case 4: return kChunk;          // HUGE_ONLY[_P2P]
    case 2: case 5: return 4096;            // NORMAL_ONLY[_P2P]
    case 6: case 7: return kGiB;            // HUGE1G_ONLY[_P2P]
    default: return bytes >= kMiB ? kChunk : 4096;  // HUGE_FIRST[_P2P] and unknown values
  }
}

std::shared_ptr<PhysicalAllocation> new_allocation(Side side, int device, uint64_t size,
                                                   const char* api) {
  auto phys = std::make_shared<PhysicalAllocation>();
  phys->side = side;
  phys->device = device;
  phys->mem_type = side == Side::kDevice ? kHbm : kDdr;
  phys->size = size;
  phys->created_by = api;
  return phys;
}

// Places a block through the backend; the ledger's refusal (D8) becomes the caller's
// out-of-memory message, built only on that path.
template <typename OutOfMemory>
StatusOr<uint64_t> place(AddressSpace& space, const BlockSpec& block,
                         std::shared_ptr<PhysicalAllocation> phys, OutOfMemory out_of_memory) {
  dev::Condition refused = dev::Condition::kOk;
  auto placed = space.add_block(block, std::move(phys), &refused);
  if (refused == dev::Condition::kOutOfMemory) return out_of_memory();
  return placed;
}

}  // namespace

StatusOr<uint64_t> Vmm::device_malloc(uint64_t size, int policy, bool align32) {
  ACLVMM_ASSIGN_OR_RETURN(const int dev, rt_.current_device());
  const int base_policy = policy & 0xff;
  const bool huge1g = base_policy == 6 || base_policy == 7;
  if (huge1g) {
    const ProductRules product = rt_.rules();
    if (!product.huge_1g_pages) {
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "1 GiB pages are not supported on " + *product.soc);
    }
  }
  // ACL aligns to 32 bytes and adds 32 bytes of padding (none for 1 GiB page policies, none for
  // aclrtMallocAlign32 but on the products where it is aclrtMalloc).
  const bool pad = !huge1g && (!align32 || rt_.rules().align32_pads);
  uint64_t padded = round_up(size, 32) + (pad ? 32 : 0);
  uint64_t page = page_size_for(policy, padded);
  uint64_t bytes = round_up(padded, page);
  if (bytes < size) return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large");
  auto out_of_memory = [&] {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 "device " + std::to_string(rt_.user_device(dev)) + " is out of memory: " +
                     std::to_string(bytes) + " bytes requested");
  };
  if (!rt_.pool(dev)) return out_of_memory();
  // The P2P policies ask the driver for memory other devices may map (MEM_ADVISE_P2P).
  const bool p2p = base_policy == 3 || base_policy == 4 || base_policy == 5 || base_policy == 7;
  auto attempt = [&]() -> StatusOr<uint64_t> {
    auto phys = new_allocation(Side::kDevice, dev, bytes, "aclrtMalloc");
    if (p2p) phys->mem_type = kP2PHbm;
    BlockSpec block;
    block.kind = RegionKind::kDeviceMalloc;
    block.size = bytes;
    block.requested = size;
    block.page_size = static_cast<uint32_t>(page);
    block.device = dev;
    return place(space_, block, std::move(phys), out_of_memory);
  };
  StatusOr<uint64_t> placed = attempt();
  // HUGE_FIRST: when huge pages are refused, normal pages once more (hal.md §3.12: a driver may
  // have normal pages left where huge ones ran out). The software backends keep one pool for
  // both, where the retry could only succeed by rounding less.
  const std::shared_ptr<dev::DeviceBackend>& backend = rt_.device();
  const bool huge_first = page == kChunk && base_policy != 1 && base_policy != 4 && backend &&
                          backend->capabilities().driver_reports_machine;
  if (!placed.ok() && huge_first && placed.status().code() == ACL_ERROR_RT_MEMORY_ALLOCATION) {
    page = 4096;
    bytes = round_up(padded, page);
    placed = attempt();
  }
  return placed;
}

Status Vmm::device_free(uint64_t ptr) {
  if (managed_.in_window(ptr)) return managed_.free(ptr);
  auto region = space_.remove_allocation(ptr, RegionKind::kDeviceMalloc);
  ACLVMM_RETURN_IF_ERROR(region.status());
  // IPC keys over the block stay until closed but give nothing more (runtime-extra.md §3.6).
  if (ipc_ != nullptr) ipc_->memory_gone(ptr);
  return Status::Ok();
}

StatusOr<uint64_t> Vmm::host_malloc(uint64_t size) {
  ACLVMM_RETURN_IF_ERROR(rt_.current_context().status());
  const uint64_t page = host_page();
  uint64_t bytes = round_up(round_up(size, 32), page);
  auto out_of_memory = [&] {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 "host memory cannot hold " + std::to_string(size) + " more bytes");
  };
  if (bytes < size || !rt_.host_pool()) return out_of_memory();
  auto phys = new_allocation(Side::kHost, 0, bytes, "aclrtMallocHost");
  BlockSpec block;
  block.kind = RegionKind::kHostPinned;
  block.size = bytes;
  block.requested = size;
  return place(space_, block, std::move(phys), out_of_memory);
}

bool Vmm::owns_block(uint64_t ptr, bool host) const {
  if (host) return space_.has_allocation(ptr, RegionKind::kHostPinned);
  return managed_.in_window(ptr) || space_.has_allocation(ptr, RegionKind::kDeviceMalloc);
}

Status Vmm::host_free(uint64_t ptr) {
  auto region = space_.remove_allocation(ptr, RegionKind::kHostPinned);
  ACLVMM_RETURN_IF_ERROR(region.status());
  // Registrations inside the block go with it (runtime-extra.md §5, lifetime).
  if (registrations_ != nullptr) (void)registrations_->release_inside((*region)->base, (*region)->span);
  return Status::Ok();
}

}  // namespace aclvmm::vmm
