#include "drivers/emu/device/device_mmu.h"

#include <cerrno>
#include <cstdio>
#include <new>

#include "drivers/emu/device/hazard.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/process_pages.h"
#include "drivers/emu/os/util.h"

namespace aclvmm::dev::emu {
namespace {

Result invalid() { return Result::from_errno(EINVAL); }

bool valid_location(Location l) {
  return l.kind == Location::Kind::kHost ||
         (l.kind == Location::Kind::kDevice && l.id >= 0 && l.id < kMaxDevices);
}

}  // namespace

EmuDeviceMmu::EmuDeviceMmu(BackendListener& listener, bool host_access_open)
    : listener_(listener), cpu_(listener, host_access_open) {}

EmuDeviceMmu::~EmuDeviceMmu() {
  for (MmuEntry* e = table_.first_from(0); e != nullptr;) {
    const uint64_t next = e->words_end();
    (void)cpu_.apply(*e, os::CpuAccess::kNone);
    forget(e);
    e = next < EmuPageTable::kLimit ? table_.first_from(next) : nullptr;
  }
}

MmuEntry* EmuDeviceMmu::exact(uint64_t va, uint64_t size) const {
  MmuEntry* e = table_.find(va);
  return e != nullptr && e->va == va && e->size == size && e->kind == AddressInfo::Kind::kMapping
             ? e
             : nullptr;
}

MmuEntry* EmuDeviceMmu::containing(uint64_t va) const {
  MmuEntry* e = table_.find(va);
  return e != nullptr && va - e->va < e->size ? e : nullptr;
}

Result EmuDeviceMmu::install(MmuEntry* entry, bool retain) {
  if (Result r = table_.prepare(entry->va, entry->size); !r.ok()) {
    delete entry;
    return r;
  }
  if (Result r = cpu_.apply(*entry, cpu_.wanted(*entry)); !r.ok()) {
    delete entry;  // apply() left the placeholder
    return r;
  }
  if (retain) entry->memory->retain();
  table_.publish(entry);
  return Result::success();
}

void EmuDeviceMmu::forget(MmuEntry* entry) {
  table_.clear(entry->va, entry->size);
  hazard::wait_unprotected(entry);  // a copy that found the entry has taken its own reference
  entry->memory->drop();
  delete entry;
}

Result EmuDeviceMmu::map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
                         InitialAccess initial) {
  if (!memory) return invalid();
  EmuPhysical* object = EmuPhysical::from_id(memory);
  const PhysicalProperties& props = object->properties();
  const uint64_t granule = page_granule(props.page_type);
  // Whole granules, or up to the memory's end (an IPC key's small block, device_mmu.h).
  if (size == 0 || va % granule != 0 || offset % granule != 0 || offset > props.size ||
      size > props.size - offset || (size % granule != 0 && size != props.size - offset)) {
    return invalid();
  }
  auto* entry = new (std::nothrow) MmuEntry();
  if (entry == nullptr) return Result::from_errno(ENOMEM);
  entry->memory = object;
  entry->va = va;
  entry->size = size;
  entry->offset = offset;
  entry->owner = object->mapping_owner();
  if (initial == InitialAccess::kOwnerReadWrite) {
    entry->set_access(entry->owner.kind == Location::Kind::kDevice ? entry->owner
                                                                   : Location::host(),
                      Access::kReadWrite);
  }
  return install(entry, /*retain=*/true);
}

Result EmuDeviceMmu::map_block(uint64_t va, uint64_t size, EmuPhysical* object,
                               AddressInfo::Kind kind, uint32_t page_size) {
  const PhysicalProperties& props = object->properties();
  if (size == 0 || va % EmuPageTable::kGranule != 0 || size > props.size) return invalid();
  auto* entry = new (std::nothrow) MmuEntry();
  if (entry == nullptr) return Result::from_errno(ENOMEM);
  entry->memory = object;
  entry->va = va;
  entry->size = size;
  entry->owner = props.location;
  entry->kind = kind;
  entry->page_size = page_size;
  // The owner reads and writes: the device of a device block, the CPU of a host block (which
  // gives it its CPU view, as aclrtMallocHost memory is plain CPU memory).
  entry->set_access(props.location.kind == Location::Kind::kDevice ? props.location
                                                                   : Location::host(),
                    Access::kReadWrite);
  return install(entry, /*retain=*/false);
}

Result EmuDeviceMmu::unmap_block(uint64_t va, AddressInfo::Kind* kind, uint64_t* size) {
  MmuEntry* e = table_.find(va);
  if (e == nullptr || e->va != va || e->kind == AddressInfo::Kind::kMapping) return invalid();
  // As unmap(): a CPU view that cannot be removed keeps the block.
  if (Result r = cpu_.apply(*e, os::CpuAccess::kNone); !r.ok()) return r;
  if (kind != nullptr) *kind = e->kind;
  if (size != nullptr) *size = e->size;
  forget(e);
  return Result::success();
}

