// EmuUnified's migration model: residency changes, read copies, CPU access, NUMA placement,
// eviction, and the policy that device accesses, advice and prefetch apply (emulation.md §6).
#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/os/numa_binding.h"
#include "drivers/emu/unified/emu_unified.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kPage = kManagedPage;

bool is_device(Location l, DeviceIndex d) { return l == Location::device(d); }

}  // namespace

bool EmuUnified::cpu_keeps_access(const ManagedPage& p) const {
  if (p.resident == kNoDevice) return true;
  // Read copies stay readable everywhere; the host may be told to keep its mapping; a page that
  // prefers its device is reached by the CPU in place instead of being pulled back.
  return p.read_mostly || p.accessed_by_host ||
         is_device(p.preferred, p.resident);
}

void EmuUnified::sync_cpu_access(ManagedRange& r, size_t page) {
  if (!tracking_) return;
  ManagedPage& p = r.pages[page];
  const uint64_t va = r.base + page * kPage;
  const bool keep = cpu_keeps_access(p);
  if (keep && p.cpu_revoked) {
    (void)tracker_.resolve(va, kPage);
    p.cpu_revoked = false;
  } else if (!keep && !p.cpu_revoked) {
    // Protection lives in the page-table entries the revocation drops; a revoked page must come
    // back writable, so it is lifted first.
    if (p.write_protected) drop_read_copies(r, page);
    // Fault tracking hands the CPU existing pages only: allocate the page before revoking.
    (void)populate(*r.memory, page * kPage, kPage);
    (void)tracker_.revoke(va, kPage);
    p.cpu_revoked = true;
  }
}

void EmuUnified::add_read_copy(ManagedRange& r, size_t page, DeviceIndex device) {
  ManagedPage& p = r.pages[page];
  event("read_copy", r.base + page * kPage, device);
  p.read_copies |= 1ull << device;
  counters_.bytes_to_device.fetch_add(kPage);
  counters_.device_faults.fetch_add(1);
  if (p.write_protected || !write_tracking() || p.cpu_revoked) return;
  if (tracker_.protect_writes(r.base + page * kPage, kPage) == 0) p.write_protected = true;
}

void EmuUnified::drop_read_copies(ManagedRange& r, size_t page) {
  ManagedPage& p = r.pages[page];
  p.read_copies = 0;
  if (!p.write_protected) return;
  (void)tracker_.allow_writes(r.base + page * kPage, kPage);
  p.write_protected = false;
}

void EmuUnified::place_on_node(ManagedRange& r, size_t page, int node) {
  if (!host_numa_) return;  // ACLVMM_HOST_NUMA=off: a host without NUMA
  int rc = gated(steps::kEmuNumaBind);
  if (rc == 0) rc = os::bind_numa(r.base + page * kPage, kPage, node);
  if (rc == -EOPNOTSUPP) return;  // no NUMA: there is only one place
  if (rc != 0) {
    char line[128];
    std::snprintf(line, sizeof line, "managed page 0x%llx could not be placed on NUMA node %d "
                  "(errno %d)", static_cast<unsigned long long>(r.base + page * kPage), node, -rc);
    listener_.log(Severity::kWarning, "RUNTIME", line);
  }
}

Result EmuUnified::to_device(ManagedRange& r, size_t page, DeviceIndex device) {
  ManagedPage& p = r.pages[page];
  if (p.resident == device) return Result::success();
  if (!valid_device(device)) return Result::from_errno(EINVAL);
  for (;;) {
    const Result charged = ledger_.charge(Location::device(device), kPage);
    if (charged.ok()) break;
    if (charged.condition() != Condition::kOutOfMemory || !evict_one(device)) return charged;
  }
  const uint64_t va = r.base + page * kPage;
  if (p.resident != kNoDevice) {
    ledger_.uncharge(Location::device(p.resident), kPage);
    lru_.remove(p.resident, p.lru_stamp);
  }
  event(p.resident == kNoDevice ? "to_device" : "device_to_device", va, device);
  p.resident = device;
  p.lru_stamp = lru_.touch(device, 0, PageRef{&r, page});
  drop_read_copies(r, page);  // the page moved: every other copy is stale
  sync_cpu_access(r, page);
  counters_.bytes_to_device.fetch_add(kPage);
  return Result::success();
}

bool EmuUnified::to_host(ManagedRange& r, size_t page, bool eviction, uint64_t first) {
  ManagedPage& p = r.pages[page];
  if (p.resident == kNoDevice) return false;
  ledger_.uncharge(Location::device(p.resident), kPage);
  lru_.remove(p.resident, p.lru_stamp);
  p.lru_stamp = 0;
  event(eviction ? "eviction_to_host" : "to_host", r.base + page * kPage, p.resident);
  p.resident = kNoDevice;
  counters_.bytes_to_host.fetch_add(kPage);
  if (eviction) counters_.evictions.fetch_add(1);
  if (!p.cpu_revoked) return false;
  const uint64_t va = r.base + page * kPage;
  constexpr uint64_t kSmall = 4096;
  if (first >= va && first + kSmall <= va + kPage) {
    // The faulting thread's own 4 KiB first: one small UFFDIO_CONTINUE wakes it (mapping all 512
    // entries first made the fault 3x the raw round trip), then the rest of the page, which a
    // thread touching it meanwhile merely waits for (its fault finds the page on the host).
    (void)tracker_.resolve(first, kSmall);
    if (first > va) (void)tracker_.resolve(va, first - va);
    if (first + kSmall < va + kPage)
      (void)tracker_.resolve(first + kSmall, va + kPage - first - kSmall);
  } else {
    // The whole page was revoked and is populated: one ioctl gives the CPU all of it back.
    (void)tracker_.resolve(va, kPage);
  }
  p.cpu_revoked = false;
  if (p.preferred.kind == Location::Kind::kHostNuma) place_on_node(r, page, p.preferred.id);
  return true;
}

