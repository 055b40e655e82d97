// HalSharing: export, whitelist and import of physical memory (hal.md §3.5). The driver owns
// share ids, tokens and whitelists; the backend issues the calls the vendor runtime issues, in
// its order, including the P2P enabling before an import.
#include <cstring>

#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

constexpr uint32_t kHostDevid = 65;  // a host-memory token's device field (hal.md §3.5)

MemShareHandle blob_of(const FabricToken& t) {
  MemShareHandle h;
  static_assert(sizeof h.share_info == sizeof t.bytes, "FABRIC tokens are 128 bytes");
  std::memcpy(h.share_info, t.bytes, sizeof h.share_info);
  return h;
}

}  // namespace

Result HalSharing::export_memory(PhysicalId memory, ShareToken* out) {
  if (ctx_.fn->halMemExportToShareableHandle == nullptr) return missing();
  uint64_t token = 0;
  // The runtime always passes driver flags 0 (hal.md §7.1 #12).
  const Result r = driver_result(
      ctx_.fn->halMemExportToShareableHandle(handle_of(memory), MEM_HANDLE_TYPE_NONE, 0, &token));
  if (r.ok()) out->value = token;
  return r;
}

Result HalSharing::export_fabric(PhysicalId memory, FabricToken* inout) {
  if (ctx_.fn->halMemExportToShareableHandleV2 == nullptr) return missing();
  MemShareHandle blob = blob_of(*inout);
  const Result r = driver_result(ctx_.fn->halMemExportToShareableHandleV2(
      handle_of(memory), MEM_HANDLE_TYPE_FABRIC, 0, &blob));
  if (r.ok()) std::memcpy(inout->bytes, blob.share_info, sizeof inout->bytes);
  return r;
}

Result HalSharing::disable_validation(ShareToken token) {
  if (ctx_.fn->halMemShareHandleSetAttribute == nullptr) return missing();
  ShareHandleAttr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.enableFlag = SHR_HANDLE_NO_WLIST_ENABLE;
  return driver_result(ctx_.fn->halMemShareHandleSetAttribute(
      token.value, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, attr));
}

Result HalSharing::set_pids(ShareToken token, const int32_t* pids, uint32_t count) {
  if (ctx_.fn->halMemSetPidToShareableHandle == nullptr) return missing();
  // The driver's prototype takes int[] without const; it only reads them.
  return driver_result(ctx_.fn->halMemSetPidToShareableHandle(
      token.value, const_cast<int*>(reinterpret_cast<const int*>(pids)), count));
}

Result HalSharing::token_of_fabric(const FabricToken& fabric, ShareToken* out) {
  if (ctx_.fn->halMemTransShareableHandle == nullptr) return missing();
  MemShareHandle blob = blob_of(fabric);
  uint32_t server = 0;
  uint64_t token = 0;
  const Result r = driver_result(
      ctx_.fn->halMemTransShareableHandle(MEM_HANDLE_TYPE_FABRIC, &blob, &server, &token));
  if (r.ok()) out->value = token;
  return r;
}

// hal.md §3.5 V1 import steps 1-2: the exporter's physical device, then P2P both ways when it is
// another device. Without halMemShareHandleInfoGet the vendor skips this step.
Result HalSharing::enable_p2p_with_exporter(uint64_t token, DeviceIndex device) {
  const HalFunctions& fn = *ctx_.fn;
  if (fn.halMemShareHandleInfoGet == nullptr) return Result::success();
  ShareHandleGetInfo info;
  std::memset(&info, 0, sizeof info);
  if (Result r = driver_result(fn.halMemShareHandleInfoGet(token, &info)); !r.ok()) return r;
  const uint32_t peer = info.phyDevid;
  uint32_t host = kHostDevid;
  if (fn.halGetHostID != nullptr) (void)fn.halGetHostID(&host);
  if (peer == host) return Result::success();  // host memory: no device to link
  uint32_t me = 0, peer_logic = 0;
  if (Result r = driver_result(fn.drvDeviceGetPhyIdByIndex(static_cast<uint32_t>(device), &me));
      !r.ok()) {
    return r;
  }
  if (Result r = driver_result(fn.drvDeviceGetIndexByPhyId(peer, &peer_logic)); !r.ok()) return r;
  if (me == peer) return Result::success();
  if (Result r = driver_result(fn.halDeviceEnableP2P(peer_logic, me, 0)); !r.ok()) return r;
  return driver_result(fn.halDeviceEnableP2P(static_cast<uint32_t>(device), peer, 0));
}

