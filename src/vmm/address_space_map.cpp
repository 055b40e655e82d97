// AddressSpace: mapping physical memory into reservations and the access rights of each mapping.
#include <mutex>

#include "base/hex.h"
#include "vmm/address_space.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

Status drv_error(const std::string& msg) { return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, msg); }

bool is_reservation(const Region& r) {
  return r.kind == RegionKind::kReservation || r.kind == RegionKind::kNoUcReservation;
}

dev::AccessGrant grant_of(const AccessChange& c) {
  dev::AccessGrant g;
  g.location = c.host ? dev::Location::host() : dev::Location::device(c.device);
  g.flags = static_cast<dev::Access>(c.flags);
  return g;
}

}  // namespace

Status AddressSpace::map(uint64_t va, uint64_t size, uint64_t handle,
                         std::shared_ptr<PhysicalAllocation> phys, bool no_access) {
  std::shared_lock tree(mu_);
  Region* r = find_region(va);
  auto own = write_mappings(r);
  if (!r || !is_reservation(*r)) {
    return drv_error(hex(va) + " is not inside a reservation made with aclrtReserveMemAddress");
  }
  // The device maps whole pages of the handle: 1 GiB pages need 1 GiB-aligned ranges.
  const uint64_t granule = phys->page_type == kHuge1GPage ? kGiB : kChunk;
  if (va % granule != 0 || size % granule != 0) {
    return drv_error("address " + hex(va) + " and size " + std::to_string(size) +
                     " must be multiples of the handle's " +
                     (granule == kGiB ? "1 GiB" : "2 MiB") + " granularity");
  }
  // va may lie past the usable size but inside the span (a reservation over 512 MiB is rounded up
  // to whole GiB): that is outside the reservation too, and must not wrap the length below
  // (tests/fuzz found such mappings accepted).
  if (va - r->base >= r->size || size > r->base + r->size - va) {
    return drv_error("mapping " + std::to_string(size) + " bytes at " + hex(va) +
                     " runs past the end of its reservation");
  }
  auto next = r->mappings.lower_bound(va);
  if (next != r->mappings.end() && next->first < va + size) {
    return drv_error("the range at " + hex(va) + " overlaps the mapping at " + hex(next->first));
  }
  if (next != r->mappings.begin()) {
    const Mapping& prev = std::prev(next)->second;
    if (prev.va + prev.size > va) {
      return drv_error("the range at " + hex(va) + " overlaps the mapping at " + hex(prev.va));
    }
  }
  if (r->bound && (r->bound_side != phys->side ||
                   (phys->side == Side::kDevice && r->bound_device != phys->device))) {
    return drv_error("the reservation at " + hex(r->base) +
                     " already maps memory of another location; one reservation serves one "
                     "location");
  }
  // An import whose size the driver does not report (hal: size 0) is checked by the driver.
  if (phys->size != 0 && size > phys->size) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 "mapping size " + std::to_string(size) + " exceeds the handle's physical size " +
                     std::to_string(phys->size));
  }
  Mapping m;
  m.va = va;
  m.size = size;
  m.handle = handle;
  m.phys = std::move(phys);
  m.created_by = no_access ? "aclrtMemMapNoAccess" : "aclrtMapMem";
  const bool device = m.phys->on_device();
  if (!no_access) {
    if (device) {
      m.access.set_device(m.phys->device, 3);
    } else {
      m.access.host = 3;
    }
  }
  // The device MMU programs the mapping (and, in emu, the CPU view host memory or open mode
  // needs); nothing is recorded when it fails.
  const dev::Result programmed =
      mmu_->map(va, size, m.phys->device_memory.id(), 0,
                no_access ? dev::InitialAccess::kNone : dev::InitialAccess::kOwnerReadWrite);
  if (!programmed.ok()) {
    return device_error(*device_, programmed, "the mapping at " + hex(va) + " could not be made");
  }
  r->bound = true;
  r->bound_side = m.phys->side;
  r->bound_device = m.phys->device;
  auto placed = r->mappings.emplace(va, std::move(m)).first;
  index_mapping(placed->second);
  return Status::Ok();
}

StatusOr<Mapping> AddressSpace::unmap(uint64_t va) {
  std::shared_lock tree(mu_);
  Region* r = find_region(va);
  auto own = write_mappings(r);
  auto it = (r && is_reservation(*r)) ? r->mappings.find(va) : decltype(r->mappings.end()){};
  if (!r || !is_reservation(*r) || it == r->mappings.end()) {
    return drv_error(hex(va) + " is not the start of a mapping");
  }
  // A mapping the device MMU cannot remove (its CPU view stays) stays recorded as well.
  const dev::Result removed = mmu_->unmap(va, it->second.size);
  if (!removed.ok()) {
    return device_error(*device_, removed, "the mapping at " + hex(va) + " could not be removed");
  }
  Mapping m = std::move(it->second);
  index_.clear(m.va, m.size);
  r->mappings.erase(it);
  return m;
}

