// Sharing between processes (hal.md §3.5) over emu's Sharing unit, which does what the kernel
// module does: share ids, the whitelist with its pid-reuse stamps checked against kernel-verified
// credentials, the same-process rules, the memory living on in importers.
//
// Token layout: emu packs the HAL's layout (bits 0-31 share id, 32-39 the exporter's device)
// but puts device 0 in a host-memory token where the HAL puts its host id 65 (§3.5); the FABRIC
// blob likewise (its device and physical-device words). The fake translates at the boundary: the
// caller only ever sees 65, emu only ever 0. No information is lost, since emu finds an export by
// its share id.
//
// The records kept here: own exports (token -> handle, for the NO_WLIST attribute and for the
// end of the export with the handle), and the import table that gives the same handle back for
// the same (token, device) with one more reference. emu calls that may wait for another process
// (import, set-pid of a foreign token) run without the tables' lock.
#include <unistd.h>

#include <cstring>

#include "drivers/emu/sharing/token.h"
#include "drivers/hal/fake/fake_hal.h"
#include "drivers/host/process_facts.h"

namespace aclvmm::fakehal {
namespace {

uint32_t token_device(uint64_t token) { return static_cast<uint32_t>((token >> 32) & 0xFF); }
uint64_t with_device(uint64_t token, uint32_t device) {
  return (token & ~(uint64_t{0xFF} << 32)) | (static_cast<uint64_t>(device & 0xFF) << 32);
}
uint64_t to_emu(uint64_t token) {
  return token_device(token) == kHostId ? with_device(token, 0) : token;
}

// The fabric blob's words 2 (logical device) and 3 (physical device). Emu writes its logical
// device in both; the caller sees the driver's: 65 in both for host memory, the physical id in
// word 3 (ACLVMM_HAL_FAKE_PHYSICAL_BASE).
void set_device_words(uint8_t* blob, uint32_t device) {
  const uint32_t phy = physical_of(device);
  std::memcpy(blob + 8, &device, 4);
  std::memcpy(blob + 12, &phy, 4);
}
void to_driver_words(uint8_t* blob, bool host) {
  uint32_t d = 0;
  std::memcpy(&d, blob + 8, 4);
  set_device_words(blob, host ? kHostId : d);
}
dev::FabricToken fabric_to_emu(const MemShareHandle& in) {
  dev::FabricToken t;
  std::memcpy(t.bytes, in.share_info, sizeof t.bytes);
  uint32_t d = 0;
  std::memcpy(&d, t.bytes + 8, 4);
  if (d == kHostId) d = 0;
  std::memcpy(t.bytes + 8, &d, 4);
  std::memcpy(t.bytes + 12, &d, 4);
  return t;
}

// "Token devid invalid" of the HAL's checks: a device field no driver writes.
bool bad_token_device(uint64_t token) { return token_device(token) >= 66; }

drvError_t gate() {
  Process* p = Process::peek();
  return p != nullptr && p->svm_open() ? DRV_ERROR_NONE : DRV_ERROR_INVALID_HANDLE;
}

// One export (p.mu held); *token in the HAL's layout.
drvError_t export_handle(Process& p, drv_mem_handle* h, uint64_t* token, MemShareHandle* fabric) {
  if (drvError_t e = check_handle(p, h, DRV_ERROR_INVALID_VALUE)) return e;
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  const bool host = h->side == MEM_HOST_SIDE;
  uint64_t value = 0;
  if (fabric != nullptr) {
    dev::FabricToken blob;
    std::memcpy(blob.bytes, fabric->share_info, sizeof blob.bytes);
    if (dev::Result r = b->sharing().export_fabric(h->memory, &blob); !r.ok()) {
      return from_result(r);
    }
    dev::ShareToken t;
    (void)b->sharing().token_of_fabric(blob, &t);
    value = t.value;
    to_driver_words(blob.bytes, host);
    std::memcpy(fabric->share_info, blob.bytes, sizeof blob.bytes);
  } else {
    dev::ShareToken t;
    if (dev::Result r = b->sharing().export_memory(h->memory, &t); !r.ok()) return from_result(r);
    value = t.value;
  }
  if (host) value = with_device(value, kHostId);
  p.exports[value] = h;  // the export ends with the handle: a bad_alloc here is no leak
  h->export_token = value;
  *token = value;
  return DRV_ERROR_NONE;
}

drvError_t export_v1(drv_mem_handle* h, uint32_t type, uint64_t flags,
                     uint64_t* token) {
  if (token == nullptr) return DRV_ERROR_INVALID_VALUE;
  // The runtime always passes flags 0 (§7.1 #12); other flags are refused as V2 refuses them.
  if (type != MEM_HANDLE_TYPE_NONE || flags != 0) return DRV_ERROR_NOT_SUPPORT;
  if (drvError_t e = gate()) return e;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  return export_handle(p, h, token, nullptr);
}

drvError_t export_v2(drv_mem_handle* h, uint32_t type, uint64_t flags,
                     MemShareHandle* token) {
  if (token == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (type >= MEM_HANDLE_TYPE_MAX || flags != 0 || type == MEM_HANDLE_TYPE_POSIX ||
      (type == MEM_HANDLE_TYPE_FABRIC && !super_pod(config().family))) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  if (drvError_t e = gate()) return e;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  uint64_t value = 0;
  if (type == MEM_HANDLE_TYPE_FABRIC) return export_handle(p, h, &value, token);
  if (drvError_t e = export_handle(p, h, &value, nullptr)) return e;
  std::memcpy(token->share_info, &value, sizeof value);  // DEFAULT: the V1 token, 8 bytes
  return DRV_ERROR_NONE;
}

// The import table first, then emu without the lock (it may wait for the exporter), then the
// table again: a concurrent import of the same (token, device) may have won meanwhile.
drvError_t import(uint64_t token, const MemShareHandle* fabric, uint32_t device,
                  drv_mem_handle** handle) {
  if (handle == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (device >= 66) return DRV_ERROR_INVALID_DEVICE;
  if (drvError_t e = gate()) return e;
  if (bad_token_device(token)) return DRV_ERROR_INVALID_HANDLE;
  Process& p = Process::get();
  dev::DeviceBackend* b = nullptr;
  const auto key = std::make_pair(token, static_cast<int32_t>(device));
  {
    std::lock_guard lock(p.mu);
    if (auto it = p.imports.find(key); it != p.imports.end()) {
      ++it->second->ref;
      *handle = it->second;
      return DRV_ERROR_NONE;
    }
    if (!valid_device(device) || !p.mem_open[device]) return DRV_ERROR_INVALID_DEVICE;
    b = p.backend();
    if (b == nullptr) return DRV_ERROR_INNER_ERR;
  }
  dev::ImportedMemory in;
  const dev::Result r =
      fabric != nullptr
          ? b->sharing().import_fabric(fabric_to_emu(*fabric), static_cast<int32_t>(device), &in)
          : b->sharing().import_memory(dev::ShareToken{to_emu(token)},
                                       static_cast<int32_t>(device), &in);
  if (!r.ok()) return from_result(r);  // EFAULT 4, EACCES 17, ETIMEDOUT 16 ...
  std::lock_guard lock(p.mu);
  if (auto it = p.imports.find(key); it != p.imports.end()) {
    (void)b->physical().release(in.memory);
    ++it->second->ref;
    *handle = it->second;
    return DRV_ERROR_NONE;
  }
  drv_mem_handle* h = nullptr;
  try {
    h = new_handle(p);
    p.imports.emplace(key, h);
  } catch (...) {
    if (h != nullptr) drop_reference(p, h);
    (void)b->physical().release(in.memory);
    throw;
  }
  const bool on_device = in.properties.location.kind == dev::Location::Kind::kDevice;
  h->side = on_device ? MEM_DEV_SIDE : MEM_HOST_SIDE;
  h->devid = on_device ? device : kHostId;  // an import belongs to the importing device
  h->pg_type = static_cast<uint32_t>(in.properties.page_type);
  h->mem_type = static_cast<uint32_t>(in.properties.mem_type);
  h->module_id = APP_MODULE_ID;  // the exporter's module does not travel with the memory
  h->prop = drv_mem_prop{h->side, on_device ? static_cast<uint32_t>(in.exporter_device) : kHostId,
                         h->module_id, h->pg_type, h->mem_type, 0};
  h->size = in.properties.size;
  h->memory = in.memory;
  h->imported = true;
  h->import_token = token;
  h->import_device = static_cast<int32_t>(device);
  *handle = h;
  return DRV_ERROR_NONE;
}

drvError_t import_v2(uint32_t type, MemShareHandle* token, uint32_t device,
                     drv_mem_handle** handle) {
  if (token == nullptr || handle == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (type == MEM_HANDLE_TYPE_NONE) {
    uint64_t value = 0;
    std::memcpy(&value, token->share_info, sizeof value);
    return import(value, nullptr, device, handle);
  }
  if (type != MEM_HANDLE_TYPE_FABRIC || !super_pod(config().family)) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  dev::emu::share::FabricFields fields;
  if (!dev::emu::share::read_fabric(token->share_info, &fields)) return DRV_ERROR_INVALID_VALUE;
  // The import table's key: the token inside the blob, in the HAL's layout.
  return import(fields.token.pack(), token, device, handle);
}

drvError_t set_pids(uint64_t token, int pids[], uint32_t count) {
  if (pids == nullptr || count == 0 || count > 65535) return DRV_ERROR_INVALID_VALUE;
  if (drvError_t e = gate()) return e;
  if (bad_token_device(token)) return DRV_ERROR_INVALID_HANDLE;
  dev::DeviceBackend* b = Process::get().backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  static_assert(sizeof(int) == sizeof(int32_t));
  // EFAULT unknown 4, EACCES not the exporter 17, EPERM whitelist off 46, EINVAL all zero 8.
  return from_result(b->sharing().set_pids(dev::ShareToken{to_emu(token)},
                                           reinterpret_cast<const int32_t*>(pids), count));
}

drvError_t trans(uint32_t type, MemShareHandle* token, uint32_t* server,
                 uint64_t* token64) {
  if (token == nullptr || server == nullptr || token64 == nullptr) return DRV_ERROR_INVALID_VALUE;
  uint32_t stored = 0;
  std::memcpy(&stored, token->share_info, sizeof stored);
  if (type >= MEM_HANDLE_TYPE_MAX || stored != type ||
      type != MEM_HANDLE_TYPE_FABRIC) {
    return DRV_ERROR_INVALID_VALUE;
  }
  dev::emu::share::FabricFields fields;
  if (!dev::emu::share::read_fabric(token->share_info, &fields)) return DRV_ERROR_INVALID_VALUE;
  // The server the SDID names, as the HAL parses it.
  *server = fields.server_id;
  *token64 = fields.token.pack();
  return DRV_ERROR_NONE;
}

drvError_t set_attribute(uint64_t token, uint32_t type, const ShareHandleAttr& value) {
  if (type >= SHR_HANDLE_ATTR_TYPE_MAX) return DRV_ERROR_NOT_SUPPORT;
  if (drvError_t e = gate()) return e;
  if (bad_token_device(token)) return DRV_ERROR_INVALID_HANDLE;
  if (value.enableFlag > SHR_HANDLE_NO_WLIST_ENABLE) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  const bool own = p.exports.count(token) != 0;
  if (value.enableFlag == SHR_HANDLE_WLIST_ENABLE) {
    // Validation cannot be turned back on; asking for what is already so changes nothing.
    return own && p.no_wlist.count(token) == 0 ? DRV_ERROR_NONE : DRV_ERROR_OPER_NOT_PERMITTED;
  }
  // Only the exporter, and only before any pid (emu's EPERM otherwise).
  if (dev::Result r = b->sharing().disable_validation(dev::ShareToken{to_emu(token)}); !r.ok()) {
    return from_result(r);
  }
  if (own) p.no_wlist.insert(token);
  return DRV_ERROR_NONE;
}

drvError_t get_attribute(uint64_t token, uint32_t type, ShareHandleAttr* value) {
  if (value == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (type >= SHR_HANDLE_ATTR_TYPE_MAX) return DRV_ERROR_NOT_SUPPORT;
  if (drvError_t e = gate()) return e;
  if (bad_token_device(token)) return DRV_ERROR_INVALID_HANDLE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  // The kernel answers the exporter only: any other token is one it does not know here.
  if (p.exports.count(token) == 0) return DRV_ERROR_INVALID_HANDLE;
  *value = ShareHandleAttr{};
  value->enableFlag = p.no_wlist.count(token) != 0 ? SHR_HANDLE_NO_WLIST_ENABLE
                                                    : SHR_HANDLE_WLIST_ENABLE;
  return DRV_ERROR_NONE;
}

drvError_t info_get(uint64_t token, ShareHandleGetInfo* info) {
  if (info == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (drvError_t e = gate()) return e;
  const uint32_t device = token_device(token);
  if (device != kHostId && !valid_device(device)) return DRV_ERROR_INVALID_HANDLE;
  *info = ShareHandleGetInfo{};
  info->phyDevid = physical_of(device);  // the host keeps 65
  return DRV_ERROR_NONE;
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::raw;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemExportToShareableHandle(drv_mem_handle_t* handle,
                                                      drv_mem_handle_type type, uint64_t flags,
                                                      uint64_t* token) {
  return entry(Fn::halMemExportToShareableHandle,
               [&] { return aclvmm::fakehal::export_v1(handle, raw(type), flags, token); });
}

FAKE_HAL_API drvError_t halMemExportToShareableHandleV2(drv_mem_handle_t* handle,
                                                        drv_mem_handle_type type, uint64_t flags,
                                                        struct MemShareHandle* token) {
  return entry(Fn::halMemExportToShareableHandleV2,
               [&] { return aclvmm::fakehal::export_v2(handle, raw(type), flags, token); });
}

FAKE_HAL_API drvError_t halMemImportFromShareableHandle(uint64_t token, uint32_t dev,
                                                        drv_mem_handle_t** handle) {
  return entry(Fn::halMemImportFromShareableHandle,
               [&] { return aclvmm::fakehal::import(token, nullptr, dev, handle); });
}

FAKE_HAL_API drvError_t halMemImportFromShareableHandleV2(drv_mem_handle_type type,
                                                          struct MemShareHandle* token,
                                                          uint32_t dev,
                                                          drv_mem_handle_t** handle) {
  return entry(Fn::halMemImportFromShareableHandleV2,
               [&] { return aclvmm::fakehal::import_v2(raw(type), token, dev, handle); });
}

FAKE_HAL_API drvError_t halMemSetPidToShareableHandle(uint64_t token, int pids[],
                                                      uint32_t count) {
  return entry(Fn::halMemSetPidToShareableHandle,
               [&] { return aclvmm::fakehal::set_pids(token, pids, count); });
}

FAKE_HAL_API drvError_t halMemTransShareableHandle(drv_mem_handle_type type,
                                                   struct MemShareHandle* token,
                                                   uint32_t* serverId, uint64_t* token64) {
  return entry(Fn::halMemTransShareableHandle,
               [&] { return aclvmm::fakehal::trans(raw(type), token, serverId, token64); });
}

FAKE_HAL_API drvError_t halMemShareHandleSetAttribute(uint64_t token,
                                                      enum ShareHandleAttrType type,
                                                      struct ShareHandleAttr value) {
  return entry(Fn::halMemShareHandleSetAttribute,
               [&] { return aclvmm::fakehal::set_attribute(token, raw(type), value); });
}

FAKE_HAL_API drvError_t halMemShareHandleGetAttribute(uint64_t token,
                                                      enum ShareHandleAttrType type,
                                                      struct ShareHandleAttr* value) {
  return entry(Fn::halMemShareHandleGetAttribute,
               [&] { return aclvmm::fakehal::get_attribute(token, raw(type), value); });
}

FAKE_HAL_API drvError_t halMemShareHandleInfoGet(uint64_t token, struct ShareHandleGetInfo* info) {
  return entry(Fn::halMemShareHandleInfoGet,
               [&] { return aclvmm::fakehal::info_get(token, info); });
}

FAKE_HAL_API pid_t drvDeviceGetBareTgid(void) {
  // Cached per pid, as the HAL caches it; a forked child asks again.
  static std::atomic<pid_t> cached_pid{0}, cached_tgid{-1};
  if (aclvmm::fakehal::injected(Fn::drvDeviceGetBareTgid) != 0) return -1;
  const pid_t me = getpid();
  if (cached_pid.load(std::memory_order_acquire) == me) {
    return cached_tgid.load(std::memory_order_relaxed);
  }
  const pid_t tgid = aclvmm::dev::host::bare_tgid();
  cached_tgid.store(tgid, std::memory_order_relaxed);
  cached_pid.store(me, std::memory_order_release);
  return tgid;
}