Result EmuDeviceMmu::unmap(uint64_t va, uint64_t size) {
  MmuEntry* e = exact(va, size);
  if (e == nullptr) return invalid();
  // A CPU view that cannot be removed keeps the mapping: forgetting it would leave the memory
  // mapped where the next mapping goes.
  if (Result r = cpu_.apply(*e, os::CpuAccess::kNone); !r.ok()) return r;
  forget(e);
  return Result::success();
}

Result EmuDeviceMmu::set_access(uint64_t va, uint64_t size, const AccessGrant* grants,
                                size_t count, size_t* applied) {
  if (applied != nullptr) *applied = 0;
  MmuEntry* e = exact(va, size);
  if (e == nullptr || (grants == nullptr && count != 0)) return invalid();
  for (size_t i = 0; i < count; ++i) {
    if (!valid_location(grants[i].location)) return invalid();
  }
  // All or nothing in emu: the rights change only when the CPU view (if it must change) does.
  const uint8_t host = e->host.load(std::memory_order_relaxed);
  const uint64_t read = e->dev_read.load(std::memory_order_relaxed);
  const uint64_t write = e->dev_write.load(std::memory_order_relaxed);
  const os::CpuAccess cpu_before = e->cpu;
  for (size_t i = 0; i < count; ++i) e->set_access(grants[i].location, grants[i].flags);
  if (Result r = cpu_.apply(*e, cpu_.wanted(*e)); !r.ok()) {
    e->host.store(host, std::memory_order_relaxed);
    e->dev_read.store(read, std::memory_order_relaxed);
    e->dev_write.store(write, std::memory_order_relaxed);
    (void)cpu_.apply(*e, cpu_before);
    return r;
  }
  if (applied != nullptr) *applied = count;
  return Result::success();
}

Result EmuDeviceMmu::access(uint64_t va, Location location, Access* out) const {
  MmuEntry* e = containing(va);
  if (e == nullptr || out == nullptr || !valid_location(location)) return invalid();
  *out = e->access(location);
  return Result::success();
}

Result EmuDeviceMmu::grant_peer(uint64_t va, uint64_t size, DeviceIndex device) {
  if (device < 0 || device >= kMaxDevices || size == 0 || va >= EmuPageTable::kLimit ||
      size > EmuPageTable::kLimit - va) {
    return invalid();
  }
  size_t granted = 0;
  for (uint64_t a = va - va % EmuPageTable::kGranule; a < va + size;) {
    MmuEntry* e = table_.find(a);
    if (e == nullptr) {
      a += EmuPageTable::kGranule;
      continue;
    }
    if (e->owner.kind == Location::Kind::kDevice) {
      e->set_access(Location::device(device), Access::kReadWrite);
      ++granted;
    }
    a = e->va + e->size;
  }
  return granted == 0 ? invalid() : Result::success();
}

Result EmuDeviceMmu::register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) {
  if (device < 0 || device >= kMaxDevices || !os::valid_page_range(va, size) ||
      va + size > EmuPageTable::kLimit) {
    return invalid();
  }
  if (os::probe_mapped(va, size) != 0) return Result::from_errno(EFAULT);
  if (pin) {
    if (int rc = os::pin(va, size); rc != 0) {
      char message[160];
      snprintf(message, sizeof message,
               "host registration at 0x%llx (%llu bytes) stays unpinned: mlock failed, errno %d "
               "(RLIMIT_MEMLOCK?)",
               static_cast<unsigned long long>(va), static_cast<unsigned long long>(size), -rc);
      listener_.log(Severity::kWarning, "EMU", message);
    }
  }
  return Result::success();
}

Result EmuDeviceMmu::unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) {
  if (device < 0 || device >= kMaxDevices || !os::valid_page_range(va, size)) return invalid();
  // munlock of pages never locked (a refused pin) is harmless. mlock does not count: two
  // devices' registrations pinning one page share one lock, which the first unregistration
  // releases; the pages stay mapped and reachable, only their residency is no longer promised.
  if (pin) (void)os::unpin(va, size);
  return Result::success();
}

Result EmuDeviceMmu::query(uint64_t va, AddressInfo* out) const {
  if (out == nullptr) return invalid();
  MmuEntry* e = containing(va);
  if (e == nullptr) return Result::from_errno(ENOENT);
  out->kind = e->kind;
  out->range = VaRange{e->va, e->size};
  out->memory = e->memory->id();
  out->offset = e->offset + (va - e->va);
  out->owner = e->owner;
  out->page_size = e->page_size;
  return Result::success();
}

}  // namespace aclvmm::dev::emu
