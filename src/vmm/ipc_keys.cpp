#include "vmm/ipc_keys.h"

#include <cstring>
#include <mutex>

#include "base/hex.h"
#include "observability/live_counts.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

constexpr size_t kEndedRemembered = 4096;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// §3.1: every call that takes a key first measures it.
Status measure(const char* key) {
  const size_t n = strnlen(key, dev::kIpcKeyBytes);
  if (n == 0) return Error(ACL_ERROR_RT_PARAM_INVALID, "the key is empty");
  if (n == dev::kIpcKeyBytes) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "the key has no NUL within its 65 bytes (keys are at most 64 characters)");
  }
  return Status::Ok();
}

dev::IpcKey key_of(const char* text) {
  dev::IpcKey key;
  std::memcpy(key.text, text, strnlen(text, dev::kIpcKeyLength));
  return key;
}

std::string quoted(const char* key) {
  return "IPC key \"" + std::string(key, strnlen(key, dev::kIpcKeyLength)) + "\"";
}

}  // namespace

dev::Sharing* IpcKeys::sharing() const {
  const std::shared_ptr<dev::DeviceBackend>& device = rt_.device();
  return device ? &device->sharing() : nullptr;
}

Status IpcKeys::refused(dev::Result r, const std::string& what) const {
  const std::shared_ptr<dev::DeviceBackend>& device = rt_.device();
  if (!device) return Error(kAclInternalError, what + ": no device backend is open");
  return device_error(*device, r, what);
}

Status IpcKeys::check_product(bool a3_only) const {
  const ProductRules product = rt_.rules();
  if (a3_only ? !product.ipc_memory_a3 : !product.ipc_memory) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 std::string(a3_only ? "aclrtIpcMemSetAttr and aclrtIpcMemImportPidInterServer are"
                                     : "IPC memory by key is") +
                     " not supported on " + *product.soc);
  }
  const std::shared_ptr<dev::DeviceBackend>& device = rt_.device();
  if (!device) return Error(kAclInternalError, "no device backend is open for sharing");
  if (!device->capabilities().ipc_keys) {
    // hal: the driver library's interface (hal.md) has no halShmem* functions to serve keys.
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 std::string("IPC memory by key is not supported by the ") + device->name() +
                     " backend: its driver library offers no IPC key functions");
  }
  return Status::Ok();
}

StatusOr<int> IpcKeys::checked_device(bool a3_only) {
  ACLVMM_ASSIGN_OR_RETURN(const int device, rt_.current_device());
  ACLVMM_RETURN_IF_ERROR(check_product(a3_only));
  return device;
}

StatusOr<dev::IpcKey> IpcKeys::export_range(uint64_t va, uint64_t size, uint64_t len,
                                            bool disable_pid_validation) {
  ACLVMM_RETURN_IF_ERROR(checked_device(false).status());
  if (len < dev::kIpcKeyBytes) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "len is " + std::to_string(len) + "; the key needs 65 bytes");
  }
  ACLVMM_ASSIGN_OR_RETURN(const IpcSource src, space_.ipc_source(va, size));
  dev::IpcRange range;
  range.memory = src.memory;
  range.offset = src.offset;
  range.size = round_up(size, src.page_size);
  range.page_size = src.page_size;
  dev::IpcKey key;
  const dev::Result r = sharing()->ipc_export(range, !disable_pid_validation, &key);
  if (!r.ok()) {
    return refused(r, "the range of " + std::to_string(size) + " bytes at " + hex(va) +
                          " could not be exported by key");
  }
  std::lock_guard lock(mu_);
  try {
    ended_.erase(key);  // a key text is never reused in a process; this only guards the record
    exports_[key] = Export{src.device, src.allocation, va, size, false};
    publish_live_count(LiveCount::kIpcKeys, exports_.size());
  } catch (const std::bad_alloc&) {
    (void)sharing()->ipc_close_export(key);  // no key stays behind a failed call
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the key");
  }
  return key;
}