StatusOr<uint64_t> AddressSpace::mapping_handle(uint64_t va) const {
  std::shared_lock tree(mu_);
  const Region* r = find_region(va);
  auto own = read_mappings(r);
  if (!r || !is_reservation(*r)) return drv_error(hex(va) + " is not a mapped address");
  auto it = r->mappings.upper_bound(va);
  if (it == r->mappings.begin() || va - std::prev(it)->second.va >= std::prev(it)->second.size) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, hex(va) + " is reserved but nothing is mapped there");
  }
  const Mapping& m = std::prev(it)->second;
  if (m.va != va) {
    return drv_error(hex(va) + " is inside the mapping at " + hex(m.va) +
                     "; pass the start address of the mapping");
  }
  return m.handle;
}

Status AddressSpace::set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes,
                                bool quirks) {
  std::shared_lock tree(mu_);
  Region* r = find_region(va);
  auto own = write_mappings(r);
  auto it = (r && is_reservation(*r)) ? r->mappings.find(va) : decltype(r->mappings.end()){};
  if (!r || !is_reservation(*r) || it == r->mappings.end() || it->second.size != size) {
    return drv_error("(" + hex(va) + ", " + std::to_string(size) +
                     ") is not exactly one mapping; access is set per whole mapping");
  }
  Mapping& m = it->second;
  const AccessRights before = m.access;
  dev::AccessGrant grants[AccessRights::kMaxDevices + 1];
  size_t count = 0;
  for (const AccessChange& c : changes) {
    const bool owner = m.phys->on_device() ? (!c.host && c.device == m.phys->device) : c.host;
    int current = c.host ? m.access.host : m.access.device(c.device);
    if (quirks) {
      if (owner) continue;  // the vendor driver leaves the owner's access alone
      if (current != 0 && current != c.flags) {
        m.access = before;
        return drv_error("access for this location is already set to another value");
      }
    }
    if (c.host) {
      m.access.host = static_cast<uint8_t>(c.flags);
    } else {
      m.access.set_device(c.device, c.flags);
    }
    // One grant per location, with its final flags (a location named twice: the last wins).
    // Ids past the masks have no access and get none, here as in AccessRights.
    if (!c.host && (c.device < 0 || c.device >= AccessRights::kMaxDevices)) continue;
    const dev::AccessGrant g = grant_of(c);
    size_t i = 0;
    while (i < count && grants[i].location != g.location) ++i;
    if (i == count) ++count;
    grants[i] = g;
  }
  size_t applied = 0;
  const dev::Result set = mmu_->set_access(va, size, grants, count, &applied);
  if (!set.ok()) {
    // All or nothing for the application: the grants that took effect are undone.
    dev::AccessGrant undo[AccessRights::kMaxDevices + 1];
    for (size_t i = 0; i < applied; ++i) {
      const dev::Location l = grants[i].location;
      const int flags = l.kind == dev::Location::Kind::kHost ? before.host : before.device(l.id);
      undo[i] = dev::AccessGrant{l, static_cast<dev::Access>(flags)};
    }
    size_t undone = 0;
    if (applied != 0) (void)mmu_->set_access(va, size, undo, applied, &undone);
    m.access = before;
    return device_error(*device_, set, "the access of the mapping at " + hex(va) + " could not be set");
  }
  return Status::Ok();
}

StatusOr<int> AddressSpace::grant_peer(uint64_t va, uint64_t size, int device) {
  std::shared_lock tree(mu_);
  Region* r = find_region(va);
  auto own = write_mappings(r);
  if (!r || r->kind == RegionKind::kHostPinned) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, hex(va) + " is not device memory");
  }
  if (r->kind == RegionKind::kDeviceMalloc || r->kind == RegionKind::kIpcImport) return r->device;
  if (va - r->base >= r->size || size > r->base + r->size - va) {  // as in map(): no wrap-around
    return Error(ACL_ERROR_RT_PARAM_INVALID, "the range runs past its reservation");
  }
  auto overlaps = [&](const Mapping& m) {
    return m.va + m.size > va && m.va < va + size && m.phys->on_device();
  };
  size_t granted = 0;
  for (const auto& [start, m] : r->mappings) granted += overlaps(m);
  if (granted == 0) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "no device memory is mapped in the range at " + hex(va));
  }
  // The device MMU gives the rights first (the core found a device mapping, as it requires), so
  // that a refusal leaves the records as they were. Ids past the masks get nothing anywhere.
  if (device < 0 || device >= AccessRights::kMaxDevices) return -1;
  if (const dev::Result g = mmu_->grant_peer(va, size, device); !g.ok()) {
    return device_error(*device_, g, "peer access to the range at " + hex(va) + " could not be given");
  }
  for (auto& [start, m] : r->mappings) {
    if (overlaps(m)) m.access.set_device(device, 3);
  }
  return -1;
}

StatusOr<int> AddressSpace::get_access(uint64_t va, bool host, int device) const {
  std::shared_lock tree(mu_);
  const Region* r = find_region(va);
  auto own = read_mappings(r);
  if (!r || !is_reservation(*r)) return drv_error(hex(va) + " is not a mapped address");
  auto it = r->mappings.upper_bound(va);
  if (it == r->mappings.begin() || va >= std::prev(it)->second.va + std::prev(it)->second.size) {
    return drv_error(hex(va) + " is not inside a mapping");
  }
  const Mapping& m = std::prev(it)->second;
  return host ? static_cast<int>(m.access.host) : m.access.device(device);
}

}  // namespace aclvmm