bool EmuUnified::evict_one(DeviceIndex device) {
  PageRef victim;
  if (!lru_.oldest(device, &victim)) return false;
  to_host(*victim.range, victim.index, true);
  return true;
}

Result EmuUnified::prepare(uint64_t va, uint64_t n, bool write, const Executor& who) {
  const DeviceIndex device = who.device;
  Lock lock(mu_);
  Pages pages;
  if (Result r = pages_of(va, n, &pages); !r.ok()) return r;
  if (!tracking_ || device == kNoDevice) return Result::success();
  if (!valid_device(device)) return Result::from_errno(EINVAL);
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
        p.preferred.kind != Location::Kind::kNone && !is_device(p.preferred, device);
    if (preferred_elsewhere || ((p.accessed_by >> device) & 1)) {
      // Reached in place; a write still makes every read copy stale.
      if (write && p.read_copies != 0) drop_read_copies(*r, i);
      continue;
    }
    counters_.device_faults.fetch_add(1);
    event("device_fault", r->base + i * kPage, device);
    if (Result moved = to_device(*r, i, device); !moved.ok()) return moved;
  }
  return Result::success();
}

Result EmuUnified::advise(uint64_t va, uint64_t size, ManagedAdvice advice, Location where) {
  const auto a = static_cast<uint8_t>(advice);
  if (a > static_cast<uint8_t>(ManagedAdvice::kUnsetAccessedBy)) return Result::from_errno(EINVAL);
  if (a >= static_cast<uint8_t>(ManagedAdvice::kPreferredLocation)) {
    const bool valid = (where.kind == Location::Kind::kDevice && valid_device(where.id)) ||
                       where.kind == Location::Kind::kHost ||
                       (where.kind == Location::Kind::kHostNuma && where.id >= 0 &&
                        where.id < std::max(numa_nodes_, 1));
    if (!valid) return Result::from_errno(EINVAL);
  }
  Lock lock(mu_);
  Pages pages;
  if (Result r = pages_of(va, size, &pages); !r.ok()) return r;
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    const bool was_numa = p.preferred.kind == Location::Kind::kHostNuma;
    switch (advice) {
      case ManagedAdvice::kReadMostly: p.read_mostly = true; break;
      case ManagedAdvice::kUnsetReadMostly:
        p.read_mostly = false;
        drop_read_copies(*r, i);
        break;
      case ManagedAdvice::kPreferredLocation: p.preferred = where; break;
      case ManagedAdvice::kUnsetPreferredLocation: p.preferred = Location{}; break;
      case ManagedAdvice::kAccessedBy:
      case ManagedAdvice::kUnsetAccessedBy:
        if (where.kind == Location::Kind::kDevice) {
          p.accessed_by = advice == ManagedAdvice::kAccessedBy
                              ? (p.accessed_by | (1ull << where.id))
                              : (p.accessed_by & ~(1ull << where.id));
        } else {
          p.accessed_by_host = advice == ManagedAdvice::kAccessedBy;
        }
        break;
    }
    sync_cpu_access(*r, i);
    // A preferred host NUMA node holds the page's host copy: future faults follow the policy
    // and pages already on the host move now.
    if (p.preferred.kind == Location::Kind::kHostNuma) {
      place_on_node(*r, i, p.preferred.id);
    } else if (was_numa) {
      place_on_node(*r, i, -1);
    }
  }
  return Result::success();
}

Result EmuUnified::prefetch(uint64_t va, uint64_t size, Location where) {
  const bool to_a_device = where.kind == Location::Kind::kDevice;
  if ((to_a_device && !valid_device(where.id)) ||
      (!to_a_device && where.kind != Location::Kind::kHost &&
       where.kind != Location::Kind::kHostNuma)) {
    return Result::from_errno(EINVAL);
  }
  Lock lock(mu_);
  Pages pages;
  if (Result r = pages_of(va, size, &pages); !r.ok()) return r;
  for (auto& [r, i] : pages) {
    ManagedPage& p = r->pages[i];
    p.last_prefetch = where;
    if (to_a_device) {
      if (!tracking_) continue;  // everything stays on the host and is reached in place
      if (p.resident == where.id) {
        p.lru_stamp = lru_.touch(where.id, p.lru_stamp, PageRef{r, i});
        continue;
      }
      if (Result moved = to_device(*r, i, where.id); !moved.ok()) return moved;
      counters_.prefetch_bytes.fetch_add(kPage);
      continue;
    }
    if (p.resident != kNoDevice) {
      to_host(*r, i, false);
      counters_.prefetch_bytes.fetch_add(kPage);
    }
    if (where.kind == Location::Kind::kHostNuma) place_on_node(*r, i, where.id);
  }
  return Result::success();
}

}  // namespace aclvmm::dev::emu
