// ManagedMemory's migration model: residency changes, read copies, CPU access, NUMA placement,
// eviction, and the policy that device accesses, advice and prefetch apply (emulation.md §6).
#include <algorithm>

#include "observability/log.h"
#include "observability/trace.h"
#include "vmm/managed.h"

namespace aclvmm {
namespace {

constexpr uint64_t kPage = kManagedPage;

}  // namespace

bool ManagedMemory::cpu_keeps_access(const ManagedPage& p) const {
  if (p.resident == kHostResident) return true;
  // Read copies stay readable everywhere; the host may be told to keep its mapping; a page that
  // prefers its device is reached by the CPU in place instead of being pulled back.
  return p.read_mostly || p.accessed_by_host ||
         (p.preferred.type == 1 && p.preferred.id == p.resident);
}

void ManagedMemory::sync_cpu_access(ManagedRange& r, size_t page) {
  if (!tracking_) return;
  ManagedPage& p = r.pages[page];
  const uint64_t va = r.base + page * kPage;
  const bool keep = cpu_keeps_access(p);
  if (keep && p.cpu_revoked) {
    tracker_->resolve(va, kPage);
    p.cpu_revoked = false;
  } else if (!keep && !p.cpu_revoked) {
    // Protection lives in the page-table entries the revocation drops; a revoked page must come
    // back writable, so it is lifted first.
    if (p.write_protected) drop_read_copies(r, page);
    // Fault tracking hands the CPU existing pages only: allocate the page before revoking.
    r.memory->populate(page * kPage, kPage);
    tracker_->revoke(va, kPage);
    p.cpu_revoked = true;
  }
}

void ManagedMemory::add_read_copy(ManagedRange& r, size_t page, int device) {
  ManagedPage& p = r.pages[page];
  trace::event("read_copy", r.base + page * kPage, device);
  p.read_copies |= 1ull << device;
  stats_.bytes_to_device.fetch_add(kPage);
  stats_.device_faults.fetch_add(1);
  if (p.write_protected || !write_tracking() || p.cpu_revoked) return;
  if (tracker_->protect_writes(r.base + page * kPage, kPage) == 0) p.write_protected = true;
}

void ManagedMemory::drop_read_copies(ManagedRange& r, size_t page) {
  ManagedPage& p = r.pages[page];
  p.read_copies = 0;
  if (!p.write_protected) return;
  tracker_->allow_writes(r.base + page * kPage, kPage);
  p.write_protected = false;
}

void ManagedMemory::place_on_node(ManagedRange& r, size_t page, int node) {
  if (!devices_.host_numa()) return;  // ACLVMM_HOST_NUMA=off: a host without NUMA
  const int rc = backend_->bind_numa(r.base + page * kPage, kPage, node);
  if (rc == -EOPNOTSUPP) return;  // no NUMA: there is only one place
  if (rc != 0) {
    ACLVMM_LOG_WARN("RUNTIME", "managed page 0x{:x} could not be placed on NUMA node {} (errno {})",
                    r.base + page * kPage, node, -rc);
  }
}

Status ManagedMemory::to_device(ManagedRange& r, size_t page, int device) {
  ManagedPage& p = r.pages[page];
  if (p.resident == device) return Status::Ok();
  auto pool = devices_.pool(device);
  if (!pool) return Error(ACL_ERROR_RT_INVALID_DEVICEID, "no such device");
  while (!pool->charge(kPage)) {
    if (!evict_one(device)) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                   fmt::format("device {} has no room for a managed page", device));
    }
  }
  const uint64_t va = r.base + page * kPage;
  if (p.resident != kHostResident) {
    if (auto old = devices_.pool(p.resident)) old->uncharge(kPage);
    lru_.remove(p.resident, p.lru_stamp);
  }
  trace::event(p.resident == kHostResident ? "to_device" : "device_to_device", va, device);
  p.resident = device;
  p.lru_stamp = lru_.touch(device, 0, PageRef{&r, page});
  drop_read_copies(r, page);  // the page moved: every other copy is stale
  sync_cpu_access(r, page);
  stats_.bytes_to_device.fetch_add(kPage);
  return Status::Ok();
}

bool ManagedMemory::to_host(ManagedRange& r, size_t page, bool eviction) {
  ManagedPage& p = r.pages[page];
  if (p.resident == kHostResident) return false;
  if (auto pool = devices_.pool(p.resident)) pool->uncharge(kPage);
  lru_.remove(p.resident, p.lru_stamp);
  p.lru_stamp = 0;
  trace::event(eviction ? "eviction_to_host" : "to_host", r.base + page * kPage, p.resident);
  p.resident = kHostResident;
  stats_.bytes_to_host.fetch_add(kPage);
  if (eviction) stats_.evictions.fetch_add(1);
  if (!p.cpu_revoked) return false;
  // The whole page was revoked and is populated: one ioctl gives the CPU all of it back.
  tracker_->resolve(r.base + page * kPage, kPage);
  p.cpu_revoked = false;
  if (p.preferred.type == 3) place_on_node(r, page, p.preferred.id);
  return true;
}

