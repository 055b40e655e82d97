#include "drivers/fake/fake_sharing.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace aclvmm::dev::fake {
namespace {

constexpr uint32_t kFabricHandleType = 1;

Result fail(int errno_value) { return Result::from_errno(errno_value); }

uint64_t pack(uint32_t share_id, uint32_t device) {
  return (static_cast<uint64_t>(device & 0xff) << 32) | share_id;
}

uint32_t device_field(const PhysicalProperties& p) {
  return p.location.kind == Location::Kind::kDevice ? static_cast<uint32_t>(p.location.id) : 0;
}

}  // namespace

FakeSharing::FakeSharing(FakeMachine& machine, FakePhysical& physical,
                         std::shared_ptr<FakeWorld> world)
    : machine_(machine),
      physical_(physical),
      world_(world ? std::move(world) : std::make_shared<FakeWorld>()),
      pid_(machine.config().pid) {
  {
    std::lock_guard<std::mutex> lock(world_->mutex());
    world_->started(pid_, world_->tick());
  }
  physical_.on_release(&FakeSharing::ends_export, this);
}

FakeSharing::~FakeSharing() {
  std::lock_guard<std::mutex> lock(world_->mutex());
  world_->exited(pid_);
}

void FakeSharing::ends_export(void* self, PhysicalId memory) {
  auto* sharing = static_cast<FakeSharing*>(self);
  {
    // Keys over the object stay until closed; imports of them fail from now on.
    std::lock_guard<std::mutex> lock(sharing->world_->mutex());
    for (auto& [key, k] : sharing->world_->keys) {
      if (k.exporter == sharing->pid_ && k.range.memory == memory) k.bytes.reset();
    }
  }
  auto it = sharing->exported_.find(memory.value);
  if (it == sharing->exported_.end()) return;
  std::lock_guard<std::mutex> lock(sharing->world_->mutex());
  sharing->world_->exports.erase(it->second);
  sharing->exported_.erase(it);
}

Result FakeSharing::export_locked(PhysicalId memory, uint64_t* token) {
  PhysicalProperties properties;
  {
    const PhysicalProperties* live = physical_.live_locked(memory, "export: not a live physical id");
    if (live == nullptr) return fail(EINVAL);
    properties = *live;
  }
  if (properties.imported || exported_.count(memory.value)) return fail(EINVAL);
  std::shared_ptr<ByteStore> bytes = physical_.shared_bytes_locked(memory);
  std::lock_guard<std::mutex> lock(world_->mutex());
  const uint64_t t = pack(world_->next_share_id(), device_field(properties));
  try {
    FakeWorld::Export e;
    e.exporter = pid_;
    e.properties = properties;
    e.bytes = std::move(bytes);
    world_->exports.emplace(t, std::move(e));
    exported_.emplace(memory.value, t);
  } catch (const std::bad_alloc&) {
    world_->exports.erase(t);
    return fail(ENOMEM);
  }
  *token = t;
  return Result::success();
}

Result FakeSharing::export_memory(PhysicalId memory, ShareToken* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("export: no result pointer");
  return export_locked(memory, &out->value);
}

Result FakeSharing::export_fabric(PhysicalId memory, FabricToken* inout) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (inout == nullptr) return machine_.violation("export_fabric: no blob");
  uint64_t token = 0;
  if (Result r = export_locked(memory, &token); !r.ok()) return r;
  const uint32_t device = static_cast<uint32_t>(token >> 32) & 0xff;
  const uint32_t words[5] = {kFabricHandleType, 0, device, device, static_cast<uint32_t>(token)};
  std::memcpy(inout->bytes, words, sizeof words);
  return Result::success();
}

Result FakeSharing::token_of_fabric(const FabricToken& fabric, ShareToken* out) {
  if (out == nullptr) {
    std::lock_guard<std::mutex> lock(machine_.mutex());
    return machine_.violation("token_of_fabric: no result pointer");
  }
  uint32_t words[5];
  std::memcpy(words, fabric.bytes, sizeof words);
  if (words[0] != kFabricHandleType || words[4] == 0) return fail(EINVAL);
  out->value = pack(words[4], words[2]);
  return Result::success();
}

