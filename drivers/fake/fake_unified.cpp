#include "drivers/fake/fake_unified.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

namespace aclvmm::dev::fake {
namespace {

using Lock = std::lock_guard<std::mutex>;

// ACL's aclrtMemManagedLocationType numbering, which the *_TYPE attributes report.
constexpr int32_t kTypeInvalid = 0, kTypeDevice = 1, kTypeHost = 2, kTypeHostNuma = 3;
constexpr int32_t kHostProcessor = -1, kMixed = -2;

int32_t acl_type(Location l) {
  switch (l.kind) {
    case Location::Kind::kDevice: return kTypeDevice;
    case Location::Kind::kHost: return kTypeHost;
    case Location::Kind::kHostNuma: return kTypeHostNuma;
    default: return kTypeInvalid;
  }
}

int32_t processor(Location l) {
  if (l.kind == Location::Kind::kDevice) return l.id;
  return l.kind == Location::Kind::kNone ? kMixed : kHostProcessor;
}

}  // namespace

FakeUnified::~FakeUnified() {
  Lock lock(machine_.mutex());
  for (auto& [base, r] : ranges_) {
    for (Page& p : r->pages) {
      if (p.resident != kNoDevice) machine_.uncharge(Location::device(p.resident), kPage);
    }
  }
}

FakeUnified::Range* FakeUnified::find(uint64_t va) const {
  auto it = ranges_.upper_bound(va);
  if (it == ranges_.begin()) return nullptr;
  --it;
  Range* r = it->second.get();
  return va - r->base < r->bytes.size() ? r : nullptr;
}

Result FakeUnified::pages_of(uint64_t va, uint64_t size, Pages* out) const {
  out->clear();
  if (size == 0 || va + size < va) return Result::from_errno(EFAULT);
  for (uint64_t page = va / kPage * kPage; page < va + size; page += kPage) {
    Range* r = find(page);
    if (r == nullptr) {
      out->clear();
      return Result::from_errno(EFAULT);
    }
    out->push_back(PageRef{r, static_cast<size_t>((page - r->base) / kPage)});
  }
  return Result::success();
}

bool FakeUnified::in_window(uint64_t va) const {
  return va - machine_.config().managed_window < machine_.config().managed_window_size;
}

ManagedTracking FakeUnified::tracking() const {
  Lock lock(machine_.mutex());
  return ManagedTracking{residency(), cpu_writes()};
}

void FakeUnified::event(const char* what, uint64_t va, DeviceIndex device) {
  machine_.listener().residency_event(ResidencyEvent{what, va, device});
}

Result FakeUnified::bad_device(DeviceIndex device) {
  return machine_.valid_device(device) ? Result::success()
                                       : machine_.violation("managed: no such device");
}

Result FakeUnified::allocate(uint64_t size, uint64_t* address) {
  Lock lock(machine_.mutex());
  if (size == 0 || size % kPage != 0 || address == nullptr) {
    return machine_.violation("managed allocate: size not whole 2 MiB pages");
  }
  tracked_ = true;
  // First fit: the same calls give the same addresses.
  const uint64_t window = machine_.config().managed_window;
  const uint64_t end = window + machine_.config().managed_window_size;
  uint64_t cursor = window;
  for (const auto& [base, r] : ranges_) {
    if (base - cursor >= size) break;
    cursor = base + r->bytes.size();
  }
  if (end - cursor < size) return Result::from_errno(ENOMEM);
  try {
    ranges_.emplace(cursor, std::make_unique<Range>(cursor, size));
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
  *address = cursor;
  return Result::success();
}

Result FakeUnified::free(uint64_t address, FreeMode) {
  Lock lock(machine_.mutex());
  auto it = ranges_.find(address);
  if (it == ranges_.end()) return machine_.violation("managed free: not a range's base");
  // Released, not migrated: device charges go back and nothing is counted.
  for (Page& p : it->second->pages) {
    if (p.resident == kNoDevice) continue;
    machine_.uncharge(Location::device(p.resident), kPage);
    lru_[p.resident].erase(p.lru_stamp);
  }
  ranges_.erase(it);
  return Result::success();
}

bool FakeUnified::cpu_keeps_access(const Page& p) const {
  if (p.resident == kNoDevice) return true;
  return p.read_mostly || p.accessed_by_host || p.preferred == Location::device(p.resident);
}

void FakeUnified::sync_cpu_access(Page& p) {
  if (!residency()) return;
  const bool keep = cpu_keeps_access(p);
  if (keep && p.cpu_revoked) {
    p.cpu_revoked = false;
  } else if (!keep && !p.cpu_revoked) {
    drop_read_copies(p);  // a revoked page comes back writable
    p.cpu_revoked = true;
  }
}

void FakeUnified::add_read_copy(Page& p, uint64_t va, DeviceIndex device) {
  event("read_copy", va, device);
  p.read_copies |= uint64_t{1} << device;
  counters_.bytes_to_device += kPage;
  ++counters_.device_faults;
  if (cpu_writes() && !p.cpu_revoked) p.write_protected = true;
}

Result FakeUnified::to_device(Range& r, size_t index, DeviceIndex device) {
  Page& p = r.pages[index];
  if (p.resident == device) return Result::success();
  for (;;) {
    Result charged = machine_.charge(Location::device(device), kPage);
    if (charged.ok()) break;
    if (charged.condition() != Condition::kOutOfMemory || lru_[device].empty()) return charged;
    const PageRef victim = lru_[device].begin()->second;
    to_host(*victim.range, victim.index, true);
  }
  const uint64_t va = r.base + index * kPage;
  if (p.resident != kNoDevice) {
    machine_.uncharge(Location::device(p.resident), kPage);
    lru_[p.resident].erase(p.lru_stamp);
  }
  event(p.resident == kNoDevice ? "to_device" : "device_to_device", va, device);
  p.resident = device;
  p.lru_stamp = ++clock_;
  lru_[device].emplace(p.lru_stamp, PageRef{&r, index});
  drop_read_copies(p);  // the page moved: every other copy is stale
  sync_cpu_access(p);
  counters_.bytes_to_device += kPage;
  return Result::success();
}

void FakeUnified::to_host(Range& r, size_t index, bool eviction) {
  Page& p = r.pages[index];
  if (p.resident == kNoDevice) return;
  machine_.uncharge(Location::device(p.resident), kPage);
  lru_[p.resident].erase(p.lru_stamp);
  p.lru_stamp = 0;
  event(eviction ? "eviction_to_host" : "to_host", r.base + index * kPage, p.resident);
  p.resident = kNoDevice;
  p.cpu_revoked = false;
  counters_.bytes_to_host += kPage;
  if (eviction) ++counters_.evictions;
}

Result FakeUnified::reach_locked(uint64_t va, uint64_t left, bool write, const Executor& who,
                                 ByteStore** bytes, uint64_t* offset, uint64_t* length) {
  Range* r = find(va);
  if (r == nullptr) return Result::from_errno(EFAULT);
  const uint64_t n = std::min(left, r->base + r->bytes.size() - va);
  const DeviceIndex d = who.device;
  if (d != kNoDevice) {
    if (Result b = bad_device(d); !b.ok()) return b;
  }
  if (residency() && d != kNoDevice) {
    for (uint64_t page = va / kPage * kPage; page < va + n; page += kPage) {
      const size_t i = (page - r->base) / kPage;
      Page& p = r->pages[i];
      if (p.resident == d) {
        lru_[d].erase(p.lru_stamp);
        p.lru_stamp = ++clock_;
        lru_[d].emplace(p.lru_stamp, PageRef{r, i});
        continue;
      }
      if (p.read_mostly && !write) {
        if (!((p.read_copies >> d) & 1)) add_read_copy(p, page, d);
        continue;
      }
      const bool preferred_elsewhere =
          p.preferred.kind != Location::Kind::kNone && p.preferred != Location::device(d);
      if (preferred_elsewhere || ((p.accessed_by >> d) & 1)) {
        if (write) drop_read_copies(p);  // reached in place; a write makes read copies stale
        continue;
      }
      ++counters_.device_faults;
      event("device_fault", page, d);
      if (Result moved = to_device(*r, i, d); !moved.ok()) return moved;
    }
  }
  *bytes = &r->bytes;
  *offset = va - r->base;
  *length = n;
  return Result::success();
}

Result FakeUnified::cpu_access(uint64_t va, void* buffer, size_t n, bool write) {
  Lock lock(machine_.mutex());
  Pages pages;
  if (Result r = pages_of(va, n, &pages); !r.ok()) return r;
  // What emu's fault thread does before the CPU continues.
  for (const PageRef& ref : pages) {
    Page& p = ref.range->pages[ref.index];
    const uint64_t page_va = ref.range->base + ref.index * kPage;
    if (write && p.write_protected) {
      ++counters_.read_copy_invalidations;
      event("read_copy_invalidate", page_va, kNoDevice);
      drop_read_copies(p);
    }
    if (p.resident != kNoDevice && p.cpu_revoked) {
      ++counters_.host_faults;
      event("cpu_fault", page_va, kNoDevice);
      to_host(*ref.range, ref.index, false);
    }
  }
  auto* cpu = static_cast<uint8_t*>(buffer);
  for (uint64_t done = 0; done < n;) {
    Range* r = find(va + done);
    const uint64_t at = va + done - r->base;
    const uint64_t len = std::min<uint64_t>(n - done, r->bytes.size() - at);
    Result moved = write ? r->bytes.write(at, cpu + done, len) : r->bytes.read(at, cpu + done, len);
    if (!moved.ok()) return moved;
    done += len;
  }
  return Result::success();
}

Result FakeUnified::advise(uint64_t address, uint64_t size, ManagedAdvice advice,
                           Location where) {
  Lock lock(machine_.mutex());
  const auto a = static_cast<uint8_t>(advice);
  if (a > static_cast<uint8_t>(ManagedAdvice::kUnsetAccessedBy)) {
    return machine_.violation("managed advise: unknown advice");
  }
  if (a >= static_cast<uint8_t>(ManagedAdvice::kPreferredLocation)) {
    if (where.kind == Location::Kind::kDevice) {
      if (Result b = bad_device(where.id); !b.ok()) return b;
    } else {
      const int32_t nodes = std::max(machine_.config().numa_nodes, 1);
      const bool valid = where.kind == Location::Kind::kHost ||
                         (where.kind == Location::Kind::kHostNuma && where.id >= 0 &&
                          where.id < nodes);
      if (!valid) return Result::from_errno(EINVAL);
    }
  }
  Pages pages;
  if (Result r = pages_of(address, size, &pages); !r.ok()) return r;
  for (const PageRef& ref : pages) {
    Page& p = ref.range->pages[ref.index];
    switch (advice) {
      case ManagedAdvice::kReadMostly: p.read_mostly = true; break;
      case ManagedAdvice::kUnsetReadMostly:
        p.read_mostly = false;
        drop_read_copies(p);
        break;
      case ManagedAdvice::kPreferredLocation: p.preferred = where; break;
      case ManagedAdvice::kUnsetPreferredLocation: p.preferred = Location{}; break;
      case ManagedAdvice::kAccessedBy:
      case ManagedAdvice::kUnsetAccessedBy: {
        const bool set = advice == ManagedAdvice::kAccessedBy;
        if (where.kind == Location::Kind::kDevice) {
          const uint64_t bit = uint64_t{1} << where.id;
          p.accessed_by = set ? (p.accessed_by | bit) : (p.accessed_by & ~bit);
        } else {
          p.accessed_by_host = set;
        }
        break;
      }
    }
    sync_cpu_access(p);
  }
  return Result::success();
}

Result FakeUnified::prefetch(uint64_t address, uint64_t size, Location target) {
  Lock lock(machine_.mutex());
  if (target.kind == Location::Kind::kDevice) {
    if (Result b = bad_device(target.id); !b.ok()) return b;
  } else if (target.kind != Location::Kind::kHost && target.kind != Location::Kind::kHostNuma) {
    return machine_.violation("managed prefetch: no target");
  }
  Pages pages;
  if (Result r = pages_of(address, size, &pages); !r.ok()) return r;
  for (const PageRef& ref : pages) {
    Page& p = ref.range->pages[ref.index];
    p.last_prefetch = target;
    if (target.kind == Location::Kind::kDevice) {
      if (!residency() || p.resident == target.id) continue;  // nothing moves
      if (Result moved = to_device(*ref.range, ref.index, target.id); !moved.ok()) return moved;
      counters_.prefetch_bytes += kPage;
    } else if (p.resident != kNoDevice) {
      to_host(*ref.range, ref.index, false);
      counters_.prefetch_bytes += kPage;
    }
  }
  return Result::success();
}

Result FakeUnified::attribute(ManagedAttribute attribute, uint64_t address, uint64_t size,
                              int32_t* values, size_t slots) {
  Lock lock(machine_.mutex());
  if (values == nullptr || slots == 0) return machine_.violation("managed attribute: no slot");
  Pages pages;
  if (Result r = pages_of(address, size, &pages); !r.ok()) return r;
  const bool prefetch = attribute == ManagedAttribute::kLastPrefetchLocation ||
                        attribute == ManagedAttribute::kLastPrefetchLocationType ||
                        attribute == ManagedAttribute::kLastPrefetchLocationId;
  // The value every page's location gives, or `mixed` when two pages differ.
  auto common = [&](auto value, int32_t mixed) {
    auto location = [&](const PageRef& ref) {
      const Page& p = ref.range->pages[ref.index];
      return prefetch ? p.last_prefetch : p.preferred;
    };
    const int32_t first = value(location(pages.front()));
    for (const PageRef& ref : pages) {
      if (value(location(ref)) != first) return mixed;
    }
    return first;
  };
  switch (attribute) {
    case ManagedAttribute::kReadMostly:
      values[0] = std::all_of(pages.begin(), pages.end(), [](const PageRef& ref) {
        return ref.range->pages[ref.index].read_mostly;
      });
      return Result::success();
    case ManagedAttribute::kPreferredLocation:
    case ManagedAttribute::kLastPrefetchLocation:
      values[0] = common(processor, kMixed);
      return Result::success();
    case ManagedAttribute::kPreferredLocationType:
    case ManagedAttribute::kLastPrefetchLocationType:
      values[0] = common(acl_type, kTypeInvalid);
      return Result::success();
    case ManagedAttribute::kPreferredLocationId:
    case ManagedAttribute::kLastPrefetchLocationId: {
      // An id only within one kind that has ids.
      const int32_t kind = common(acl_type, kTypeInvalid);
      values[0] = kind == kTypeDevice || kind == kTypeHostNuma
                      ? common([](Location l) { return l.id; }, kMixed)
                      : kMixed;
      return Result::success();
    }
    case ManagedAttribute::kAccessedBy: {
      uint64_t devices = ~uint64_t{0};
      bool host = true;
      for (const PageRef& ref : pages) {
        devices &= ref.range->pages[ref.index].accessed_by;
        host = host && ref.range->pages[ref.index].accessed_by_host;
      }
      std::fill(values, values + slots, kMixed);
      size_t k = 0;
      if (host) values[k++] = kHostProcessor;
      for (int32_t d = 0; d < kMaxDevices && k < slots; ++d) {
        if ((devices >> d) & 1) values[k++] = d;
      }
      return Result::success();
    }
  }
  return machine_.violation("managed attribute: unknown attribute");
}

void FakeUnified::visit_statistics(StatisticsVisitor& visitor) const {
  Lock lock(machine_.mutex());
  visitor.flag("managed", "fault_tracking", residency());
  visitor.flag("managed", "cpu_write_tracking", cpu_writes());
  visitor.counter("managed", "host_faults", counters_.host_faults);
  visitor.counter("managed", "device_faults", counters_.device_faults);
  visitor.counter("managed", "bytes_to_device", counters_.bytes_to_device);
  visitor.counter("managed", "bytes_to_host", counters_.bytes_to_host);
  visitor.counter("managed", "evictions", counters_.evictions);
  visitor.counter("managed", "prefetch_bytes", counters_.prefetch_bytes);
  visitor.counter("managed", "read_copy_invalidations", counters_.read_copy_invalidations);
}

}  // namespace aclvmm::dev::fake