Status IpcKeys::set_pids(const char* key, const int32_t* pids, int32_t count, bool a3_only) {
  // aclrtIpcMemImportPidInterServer asks for no context (runtime-extra.md §3.8).
  ACLVMM_RETURN_IF_ERROR(a3_only ? check_product(true) : checked_device(false).status());
  if (count <= 0 || count > 31) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "num is " + std::to_string(count) + "; at most 31 pids per call");
  }
  ACLVMM_RETURN_IF_ERROR(measure(key));
  const dev::Result r =
      sharing()->ipc_set_pids(key_of(key), pids, static_cast<uint32_t>(count));
  if (!r.ok()) return refused(r, "the whitelist of " + quoted(key) + " could not be changed");
  return Status::Ok();
}

Status IpcKeys::set_link(const char* key, uint64_t attr) {
  ACLVMM_RETURN_IF_ERROR(checked_device(true).status());
  ACLVMM_RETURN_IF_ERROR(measure(key));
  if (attr >= 2) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 "link " + std::to_string(attr) + " is a UB path, which this product lacks");
  }
  const dev::Result r = sharing()->ipc_set_link(key_of(key), static_cast<uint32_t>(attr));
  if (!r.ok()) return refused(r, "the link of " + quoted(key) + " could not be set");
  return Status::Ok();
}

StatusOr<uint64_t> IpcKeys::reuse_import_locked(const dev::IpcKey& key, int device) {
  Import& held = imports_.at(key);
  if (held.device != device) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, quoted(key.text) +
                                                      " is already imported onto device " +
                                                      std::to_string(rt_.user_device(held.device)));
  }
  ++held.count;
  return held.address;
}

StatusOr<uint64_t> IpcKeys::import(const char* key, bool enable_peer_access) {
  ACLVMM_ASSIGN_OR_RETURN(const int device, checked_device(false));
  ACLVMM_RETURN_IF_ERROR(measure(key));
  dev::IpcKeyFields fields;
  if (!dev::parse_ipc_key(key, &fields)) {
    // With ENABLE_PEER_ACCESS the runtime looks the key up first (no live export: 507899);
    // otherwise the driver refuses to parse it (107000).
    return Error(enable_peer_access ? ACL_ERROR_RT_DRV_INTERNAL_ERROR : ACL_ERROR_RT_PARAM_INVALID,
                 quoted(key) + " is not a key any driver makes");
  }
  if (enable_peer_access && static_cast<int>(fields.device) < rt_.device_count() &&
      static_cast<int>(fields.device) != device) {
    rt_.enable_peer_pair(static_cast<int>(fields.device), device);
  }
  const dev::IpcKey k = key_of(key);
  {
    std::lock_guard lock(mu_);
    if (imports_.count(k)) return reuse_import_locked(k, device);
  }
  dev::IpcImported imported;
  const dev::Result r = sharing()->ipc_import(k, device, &imported);
  if (!r.ok()) return refused(r, quoted(key) + " could not be imported");
  auto phys = std::make_shared<PhysicalAllocation>();
  // From here the allocation owns the backend's object: every failure below releases it.
  phys->device_memory.take(rt_.device(), imported.memory.memory);
  const dev::PhysicalProperties& props = imported.memory.properties;
  phys->imported = true;
  phys->created_by = "aclrtIpcMemImportByKey";
  phys->side = Side::kDevice;
  phys->device = device;
  phys->reported_device = imported.memory.exporter_device;
  phys->page_type = static_cast<PageType>(props.page_type);
  phys->mem_type = static_cast<MemType>(props.mem_type);
  phys->size = props.size;
  std::lock_guard lock(mu_);
  // Another thread may have imported the key meanwhile: the first address is the one.
  if (imports_.count(k)) return reuse_import_locked(k, device);
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t address,
                          space_.add_ipc_import(imported, std::move(phys), device));
  try {
    imports_[k] = Import{device, address, 1};
    publish_live_count(LiveCount::kIpcImports, imports_.size());
  } catch (const std::bad_alloc&) {
    (void)space_.remove_ipc_import(address);
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the import");
  }
  return address;
}

