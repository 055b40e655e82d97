// AddressSpace: lookups (pointer queries, address ranges) and the device-side translation that
// memcpy, memset and emulated kernels use.
#include <mutex>

#include "base/hex.h"
#include "vmm/address_space.h"

namespace aclvmm {
namespace {

bool is_reservation(const Region& r) {
  return r.kind == RegionKind::kReservation || r.kind == RegionKind::kNoUcReservation;
}

// The mapping of `r` that contains va, or nullptr.
const Mapping* mapping_at(const Region& r, uint64_t va) {
  auto it = r.mappings.upper_bound(va);
  if (it == r.mappings.begin()) return nullptr;
  const Mapping& m = std::prev(it)->second;
  return va - m.va < m.size ? &m : nullptr;
}

}  // namespace

StatusOr<AddressRange> AddressSpace::address_range(uint64_t ptr) const {
  const ChunkEntry e = index_.lookup(ptr);  // lock-free; empty sends us to the trees
  if (e.kind != ChunkEntry::kEmpty && e.range_exact) return AddressRange{e.range_base, e.range_size};
  std::shared_lock tree(mu_);
  const Region* r = find_region(ptr);
  auto own = read_mappings(r);
  if (r && !is_reservation(*r)) {
    // Allocations that own whole 1 GiB heaps report the heap extent, as the driver does.
    const uint64_t extent = r->span >= kGiB ? r->span : r->size;
    if (ptr - r->base < extent) return AddressRange{r->base, extent};
  } else if (r) {
    if (const Mapping* m = mapping_at(*r, ptr)) return AddressRange{m->va, m->size};
    return Error(ACL_ERROR_RT_PARAM_INVALID, hex(ptr) + " is reserved but not mapped");
  }
  return Error(ACL_ERROR_RT_PARAM_INVALID, hex(ptr) + " is not inside any allocation");
}

StatusOr<PointerInfo> AddressSpace::pointer_info(uint64_t ptr, size_t host_page) const {
  const ChunkEntry e = index_.lookup(ptr);  // lock-free; empty sends us to the trees
  if (e.kind != ChunkEntry::kEmpty) {
    PointerInfo info;
    info.kind = e.kind == ChunkEntry::kDevice ? PointerInfo::kDevice : PointerInfo::kHost;
    info.device = e.device;
    info.page_size = e.page_shift ? 1u << e.page_shift : static_cast<uint32_t>(host_page);
    return info;
  }
  std::shared_lock tree(mu_);
  const Region* r = find_region(ptr);
  auto own = read_mappings(r);
  PointerInfo info;
  if (!r) {
    if (in_windows(ptr)) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, hex(ptr) + " is not allocated");
    }
    info.kind = PointerInfo::kUnregistered;
    info.page_size = static_cast<uint32_t>(host_page);
    return info;
  }
  // Past the end of a malloc block but inside its rounded span: not allocated.
  if (!(r->kind == RegionKind::kReservation || r->kind == RegionKind::kNoUcReservation) &&
      ptr - r->base >= r->size) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, hex(ptr) + " is not allocated");
  }
  switch (r->kind) {
    case RegionKind::kHostPinned:
      info.kind = PointerInfo::kHost;
      info.page_size = static_cast<uint32_t>(host_page);
      return info;
    case RegionKind::kDeviceMalloc:
    case RegionKind::kIpcImport:
      info.kind = PointerInfo::kDevice;
      info.device = r->device;
      info.page_size = r->page_size;
      return info;
    default:
      break;
  }
  const Mapping* m = mapping_at(*r, ptr);
  if (!m) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, hex(ptr) + " is reserved but nothing is mapped there");
  }
  if (m->phys->on_device()) {
    info.kind = PointerInfo::kDevice;
    info.device = m->phys->device;
    info.page_size = static_cast<uint32_t>(kChunk);
  } else {
    info.kind = PointerInfo::kHost;
    info.page_size = static_cast<uint32_t>(host_page);
  }
  return info;
}

Status AddressSpace::check_device_access(uint64_t va, uint64_t n, bool write,
                                          const Accessor& who) const {
  std::shared_lock tree(mu_);
  const Region* r = find_region(va);
  auto own = read_mappings(r);
  if (!r) {
    if (in_windows(va)) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, hex(va) + " is not allocated device memory");
    }
    return Status::Ok();  // plain process memory: the CPU path
  }
  if (n > r->base + r->span - va) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the range of " + std::to_string(n) +
                                                      " bytes at " + hex(va) +
                                                      " runs past the end of its allocation");
  }
  if (r->kind == RegionKind::kHostPinned) {
    if (n > r->base + r->size - va) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the range at " + hex(va) +
                                                        " runs past its aclrtMallocHost block");
    }
    return Status::Ok();
  }
  uint64_t cur = va, left = n;
  const Mapping* m = mapping_at(*r, cur);
  auto it = m ? r->mappings.find(m->va) : r->mappings.end();
  while (left > 0) {
    if (it == r->mappings.end() || cur < it->second.va || cur - it->second.va >= it->second.size) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "the range at " + hex(va) + " is not fully mapped (nothing at " + hex(cur) + ")");
    }
    const Mapping& mm = it->second;
    if (!mm.phys->on_device() && r->kind != RegionKind::kDeviceMalloc) {
      // Devices reach host memory through its host mapping, so the HOST rights govern them too.
      const int flags = mm.access.host;
      if (write ? flags != 3 : (flags & 1) == 0) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     std::string("the host memory at ") + hex(cur) + " may not be " +
                         (write ? "written" : "read") + " (its access was not granted)");
      }
    }
    if (mm.phys->on_device()) {
      if (who.device < 0) {
        return Error(ACL_ERROR_RT_CONTEXT_NULL,
                     "device memory at " + hex(cur) + " needs a current context (aclrtSetDevice)");
      }
      const int flags = mm.access.device(who.device);
      const bool peer = r->kind == RegionKind::kDeviceMalloc &&
                        ((who.peer_mask >> mm.phys->device) & 1);
      if (!peer && (write ? flags != 3 : (flags & 1) == 0)) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "device " + std::to_string(who.device) + " may not " +
                         (write ? "write" : "read") + " the memory at " + hex(cur) +
                         " (mapped for device " + std::to_string(mm.phys->device) + ")");
      }
    }
    const uint64_t len = std::min(left, mm.size - (cur - mm.va));
    cur += len;
    left -= len;
    ++it;
  }
  return Status::Ok();
}

}  // namespace aclvmm
