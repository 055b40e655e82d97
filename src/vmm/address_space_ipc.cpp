// AddressSpace: what IPC memory by key needs of the address space (runtime-extra.md §3.2, §3.5):
// which memory an export names, and the regions imports live in.
#include <algorithm>
#include <mutex>

#include "base/hex.h"
#include "vmm/address_space.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

Status refused(const std::string& why) { return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, why); }

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

StatusOr<IpcSource> AddressSpace::ipc_source(uint64_t va, uint64_t size) const {
  if (layout_.managed.contains(va)) {
    return refused(hex(va) + " is managed memory, which cannot be exported by key");
  }
  std::shared_lock tree(mu_);
  const Region* r = find_region(va);
  auto own = read_mappings(r);
  if (r == nullptr) {
    return refused(hex(va) + " is not device memory of this process");
  }
  IpcSource src;
  switch (r->kind) {
    case RegionKind::kHostPinned:
      return refused(hex(va) +
                     " is host memory (aclrtMallocHost), which cannot be exported by key");
    case RegionKind::kIpcImport:
      return refused(hex(va) + " is itself imported by IPC key");
    case RegionKind::kDeviceMalloc:
      if (!r->block_memory)
        return refused("the block at " + hex(r->base) + " has no memory to export");
      src.memory = r->block_memory;
      src.offset = va - r->base;
      src.page_size = r->page_size;
      src.device = r->device;
      src.allocation = r->base;
      src.allocation_size = r->size;
      break;
    default: {
      auto it = r->mappings.upper_bound(va);
      const Mapping* m = it == r->mappings.begin() ? nullptr : &std::prev(it)->second;
      if (m == nullptr || va - m->va >= m->size) {
        return refused(hex(va) + " is reserved but nothing is mapped there");
      }
      if (!m->phys->on_device()) {
        return refused(hex(va) + " maps host memory, which cannot be exported by key");
      }
      if (m->phys->imported) {
        return refused(hex(va) + " maps memory imported from a shareable handle");
      }
      src.memory = m->phys->device_memory.id();
      src.offset = va - m->va;
      src.page_size = static_cast<uint32_t>(kChunk);
      src.device = m->phys->device;
      src.allocation = m->va;
      src.allocation_size = m->size;
      break;
    }
  }
  if (src.offset % src.page_size != 0) {
    return refused(hex(va) + " is not aligned to the memory's page size (" +
                   std::to_string(src.page_size) + " bytes)");
  }
  const uint64_t inside = va - src.allocation;
  if (size > src.allocation_size - inside) {
    return refused("the range of " + std::to_string(size) + " bytes at " + hex(va) +
                   " leaves its allocation (" + std::to_string(src.allocation_size) + " bytes at " +
                   hex(src.allocation) + ")");
  }
  return src;
}

StatusOr<uint64_t> AddressSpace::add_ipc_import(const dev::IpcImported& imported,
                                                std::shared_ptr<PhysicalAllocation> phys,
                                                int device) {
  const uint64_t granule = imported.page_size > kChunk ? imported.page_size : kChunk;
  // The whole granules the key's range touches are reserved; they are mapped up to the memory's
  // end (a block of 4 KiB pages may be smaller than a granule). The address is the range's start.
  const uint64_t first = imported.offset / granule * granule;
  const uint64_t lead = imported.offset - first;
  const uint64_t reserved = round_up(lead + imported.size, granule);
  const uint64_t object = imported.memory.properties.size;
  if (imported.size == 0 || reserved < imported.size || first > object ||
      lead + imported.size > object - first) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the imported range does not fit its memory");
  }
  const uint64_t mapped = std::min(reserved, object - first);
  std::unique_lock lock(mu_);
  if (windows_ == nullptr || mmu_ == nullptr) {
    return Error(kAclInternalError, "no device backend gives this runtime its address windows");
  }
  dev::ReserveRequest request;
  request.size = reserved;
  request.alignment = granule;
  uint64_t window_base = 0;
  if (dev::Result r = windows_->reserve(request, &window_base); !r.ok()) {
    return device_error(*device_, r,
                        "no room for " + std::to_string(reserved) +
                            " bytes of imported memory in the device window");
  }
  const dev::PhysicalId memory = imported.memory.memory;
  if (dev::Result r =
          mmu_->map(window_base, mapped, memory, first, dev::InitialAccess::kOwnerReadWrite);
      !r.ok()) {
    (void)windows_->release(window_base, reserved);
    return device_error(*device_, r, "the imported memory could not be mapped");
  }
  const dev::AccessGrant grant{dev::Location::device(device), dev::Access::kReadWrite};
  size_t applied = 0;
  if (dev::Result r = mmu_->set_access(window_base, mapped, &grant, 1, &applied); !r.ok()) {
    (void)mmu_->unmap(window_base, mapped);
    (void)windows_->release(window_base, reserved);
    return device_error(*device_, r, "the imported memory could not be made accessible");
  }
  const uint64_t base = window_base + lead;
  try {
    auto region = std::make_unique<Region>();
    region->kind = RegionKind::kIpcImport;
    region->base = base;
    region->size = imported.size;
    region->span = imported.size;  // lookups past the range find nothing
    region->requested = imported.size;
    region->device = device;
    region->page_size = imported.page_size;
    region->created_by = "aclrtIpcMemImportByKey";
    region->window_base = window_base;
    region->window_size = reserved;
    region->mapped_size = mapped;
    Mapping m;
    m.va = base;
    m.size = imported.size;
    m.phys = std::move(phys);
    m.access.set_device(device, 3);
    m.created_by = "aclrtIpcMemImportByKey";
    region->mappings.emplace(base, std::move(m));
    index_malloc(*region);
    regions_.emplace(base, std::move(region));
  } catch (const std::bad_alloc&) {
    index_.clear(base, imported.size);
    (void)mmu_->unmap(window_base, mapped);
    (void)windows_->release(window_base, reserved);
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the import");
  }
  return base;
}

Status AddressSpace::remove_ipc_import(uint64_t base) {
  std::unique_ptr<Region> region;
  {
    std::unique_lock lock(mu_);
    auto it = regions_.find(base);
    if (it == regions_.end() || it->second->kind != RegionKind::kIpcImport) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, hex(base) + " is not an IPC import");
    }
    Region& r = *it->second;
    if (dev::Result u = mmu_->unmap(r.window_base, r.mapped_size); !u.ok()) {
      return device_error(*device_, u, "the import at " + hex(base) + " could not be unmapped");
    }
    unindex(r);
    (void)windows_->release(r.window_base, r.window_size);
    region = std::move(it->second);
    regions_.erase(it);
  }
  // The region (and the backend's object it holds) goes with the locks released.
  return Status::Ok();
}

}  // namespace aclvmm