Result FakeSharing::disable_validation(ShareToken token) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->exports.find(token.value);
  // Only the exporter, and only before any set_pids.
  if (it == world_->exports.end() || it->second.exporter != pid_ || !it->second.whitelist.empty()) {
    return fail(EPERM);
  }
  it->second.validate_pids = false;
  return Result::success();
}

Result FakeSharing::set_pids(ShareToken token, const int32_t* pids, uint32_t count) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (pids == nullptr && count > 0) return machine_.violation("set_pids: no pid list");
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->exports.find(token.value);
  if (it == world_->exports.end()) return fail(EFAULT);
  FakeWorld::Export& e = it->second;
  if (e.exporter != pid_) return fail(EACCES);
  if (!e.validate_pids) return fail(EPERM);
  std::vector<int32_t> listed;
  for (uint32_t i = 0; i < count; ++i) {
    if (pids[i] != 0) listed.push_back(pids[i]);  // 0 entries are skipped
  }
  if (listed.empty()) return fail(EINVAL);
  const uint64_t stamp = world_->tick();
  for (int32_t pid : listed) e.whitelist[pid] = stamp;
  return Result::success();
}

Result FakeSharing::import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("import: no result pointer");
  if (!machine_.valid_device(device)) return machine_.violation("import: no such device");
  PhysicalProperties properties;
  std::shared_ptr<ByteStore> bytes;
  {
    std::lock_guard<std::mutex> world(world_->mutex());
    auto it = world_->exports.find(token.value);
    if (it == world_->exports.end()) return fail(EFAULT);
    const FakeWorld::Export& e = it->second;
    properties = e.properties;
    const bool on_device = properties.location.kind == Location::Kind::kDevice;
    if (e.exporter == pid_) {
      // Its own export: only onto another device.
      if (!on_device || properties.location.id == device) return fail(EACCES);
    } else if (e.validate_pids) {
      auto w = e.whitelist.find(pid_);
      // A pid listed before this process started was another process's (pid reuse).
      if (w == e.whitelist.end() || world_->start_time(pid_) > w->second) {
        ++denied_;
        return fail(EACCES);
      }
    }
    bytes = e.bytes;
  }
  if (properties.page_type == PageType::kNormal) properties.page_type = PageType::kHuge;
  properties.imported = true;
  PhysicalId id;
  if (Result r = physical_.adopt_locked(properties, std::move(bytes), &id); !r.ok()) return r;
  out->memory = id;
  out->properties = properties;
  out->exporter_device =
      properties.location.kind == Location::Kind::kDevice ? properties.location.id : kNoDevice;
  return Result::success();
}

Result FakeSharing::import_fabric(const FabricToken& fabric, DeviceIndex device,
                                  ImportedMemory* out) {
  ShareToken token;
  if (Result r = token_of_fabric(fabric, &token); !r.ok()) return r;
  return import_memory(token, device, out);
}

Result FakeSharing::ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("ipc_export: no result pointer");
  const PhysicalProperties* live =
      physical_.live_locked(range.memory, "ipc_export: not a live physical id");
  if (live == nullptr) return fail(EINVAL);
  const PhysicalProperties properties = *live;
  if (properties.imported || exported_.count(range.memory.value) ||
      properties.location.kind != Location::Kind::kDevice || range.size == 0 ||
      range.offset > properties.size || range.size > properties.size - range.offset) {
    return fail(EINVAL);
  }
  std::shared_ptr<ByteStore> bytes = physical_.shared_bytes_locked(range.memory);
  std::lock_guard<std::mutex> world(world_->mutex());
  try {
    const uint64_t counter = ++world_->key_counters[pid_];
    FakeWorld::Key k;
    k.exporter = pid_;
    k.range = range;
    k.properties = properties;
    k.bytes = std::move(bytes);
    k.validate_pids = validate_pids;
    const IpcKey key = format_ipc_key(IpcKeyFields{
        static_cast<uint32_t>(pid_), counter, static_cast<uint32_t>(properties.location.id), 0});
    world_->keys.emplace(key, std::move(k));
    *out = key;
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  return Result::success();
}

