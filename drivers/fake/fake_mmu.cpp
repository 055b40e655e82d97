#include "drivers/fake/fake_mmu.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <mutex>
#include <new>

#include "drivers/copy_rights.h"

namespace aclvmm::dev::fake {
namespace {

bool valid_access(Access a) {
  return a == Access::kNone || a == Access::kRead || a == Access::kReadWrite;
}

}  // namespace

FakeMmu::~FakeMmu() {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  for (const auto& [va, e] : mappings_) physical_.let_go_locked(e.memory);
}

const FakeMmu::Entry* FakeMmu::containing(uint64_t va, uint64_t* start) const {
  auto it = mappings_.upper_bound(va);
  if (it == mappings_.begin()) return nullptr;
  --it;
  if (va - it->first >= it->second.size) return nullptr;
  if (start != nullptr) *start = it->first;
  return &it->second;
}

Access FakeMmu::flags_of(const Entry& e, Location location) {
  if (location.kind == Location::Kind::kHost) return static_cast<Access>(e.host);
  const uint64_t bit = uint64_t{1} << location.id;
  if ((e.dev_read & bit) == 0) return Access::kNone;
  return (e.dev_write & bit) != 0 ? Access::kReadWrite : Access::kRead;
}

void FakeMmu::set_flags(Entry& e, Location location, Access flags) {
  if (location.kind == Location::Kind::kHost) {
    e.host = static_cast<uint8_t>(flags);
    return;
  }
  const uint64_t bit = uint64_t{1} << location.id;
  e.dev_read = (static_cast<uint8_t>(flags) & 1) ? (e.dev_read | bit) : (e.dev_read & ~bit);
  e.dev_write = flags == Access::kReadWrite ? (e.dev_write | bit) : (e.dev_write & ~bit);
}

Result FakeMmu::map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
                    InitialAccess initial) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (initial != InitialAccess::kOwnerReadWrite && initial != InitialAccess::kNone) {
    return machine_.violation("map: no such initial access");
  }
  const PhysicalProperties* live = physical_.live_locked(memory, "map: not a live physical id");
  if (live == nullptr) return Result::from_errno(EINVAL);
  const PhysicalProperties props = *live;
  const uint64_t granule = page_granule(props.page_type);
  if (offset > props.size || size > props.size - offset) {
    return machine_.violation("map: the range runs past the memory");
  }
  if (size == 0 || va % granule != 0 || offset % granule != 0 ||
      (size % granule != 0 && size != props.size - offset)) {
    return machine_.violation("map: the range is not whole granules of the memory's page type");
  }
  if (va + size < va) return machine_.violation("map: the range wraps");
  if (overlaps(va, size)) return machine_.violation("map: the range is already mapped");
  Entry e;
  e.size = size;
  e.memory = memory;
  e.offset = offset;
  e.owner = props.location;
  e.granule = static_cast<uint32_t>(granule);
  return insert_locked(va, e, initial == InitialAccess::kOwnerReadWrite);
}

Result FakeMmu::insert_locked(uint64_t va, Entry e, bool owner_read_write) {
  if (owner_read_write) {
    set_flags(e, e.owner.kind == Location::Kind::kDevice ? e.owner : Location::host(),
              Access::kReadWrite);
  }
  try {
    mappings_.emplace(va, e);
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
  physical_.hold_locked(e.memory);
  return Result::success();
}

bool FakeMmu::overlaps(uint64_t va, uint64_t size) const {
  auto next = mappings_.lower_bound(va);
  return (next != mappings_.end() && next->first < va + size) ||
         (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.size > va);
}

Result FakeMmu::map_block_locked(uint64_t va, uint64_t size, uint64_t span, PhysicalId memory,
                                 AddressInfo::Kind kind, uint32_t page_size) {
  if (va + span < va) return machine_.violation("block: the range wraps");
  if (overlaps(va, span)) return machine_.violation("block: the range is already mapped");
  const PhysicalProperties* live = physical_.live_locked(memory, "block: not a live physical id");
  if (live == nullptr) return Result::from_errno(EINVAL);
  Entry e;
  e.size = size;
  e.memory = memory;
  e.owner = live->location;
  e.granule = static_cast<uint32_t>(machine_.config().page_size);
  e.kind = kind;
  e.page_size = page_size;
  return insert_locked(va, e, /*owner_read_write=*/true);
}

Result FakeMmu::unmap_block_locked(uint64_t va, PhysicalId* memory) {
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second.kind == AddressInfo::Kind::kMapping) {
    return machine_.violation("free: not the address of a block");
  }
  *memory = it->second.memory;
  mappings_.erase(it);
  physical_.let_go_locked(*memory);
  return Result::success();
}

Result FakeMmu::unmap(uint64_t va, uint64_t size) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second.size != size ||
      it->second.kind != AddressInfo::Kind::kMapping) {
    return machine_.violation("unmap: not exactly a mapping");
  }
  const PhysicalId memory = it->second.memory;
  mappings_.erase(it);
  physical_.let_go_locked(memory);
  return Result::success();
}

Result FakeMmu::set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                           size_t* applied) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (applied != nullptr) *applied = 0;
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second.size != size ||
      it->second.kind != AddressInfo::Kind::kMapping) {
    return machine_.violation("set_access: not exactly a mapping");
  }
  if (grants == nullptr && count != 0) return machine_.violation("set_access: no grants");
  // Applied in order, as the HAL does; a bad grant stops there with the earlier ones in effect.
  for (size_t i = 0; i < count; ++i) {
    const Location l = grants[i].location;
    const bool host = l.kind == Location::Kind::kHost && l.id == 0;
    if ((!host && (l.kind != Location::Kind::kDevice || !machine_.valid_device(l.id))) ||
        !valid_access(grants[i].flags)) {
      return machine_.violation("set_access: no such location or flags");
    }
    set_flags(it->second, l, grants[i].flags);
    if (applied != nullptr) ++*applied;
  }
  return Result::success();
}