bool ManagedMemory::evict_one(int device) {
  PageRef victim;
  if (!lru_.oldest(device, &victim)) return false;
  to_host(*victim.range, victim.index, true);
  return true;
}

Status ManagedMemory::device_access(uint64_t va, uint64_t n, int device, bool write,
                                    Translation* out) {
  out->cpu = false;
  out->segments.clear();
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, n, &pages));
  if (tracking_ && device >= 0) {
    for (auto& [r, i] : pages) {
      ManagedPage& p = r->pages[i];
      if (p.resident == device) {
        p.lru_stamp = lru_.touch(device, p.lru_stamp, PageRef{r, i});
        continue;
      }
      if (p.read_mostly && !write) {
        // A read copy: the page stays where it is and the device reads its own copy.
        if (!((p.read_copies >> device) & 1)) add_read_copy(*r, i, device);
        continue;
      }
      const bool preferred_elsewhere =
          p.preferred.type != 0 && !(p.preferred.type == 1 && p.preferred.id == device);
      if (preferred_elsewhere || ((p.accessed_by >> device) & 1)) {
        // Reached in place; a write still makes every read copy stale.
        if (write && p.read_copies != 0) drop_read_copies(*r, i);
        continue;
      }
      stats_.device_faults.fetch_add(1);
      trace::event("device_fault", r->base + i * kPage, device);
      ACLVMM_RETURN_IF_ERROR(to_device(*r, i, device));
    }
  }
  // One copy of the bytes: the segments are the memfd ranges, whatever the residency.
  uint64_t cur = va, left = n;
  while (left > 0) {
    ManagedRange* r = find(cur);
    if (!r) return not_allocated(cur);
    uint64_t len = std::min(left, r->base + r->size - cur);
    out->segments.push_back(Segment{r->memory, cur - r->base, len});
    cur += len;
    left -= len;
  }
  return Status::Ok();
}

Status ManagedMemory::advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where) {
  const bool needs_location = advice >= 2;
  if (needs_location) {
    const int nodes = devices_.host_numa() ? backend_->numa_node_count() : 0;
    const bool valid = where.type == 1 || where.type == 2 ||
                       (where.type == 3 && where.id >= 0 && where.id < std::max(nodes, 1));
    if (!valid) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("location type {} id {} is not valid for this advice", where.type,
                               where.id));
    }
  }
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    const bool was_numa = p.preferred.type == 3;
    switch (advice) {
      case 0: p.read_mostly = true; break;
      case 1:
        p.read_mostly = false;
        drop_read_copies(*r, i);
        break;
      case 2: p.preferred = where; break;
      case 3: p.preferred = ManagedLocation{}; break;
      case 4:
      case 5:
        if (where.type == 1) {
          p.accessed_by = advice == 4 ? (p.accessed_by | (1ull << where.id))
                                      : (p.accessed_by & ~(1ull << where.id));
        } else {
          p.accessed_by_host = advice == 4;
        }
        break;
      default: break;
    }
    sync_cpu_access(*r, i);
    // A preferred host NUMA node holds the page's host copy: future faults follow the policy
    // and pages already on the host move now.
    if (p.preferred.type == 3) {
      place_on_node(*r, i, p.preferred.id);
    } else if (was_numa) {
      place_on_node(*r, i, -1);
    }
  }
  return Status::Ok();
}

Status ManagedMemory::prefetch(uint64_t va, uint64_t size, const ManagedLocation& where) {
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    p.last_prefetch = where;
    if (where.type == 1) {
      if (!tracking_) continue;  // everything stays on the host and is reached in place
      if (p.resident == where.id) {
        p.lru_stamp = lru_.touch(where.id, p.lru_stamp, PageRef{r, i});
        continue;
      }
      ACLVMM_RETURN_IF_ERROR(to_device(*r, i, where.id));
      stats_.prefetch_bytes.fetch_add(kPage);
      continue;
    }
    if (p.resident != kHostResident) {
      to_host(*r, i, false);
      stats_.prefetch_bytes.fetch_add(kPage);
    }
    if (where.type == 3) place_on_node(*r, i, where.id);
  }
  return Status::Ok();
}

}  // namespace aclvmm
