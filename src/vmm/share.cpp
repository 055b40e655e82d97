// ShareService: the core's records and messages around the backend's Sharing unit.
#include "vmm/share.h"

#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "observability/log.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

ShareService* g_forked_service = nullptr;  // the process's one service, for the fork handlers

int code_of(dev::Result r) { return device_code(r); }

Status unknown_token(uint64_t token) {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               fmt::format("shareable handle 0x{:x} is unknown or was released", token));
}

Status no_backend() {
  return Error(kAclInternalError, "no device backend is open for sharing");
}

Side side_of(dev::Location where) {
  switch (where.kind) {
    case dev::Location::Kind::kDevice: return Side::kDevice;
    case dev::Location::Kind::kHostNuma: return Side::kHostNuma;
    default: return Side::kHost;
  }
}

// Collects one counter of a group from the backend's statistics.
class CounterReader final : public dev::StatisticsVisitor {
 public:
  CounterReader(const char* group, const char* name) : group_(group), name_(name) {}
  void counter(const char* group, const char* name, uint64_t value) override {
    if (std::strcmp(group, group_) == 0 && std::strcmp(name, name_) == 0) value_ = value;
  }
  void flag(const char*, const char*, bool) override {}
  uint64_t value() const { return value_; }

 private:
  const char* group_;
  const char* name_;
  uint64_t value_ = 0;
};

}  // namespace

void ShareService::attach(HandleTable<PhysicalAllocation>* physical, DeviceDirectory* devices) {
  physical_ = physical;
  devices_ = devices;
  static bool registered = false;
  if (registered) return;
  registered = true;
  g_forked_service = this;
  // A forked child is not the exporter, and the parent's handles do not exist in the child's
  // runtime (it starts afresh): records of them would count in live.* and answer nothing. The
  // lock is held across fork so the child never inherits it mid-update.
  pthread_atfork([] { g_forked_service->mu_.lock(); },
                 [] { g_forked_service->mu_.unlock(); },
                 [] {
                   g_forked_service->exports_.clear();
                   g_forked_service->imports_.clear();
                   g_forked_service->mu_.unlock();
                 });
}

dev::Sharing* ShareService::sharing() const {
  const std::shared_ptr<dev::DeviceBackend>& device = devices_ ? devices_->device() : nullptr;
  return device ? &device->sharing() : nullptr;
}

Status ShareService::export_memory(uint64_t handle, const PhysicalAllocation& phys,
                                   bool disable_pid_validation, uint8_t* fabric,
                                   uint64_t* token) {
  dev::Sharing* sharing = this->sharing();
  if (sharing == nullptr) return no_backend();
  const dev::PhysicalId id = phys.device_memory.id();
  dev::Result r;
  if (fabric != nullptr) {
    dev::FabricToken blob;
    std::memcpy(blob.bytes, fabric, sizeof blob.bytes);
    r = id ? sharing->export_fabric(id, &blob) : dev::Result::from_errno(EINVAL);
    dev::ShareToken v1;
    if (r.ok()) r = sharing->token_of_fabric(blob, &v1);
    if (r.ok()) {
      std::memcpy(fabric, blob.bytes, sizeof blob.bytes);
      *token = v1.value;
    }
  } else {
    dev::ShareToken v1;
    r = id ? sharing->export_memory(id, &v1) : dev::Result::from_errno(EINVAL);
    if (r.ok()) *token = v1.value;
  }
  if (!r.ok()) {
    if (r.condition() == dev::Condition::kInvalidArgument) {
      if (phys.imported) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "an imported handle cannot be exported again");
      }
      std::lock_guard lock(mu_);
      auto known = exports_.find(handle);
      if (known != exports_.end()) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     fmt::format("the handle is already exported as 0x{:x}", known->second));
      }
    }
    return Error(code_of(r), "the device backend could not export the handle: " +
                                 devices_->device()->describe(r));
  }
  if (!disable_pid_validation) return Status::Ok();
  r = sharing->disable_validation(dev::ShareToken{*token});
  if (r.ok()) return Status::Ok();
  // The export stays (it ends with its memory, as on hardware): the record keeps it counted.
  (void)record_export(handle, *token);
  return Error(code_of(r), "the export's pid validation could not be disabled: " +
                               devices_->device()->describe(r));
}

Status ShareService::record_export(uint64_t handle, uint64_t token) {
  std::lock_guard lock(mu_);
  try {
    exports_[handle] = token;
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the export's record");
  }
  return Status::Ok();
}