Status IpcKeys::close(const char* key) {
  // The runtime checks the product before the context here (runtime-extra.md §3.6).
  ACLVMM_RETURN_IF_ERROR(check_product(false));
  ACLVMM_RETURN_IF_ERROR(rt_.current_device().status());
  const bool measured = strnlen(key, dev::kIpcKeyBytes) < dev::kIpcKeyBytes;
  if (measured) {
    std::lock_guard lock(mu_);
    auto it = imports_.find(key_of(key));
    if (it != imports_.end()) {
      if (--it->second.count > 0) return Status::Ok();
      ACLVMM_RETURN_IF_ERROR(space_.remove_ipc_import(it->second.address));
      imports_.erase(it);
      publish_live_count(LiveCount::kIpcImports, imports_.size());
      return Status::Ok();
    }
  }
  ACLVMM_RETURN_IF_ERROR(measure(key));
  const dev::IpcKey k = key_of(key);
  {
    std::lock_guard lock(mu_);
    if (ended_.count(k)) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   quoted(key) + " was ended by the exporting device's last aclrtResetDevice");
    }
  }
  // The backend decides (another process's key may have to be asked about); the record goes
  // only with the key, so a failed close leaves both.
  const dev::Result r = sharing()->ipc_close_export(k);
  if (!r.ok()) return refused(r, quoted(key) + " could not be closed");
  std::lock_guard lock(mu_);
  exports_.erase(k);
  publish_live_count(LiveCount::kIpcKeys, exports_.size());
  return Status::Ok();
}

void IpcKeys::memory_gone(uint64_t base) {
  std::lock_guard lock(mu_);
  for (auto& [key, e] : exports_) {
    if (e.allocation != base || e.memory_gone) continue;
    e.memory_gone = true;
    if (dev::Sharing* s = sharing()) s->ipc_revoke(key);
  }
}

template <typename Pick>
std::vector<std::string> IpcKeys::release_if(Pick pick) {
  std::vector<std::string> lines;
  std::vector<dev::IpcKey> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = imports_.begin(); it != imports_.end();) {
      if (!pick(it->second.device)) {
        ++it;
        continue;
      }
      (void)space_.remove_ipc_import(it->second.address);
      lines.push_back("closing the import of IPC key " + std::string(it->first.text) + " at " +
                      hex(it->second.address) + " made by aclrtIpcMemImportByKey");
      it = imports_.erase(it);
    }
    for (auto it = exports_.begin(); it != exports_.end();) {
      if (!pick(it->second.device)) {
        ++it;
        continue;
      }
      ended.push_back(it->first);
      try {
        if (ended_.insert(it->first).second) ended_order_.push_back(it->first);
        if (ended_order_.size() > kEndedRemembered) {
          ended_.erase(ended_order_.front());
          ended_order_.pop_front();
        }
      } catch (const std::bad_alloc&) {
        // Only the code of a later close changes (107017 instead of 507899).
      }
      lines.push_back("closing IPC key " + std::string(it->first.text) + " of " +
                      std::to_string(it->second.size) + " bytes at " + hex(it->second.address) +
                      " made by aclrtIpcMemGetExportKey");
      it = exports_.erase(it);
    }
    publish_live_count(LiveCount::kIpcImports, imports_.size());
    publish_live_count(LiveCount::kIpcKeys, exports_.size());
  }
  if (dev::Sharing* s = sharing()) {
    for (const dev::IpcKey& k : ended) (void)s->ipc_close_export(k);  // own keys: no waiting
  }
  return lines;
}

void IpcKeys::release_device(int device) {
  (void)release_if([device](int d) { return d == device; });
}

std::vector<std::string> IpcKeys::release_all() {
  return release_if([](int) { return true; });
}

size_t IpcKeys::live_keys() const {
  std::lock_guard lock(mu_);
  return exports_.size();
}

size_t IpcKeys::live_imports() const {
  std::lock_guard lock(mu_);
  return imports_.size();
}

}  // namespace aclvmm