Result HalSharing::describe_import(drv_mem_handle_t* h, uint64_t token, ImportedMemory* out) const {
  ImportedMemory m;
  m.memory = id_of(h);
  const uint32_t devid = static_cast<uint32_t>(token >> 32) & 0xFF;
  m.exporter_device = devid == kHostDevid ? kNoDevice : static_cast<DeviceIndex>(devid);
  m.properties.imported = true;
  m.properties.location =
      devid == kHostDevid ? Location::host() : Location::device(static_cast<DeviceIndex>(devid));
  if (ctx_.fn->halMemGetAllocationPropertiesFromHandle != nullptr) {
    drv_mem_prop p;
    std::memset(&p, 0, sizeof p);
    if (ctx_.fn->halMemGetAllocationPropertiesFromHandle(&p, h) == DRV_ERROR_NONE) {
      m.properties.page_type = static_cast<PageType>(p.pg_type);
      m.properties.mem_type = static_cast<MemType>(p.mem_type);
      if (p.side == MEM_HOST_SIDE || p.devid == kHostDevid) {
        m.properties.location = Location::host();
        m.exporter_device = kNoDevice;
      }
    }
  }
  *out = m;
  return Result::success();
}

Result HalSharing::import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) {
  if (ctx_.fn->halMemImportFromShareableHandle == nullptr) return missing();
  if (Result r = enable_p2p_with_exporter(token.value, device); !r.ok()) return r;
  drv_mem_handle_t* h = nullptr;
  if (Result r = driver_result(
          ctx_.fn->halMemImportFromShareableHandle(token.value, static_cast<uint32_t>(device), &h));
      !r.ok()) {
    return r;
  }
  return describe_import(h, token.value, out);
}

Result HalSharing::import_fabric(const FabricToken& fabric, DeviceIndex device,
                                 ImportedMemory* out) {
  const HalFunctions& fn = *ctx_.fn;
  if (fn.halMemImportFromShareableHandleV2 == nullptr || fn.halMemTransShareableHandle == nullptr) {
    return missing();
  }
  MemShareHandle blob = blob_of(fabric);
  uint32_t server = 0;
  uint64_t token = 0;
  if (Result r = driver_result(
          fn.halMemTransShareableHandle(MEM_HANDLE_TYPE_FABRIC, &blob, &server, &token));
      !r.ok()) {
    return r;
  }
  // The P2P step only for a token of this server (hal.md §3.5, V2 import); V2 needs the info
  // query (207000 without it, unlike V1).
  int64_t sid = 0x3FF;
  if (fn.halGetDeviceInfo(static_cast<uint32_t>(device), MODULE_TYPE_SYSTEM, INFO_TYPE_SERVER_ID,
                          &sid) == DRV_ERROR_NONE &&
      static_cast<uint32_t>(sid) == server) {
    if (fn.halMemShareHandleInfoGet == nullptr || fn.halGetHostID == nullptr) return missing();
    if (Result r = enable_p2p_with_exporter(token, device); !r.ok()) return r;
  }
  drv_mem_handle_t* h = nullptr;
  if (Result r = driver_result(fn.halMemImportFromShareableHandleV2(
          MEM_HANDLE_TYPE_FABRIC, &blob, static_cast<uint32_t>(device), &h));
      !r.ok()) {
    return r;
  }
  return describe_import(h, token, out);
}

}  // namespace aclvmm::dev::hal