StatusOr<uint64_t> ShareService::export_handle(uint64_t handle,
                                               const std::shared_ptr<PhysicalAllocation>& phys,
                                               bool disable_pid_validation) {
  uint64_t token = 0;
  ACLVMM_RETURN_IF_ERROR(export_memory(handle, *phys, disable_pid_validation, nullptr, &token));
  // Without its record the export is still live in the backend until the memory goes; the
  // application gets no token for it, as for any failed export.
  ACLVMM_RETURN_IF_ERROR(record_export(handle, token));
  return token;
}

Status ShareService::export_fabric(uint64_t handle, const std::shared_ptr<PhysicalAllocation>& phys,
                                   bool disable_pid_validation, uint8_t* blob) {
  uint64_t token = 0;
  ACLVMM_RETURN_IF_ERROR(export_memory(handle, *phys, disable_pid_validation, blob, &token));
  return record_export(handle, token);
}

StatusOr<uint64_t> ShareService::token_of_fabric(const uint8_t* blob) {
  dev::Sharing* sharing = this->sharing();
  if (sharing == nullptr) return no_backend();
  dev::FabricToken fabric;
  std::memcpy(fabric.bytes, blob, sizeof fabric.bytes);
  dev::ShareToken token;
  if (!sharing->token_of_fabric(fabric, &token).ok()) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, "the fabric handle is not one aclvmm produced");
  }
  return token.value;
}

Status ShareService::set_pids(uint64_t token, const int32_t* pids, uint32_t count) {
  dev::Sharing* sharing = this->sharing();
  if (sharing == nullptr) return no_backend();
  const dev::Result r = sharing->set_pids(dev::ShareToken{token}, pids, count);
  if (r.ok()) return Status::Ok();
  switch (r.errno_value()) {
    case EFAULT: return unknown_token(token);
    case EPERM:
      return Error(ACL_ERROR_RT_NO_PERMISSION,
                   "the handle was exported with DISABLE_PID_VALIDATION; any process may import it");
    case EACCES:
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "only the exporting process may set the pids of a shareable handle");
    case EINVAL: return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "every pid in the list is 0");
    case ENOMEM: return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the whitelist");
    default:
      return Error(code_of(r), "the device backend could not set the pids: " +
                                   devices_->device()->describe(r));
  }
}

bool ShareService::own_token_locked(uint64_t token) const {
  for (const auto& [handle, t] : exports_) {
    if (t == token) return true;
  }
  return false;
}

uint64_t ShareService::reuse_import_locked(uint64_t token, int physical_device) {
  auto known = imports_.find({token, physical_device});
  if (known == imports_.end()) return 0;
  auto& table = *physical_;
  std::lock_guard tlock(table.mutex());
  auto existing = table.find_locked(known->second);
  if (!existing) return 0;
  ++existing->ref;
  return known->second;
}

void ShareService::adopt_import(const dev::ImportedMemory& imported, int physical_device,
                                  PhysicalAllocation* phys) {
  // From here the handle owns the backend's object: whatever fails later releases it with phys.
  phys->device_memory.take(devices_->device(), imported.memory);
  const dev::PhysicalProperties& props = imported.properties;
  phys->imported = true;
  phys->created_by = "aclrtMemImportFromShareableHandle";
  phys->side = side_of(props.location);
  phys->device = phys->on_device() ? physical_device : props.location.id;
  phys->reported_device = phys->on_device() ? imported.exporter_device : props.location.id;
  phys->page_type = static_cast<PageType>(props.page_type);
  phys->mem_type = static_cast<MemType>(props.mem_type);
  phys->size = props.size;
}

uint64_t ShareService::import_key(uint64_t token, const uint8_t* fabric) const {
  if (fabric == nullptr) return token;
  // Share ids are unique among one server's live exports only: two servers' exporters (pid 1 in
  // two containers, say) may hand out the same one. Another server's handle is therefore
  // remembered under the server too (bits 40-49, zero in every token), so that an import of
  // it never finds this server's import of the same share id, nor another server's.
  uint32_t sdid = 0;
  std::memcpy(&sdid, fabric + 4, sizeof sdid);  // word 1 (behavior.md §7)
  const uint32_t server = sdid >> 22;
  if (devices_ == nullptr || static_cast<int>(server) == devices_->server_id()) return token;
  return token | (static_cast<uint64_t>(server + 1) << 40);
}

