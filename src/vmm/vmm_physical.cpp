// Physical handles: creation, release with the vendor's reference counts, queries.
#include <mutex>

#include "vmm/device_error.h"
#include "vmm/device_memory.h"
#include "vmm/vmm.h"

namespace aclvmm::vmm {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Status no_device_opened() {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               "no device has been opened in this process; call aclrtSetDevice first");
}

Status bad_handle() {
  return Error(ACL_ERROR_RT_PARAM_INVALID,
               "the handle is not a live physical memory handle (freed, forged or foreign)");
}

}  // namespace

// behavior.md §1, FEATURE_SVM_VMM_NORMAL_GRANULARITY.
StatusOr<int> Vmm::host_numa_nodes() {
  if (!rt_.host_numa()) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "host NUMA memory is not supported: ACLVMM_HOST_NUMA=off emulates a host without "
                 "NUMA");
  }
  const auto& device = rt_.device();
  if (device == nullptr) return no_device_opened();
  const int nodes = device->host().numa_node_count();
  if (nodes == 0) return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "this host has no NUMA support");
  return nodes;
}

StatusOr<uint64_t> Vmm::malloc_physical(uint64_t size, const PhysicalSpec& spec) {
  int numa_nodes = 0;
  if (spec.side == Side::kHostNuma) {
    ACLVMM_ASSIGN_OR_RETURN(numa_nodes, host_numa_nodes());
  }
  if (!rt_.svm_ready()) return no_device_opened();
  if (spec.reserve != 0) return Error(ACL_ERROR_RT_PARAM_INVALID, "prop->reserve must be 0");
  if (spec.side == Side::kHost && spec.device != 0) {
    // The id is the caller's uint32_t: ids of 2^31 and more are out of range too, not "1..63"
    // (tests/fuzz found them answered with 207000).
    const uint32_t id = static_cast<uint32_t>(spec.device);
    if (id < 64) {
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "host memory takes location id 0");
    }
    return Error(ACL_ERROR_RT_PARAM_INVALID, "host location id " + std::to_string(id) +
                                                 " is out of range");
  }
  if (spec.side == Side::kHostNuma) {
    if (spec.device < 0 || spec.device >= numa_nodes) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, "NUMA node " + std::to_string(spec.device) +
                                                   " does not exist on this host");
    }
  }
  uint64_t rounded;
  const ProductRules product = rt_.rules();
  if (spec.page_type == kHuge1GPage) {
    if (!product.huge_1g_pages) {
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "1 GiB pages are not supported on " + *product.soc);
    }
    // The driver offers giant pages on the host only for P2P DDR memory.
    if (spec.side != Side::kDevice && spec.mem_type != kP2PDdr) {
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "1 GiB pages of host memory exist only for P2P memory (ACL_MEM_P2P_HUGE1G)");
    }
    rounded = round_up(size, kGiB);
  } else {
    if (product.quirks && size % kChunk != 0) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "size " + std::to_string(size) + " is not a multiple of 2 MiB");
    }
    rounded = round_up(size, kChunk);
  }
  if (rounded < size) return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large");

  auto phys = std::make_shared<PhysicalAllocation>();
  phys->side = spec.side;
  phys->device = spec.device;
  // As requested: queries report it; the memory itself is always in 2 MiB pages or larger.
  phys->page_type = spec.page_type;
  phys->mem_type = spec.mem_type;
  phys->size = rounded;
  phys->created_by = "aclrtMallocPhysical";
  // The device backend's ledger is the capacity authority (D8): it refuses in create(), and the
  // message names what the pools (its mirrors) say is free.
  const bool device = spec.side == Side::kDevice;
  auto pool = device ? rt_.pool(spec.device) : rt_.host_pool();
  auto out_of_memory = [&] {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 device ? "device " + std::to_string(spec.device) + " is out of memory: " +
                              std::to_string(rounded) + " bytes requested, " +
                              std::to_string(pool ? pool->total() - pool->used() : 0) + " free"
                        : "host memory cannot hold " + std::to_string(rounded) + " more bytes");
  };
  if (!pool) return out_of_memory();
  dev::Condition refused = dev::Condition::kOk;
  const Status made = DeviceMemory::create(rt_.device(), *phys, &refused);
  if (refused == dev::Condition::kOutOfMemory) return out_of_memory();
  ACLVMM_RETURN_IF_ERROR(made);
  uint64_t token = physical_.insert(std::move(phys));
  if (token == 0) {
    return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "too many live physical memory handles");
  }
  return token;
}

Status Vmm::free_physical(uint64_t handle) {
  auto& table = physical_;
  std::shared_ptr<PhysicalAllocation> doomed;  // destroyed after the lock is dropped
  {
    std::lock_guard lock(table.mutex());
    auto phys = table.find_locked(handle);
    if (!phys) return bad_handle();
    if (phys->map_ref != 0 && phys->ref <= phys->map_ref) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "the handle is still mapped and was already released; it is freed by its "
                   "last aclrtUnmapMem");
    }
    if (phys->ref > 1) {
      --phys->ref;
      return Status::Ok();
    }
    doomed = table.remove_locked(handle);
  }
  sharing_.forget_handle(handle);
  return Status::Ok();
}

StatusOr<PhysicalSpec> Vmm::properties(uint64_t handle) {
  auto phys = physical_.find(handle);
  if (!phys) return bad_handle();
  PhysicalSpec spec;
  spec.side = phys->side;
  spec.device = phys->reported_device >= 0 ? phys->reported_device : phys->device;
  spec.page_type = phys->page_type;
  spec.mem_type = phys->mem_type;
  spec.reserve = phys->reserve;
  return spec;
}

StatusOr<uint64_t> Vmm::retain(uint64_t va) {
  if (!rt_.svm_ready()) return no_device_opened();
  auto& table = physical_;
  for (;;) {
    ACLVMM_ASSIGN_OR_RETURN(const uint64_t handle, space_.mapping_handle(va));
    std::lock_guard lock(table.mutex());
    auto phys = table.find_locked(handle);
    if (phys) {
      ++phys->ref;
      return handle;
    }
    // Another thread unmapped the range and released the handle since the lookup: answer for
    // what the address holds now, not with the stale handle's 107000.
  }
}

Status Vmm::driver_granularity(const PhysicalSpec& spec, int option, uint64_t* out) {
  const std::shared_ptr<dev::DeviceBackend>& backend = rt_.device();
  if (!backend || !backend->capabilities().driver_reports_machine) return Status::Ok();
  dev::PhysicalSpec asked;
  asked.location = spec.side == Side::kDevice ? dev::Location::device(spec.device)
                   : spec.side == Side::kHost ? dev::Location::host()
                                              : dev::Location::host_numa(spec.device);
  asked.page_type = static_cast<dev::PageType>(spec.page_type);
  asked.mem_type = static_cast<dev::MemType>(spec.mem_type);
  const dev::Result r =
      backend->physical().granularity(asked, static_cast<dev::Granularity>(option), out);
  if (!r.ok()) return device_error(*backend, r, "the driver gave no granularity");
  return Status::Ok();
}

}  // namespace aclvmm::vmm