Result FakeMmu::access(uint64_t va, Location location, Access* out) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  const Entry* e = containing(va, nullptr);
  if (e == nullptr) return machine_.violation("access: not inside a mapping");
  const bool host = location.kind == Location::Kind::kHost;
  if (out == nullptr ||
      (!host && (location.kind != Location::Kind::kDevice || !machine_.valid_device(location.id)))) {
    return machine_.violation("access: no such location");
  }
  *out = flags_of(*e, location);
  return Result::success();
}

Result FakeMmu::grant_peer(uint64_t va, uint64_t size, DeviceIndex device) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device) || size == 0 || va + size < va) {
    return machine_.violation("grant_peer: no such device or range");
  }
  size_t granted = 0;
  for (auto it = mappings_.begin(); it != mappings_.end(); ++it) {
    if (it->first + it->second.size <= va || it->first >= va + size) continue;
    if (it->second.owner.kind != Location::Kind::kDevice) continue;
    set_flags(it->second, Location::device(device), Access::kReadWrite);
    ++granted;
  }
  if (granted == 0) return machine_.violation("grant_peer: no device memory mapped in the range");
  return Result::success();
}

Result FakeMmu::register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  constexpr uint64_t kHostPage = 4096;
  if (device < 0 || device >= kMaxDevices) return machine_.violation("register_host: no such device");
  if (size == 0 || va % kHostPage != 0 || size % kHostPage != 0 || va + size < va) {
    return machine_.violation("register_host: the range is not whole host pages");
  }
  // The process's pages: what the CPU reaches (not the null page, no fake entry), or a host
  // block (aclrtMallocHost memory is the CPU's as well).
  uint64_t bad = 0;
  uint64_t start = 0;
  const Entry* e = containing(va, &start);
  const bool in_host_block = e != nullptr && e->kind == AddressInfo::Kind::kHostBlock &&
                             va + size - start <= e->size;
  if (!in_host_block && !host_reaches_locked(va, size, &bad)) return Result::from_errno(EFAULT);
  registered_[{va, device}] = Registration{size, pin};
  return Result::success();
}

Result FakeMmu::unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  auto it = registered_.find({va, device});
  if (it == registered_.end() || it->second.size != size || it->second.pinned != pin) {
    return machine_.violation("unregister_host: not exactly a registration register_host made");
  }
  registered_.erase(it);
  return Result::success();
}

size_t FakeMmu::host_registrations() const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return registered_.size();
}

Result FakeMmu::query(uint64_t va, AddressInfo* out) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("query: no result pointer");
  uint64_t start = 0;
  const Entry* e = containing(va, &start);
  if (e == nullptr) return Result::from_errno(ENOENT);
  out->kind = e->kind;
  out->range = VaRange{start, e->size};
  out->memory = e->memory;
  out->offset = e->offset + (va - start);
  out->owner = e->owner;
  out->page_size = e->page_size;
  return Result::success();
}

Result FakeMmu::cpu_access(uint64_t va, void* buffer, size_t n, bool write) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  uint64_t start = 0;
  const Entry* e = containing(va, &start);
  if (e == nullptr || n > e->size - (va - start)) return Result::from_errno(EFAULT);
  const Access host = flags_of(*e, Location::host());
  if (host == Access::kNone || (write && host != Access::kReadWrite)) {
    return Result::from_errno(EFAULT);
  }
  ByteStore* bytes = physical_.bytes_locked(e->memory);
  if (bytes == nullptr) return Result::from_errno(EFAULT);
  const uint64_t at = e->offset + (va - start);
  return write ? bytes->write(at, buffer, n) : bytes->read(at, buffer, n);
}

Result FakeMmu::reach_locked(uint64_t va, uint64_t left, bool write, const Executor& who,
                             ByteStore** bytes, uint64_t* offset, uint64_t* length) {
  uint64_t start = 0;
  const Entry* e = containing(va, &start);
  if (e == nullptr) return Result::from_errno(EFAULT);
  if (!executor_may_reach(who, e->owner, e->kind == AddressInfo::Kind::kDeviceBlock, write,
                          [e](Location l) { return flags_of(*e, l); })) {
    return Result::from_errno(EACCES);
  }
  *bytes = physical_.bytes_locked(e->memory);
  if (*bytes == nullptr) return Result::from_errno(EFAULT);
  *offset = e->offset + (va - start);
  *length = std::min(left, e->size - (va - start));
  return Result::success();
}

bool FakeMmu::host_reaches_locked(uint64_t address, uint64_t n, uint64_t* bad) const {
  const uint64_t null_page = machine_.config().page_size;
  if (address < null_page) {
    *bad = address;
    return false;
  }
  auto it = mappings_.upper_bound(address);
  if (it != mappings_.begin() && address - std::prev(it)->first < std::prev(it)->second.size) {
    *bad = address;
    return false;
  }
  if (it != mappings_.end() && it->first - address < n) {
    *bad = it->first;
    return false;
  }
  return true;
}

size_t FakeMmu::live_mappings() const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return mappings_.size();
}

}  // namespace aclvmm::dev::fake