StatusOr<uint64_t> ShareService::import(uint64_t token, int physical_device,
                                         const uint8_t* fabric) {
  dev::Sharing* sharing = this->sharing();
  if (sharing == nullptr) return no_backend();
  const uint64_t key = import_key(token, fabric);
  {
    std::lock_guard lock(mu_);
    // Keyed by the whole token: the same share id with another device field is a token no
    // export produced (the backend answers it). The same token on the same device again: the
    // same handle, one more reference.
    if (uint64_t h = reuse_import_locked(key, physical_device)) return h;
  }
  std::shared_ptr<PhysicalAllocation> phys;
  try {
    phys = std::make_shared<PhysicalAllocation>();
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the imported handle");
  }
  dev::ImportedMemory imported;
  dev::Result r;
  if (fabric != nullptr) {
    dev::FabricToken blob;
    std::memcpy(blob.bytes, fabric, sizeof blob.bytes);
    r = sharing->import_fabric(blob, physical_device, &imported);
  } else {
    r = sharing->import_memory(dev::ShareToken{token}, physical_device, &imported);
  }
  if (!r.ok()) {
    const std::string detail = devices_->device()->describe(r);
    switch (r.errno_value()) {
      case EFAULT: return unknown_token(token);
      case EACCES: {
        std::lock_guard lock(mu_);
        if (own_token_locked(token)) {
          return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                       "a process cannot import its own export onto the same device");
        }
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "the exporting process refused the import: this process is not on the "
                     "handle's pid whitelist (or was listed before it started)");
      }
      case ETIMEDOUT:
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "the exporting process did not answer the import: timed out");
      case EPROTO:
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "the exporting process did not answer the import: " + detail);
      case EINVAL:
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     fmt::format("the exporter of 0x{:x} sent a malformed reply or memory it could "
                                 "not have sent; nothing was imported",
                                 token));
      default:
        // A driver's refusal (hal) carries its own reason; an errno here is emu's own failure.
        return Error(code_of(r), (r.is_driver() ? "the driver refused the import: "
                                                : "the received memory is unusable: ") +
                                     detail);
    }
  }
  adopt_import(imported, physical_device, phys.get());
  const int exporter_device = phys->reported_device;
  // Another server's device is no peer of this host's.
  const bool device_memory = phys->on_device() && !imported.other_server;
  uint64_t handle = 0;
  {
    std::lock_guard lock(mu_);
    // Another thread may have imported the same token onto the same device while this one asked
    // the backend: the vendor gives one handle, so ours is dropped (its memory with it).
    if (uint64_t h = reuse_import_locked(key, physical_device)) return h;
    auto& table = *physical_;
    handle = table.insert(phys);
    if (handle == 0) return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "too many live physical memory handles");
    try {
      imports_[{key, physical_device}] = handle;
    } catch (const std::bad_alloc&) {
      table.remove(handle);
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the import's record");
    }
  }
  if (device_memory && exporter_device != physical_device) {
    // The vendor runtime opens peer access both ways before importing onto another device; the
    // backend did what its driver needs (D15), the core records the pair in its masks.
    devices_->enable_peer_pair(exporter_device, physical_device);
  }
  return handle;
}

void ShareService::forget_handle(uint64_t handle) {
  std::lock_guard lock(mu_);
  exports_.erase(handle);
  for (auto it = imports_.begin(); it != imports_.end();) {
    it = it->second == handle ? imports_.erase(it) : std::next(it);
  }
}

void ShareService::shutdown() {
  for (size_t i = 0; i < ipc_at_stop_.size(); ++i) ipc_at_stop_[i] = ipc(kIpcCounters[i]);
  std::lock_guard lock(mu_);
  exports_.clear();
  imports_.clear();
}

size_t ShareService::live_exports() const {
  std::lock_guard lock(mu_);
  return exports_.size();
}

size_t ShareService::live_imports() const {
  std::lock_guard lock(mu_);
  return imports_.size();
}

uint64_t ShareService::ipc(const char* name) const {
  const std::shared_ptr<dev::DeviceBackend>& device = devices_ ? devices_->device() : nullptr;
  if (!device) {
    // Counts of now: a stopped runtime holds no connection (its backend closed them after the
    // snapshot below was taken).
    if (std::strcmp(name, "importer_links") == 0 || std::strcmp(name, "exporter_links") == 0) {
      return 0;
    }
    for (size_t i = 0; i < ipc_at_stop_.size(); ++i) {
      if (std::strcmp(kIpcCounters[i], name) == 0) return ipc_at_stop_[i].load();
    }
    return 0;
  }
  CounterReader reader("ipc", name);
  device->visit_statistics(reader);
  return reader.value();
}

}  // namespace aclvmm