Result FakeSharing::ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (pids == nullptr || count == 0) return machine_.violation("ipc_set_pids: no pid list");
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->keys.find(key);
  if (it == world_->keys.end()) {
    auto closed = world_->closed_served.find(key);
    return fail(closed != world_->closed_served.end() ? EFAULT : EINVAL);
  }
  FakeWorld::Key& k = it->second;
  if (!k.validate_pids) return fail(EPERM);
  if (k.exporter != pid_) return fail(EACCES);
  if (!k.bytes) return fail(EINVAL);
  std::vector<int32_t> listed;
  size_t fresh = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (pids[i] == 0 || pids[i] == pid_) continue;  // skipped, as the vendor does
    listed.push_back(pids[i]);
    fresh += k.whitelist.count(pids[i]) == 0;
  }
  if (listed.empty() || k.whitelist.size() + fresh > kIpcWhitelistMax) return fail(EINVAL);
  const uint64_t stamp = world_->tick();
  for (int32_t pid : listed) k.whitelist[pid] = stamp;
  return Result::success();
}

Result FakeSharing::ipc_set_link(const IpcKey& key, uint32_t link) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->keys.find(key);
  if (it == world_->keys.end() || !it->second.bytes) return fail(EINVAL);
  if (it->second.exporter != pid_) return fail(EPERM);
  it->second.link = link;
  return Result::success();
}

Result FakeSharing::ipc_close_export(const IpcKey& key) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->keys.find(key);
  if (it == world_->keys.end()) {
    auto closed = world_->closed_served.find(key);
    return fail(closed != world_->closed_served.end() && closed->second == pid_ ? EFAULT : EINVAL);
  }
  if (it->second.exporter != pid_) return fail(EACCES);
  try {
    if (it->second.served > 0) world_->closed_served.emplace(key, pid_);
  } catch (const std::bad_alloc&) {
    // Only a later call's 107017 is lost.
  }
  world_->keys.erase(it);
  return Result::success();
}

void FakeSharing::ipc_revoke(const IpcKey& key) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  std::lock_guard<std::mutex> world(world_->mutex());
  auto it = world_->keys.find(key);
  if (it != world_->keys.end() && it->second.exporter == pid_) it->second.bytes.reset();
}

Result FakeSharing::ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("ipc_import: no result pointer");
  if (!machine_.valid_device(device)) return machine_.violation("ipc_import: no such device");
  PhysicalProperties properties;
  std::shared_ptr<ByteStore> bytes;
  IpcRange range;
  {
    std::lock_guard<std::mutex> world(world_->mutex());
    auto it = world_->keys.find(key);
    if (it == world_->keys.end() || !it->second.bytes) return fail(EINVAL);
    FakeWorld::Key& k = it->second;
    if (k.validate_pids) {
      auto w = k.whitelist.find(pid_);
      // The exporter is never listed; a pid listed before this process started was another's.
      if (k.exporter == pid_ || w == k.whitelist.end() || world_->start_time(pid_) > w->second) {
        ++denied_;
        return fail(EACCES);
      }
    } else if (k.importers.count(pid_) == 0) {
      if (k.importers.size() >= kIpcWhitelistMax) {
        ++denied_;
        return fail(EACCES);
      }
      k.importers[pid_] = true;
    }
    if (k.exporter != pid_) ++k.served;  // as emu: the exporter's own imports close first
    properties = k.properties;
    bytes = k.bytes;
    range = k.range;
  }
  if (properties.page_type == PageType::kNormal) properties.page_type = PageType::kHuge;
  properties.imported = true;
  PhysicalId id;
  if (Result r = physical_.adopt_locked(properties, std::move(bytes), &id); !r.ok()) return r;
  out->memory.memory = id;
  out->memory.properties = properties;
  out->memory.exporter_device = properties.location.id;
  out->offset = range.offset;
  out->size = range.size;
  out->page_size = range.page_size;
  return Result::success();
}

uint64_t FakeSharing::imports_denied() const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return denied_;
}

}  // namespace aclvmm::dev::fake
