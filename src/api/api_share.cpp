// Sharing physical memory between processes: V1 and V2 shareable handles and the pid whitelist
// (behavior.md section 7). The work is in vmm/share.cpp and the device backend's Sharing unit
// (which packs the tokens); this file does the ACL and runtime argument checks and picks the V1
// or V2 form.
#include "api/api_common.h"
#include "api/handles.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

constexpr uint64_t kDisablePidValidation = ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION;

// By reference: an out-of-range value must not be copied as the enum type (undefined behaviour);
// api::raw reads it as an int (found by tests/fuzz).
aclError check_share_type(const char* api, const aclrtMemSharedHandleType& share_type) {
  const int type = api::raw(share_type);
  if (type != ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT && type != ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "shareType " + std::to_string(type) + " is not DEFAULT or FABRIC");
  }
  if (type == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC &&
      !Runtime::get().config().product.supports(Feature::kFabricShare)) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     "FABRIC share handles need a super-pod product (A3); this is " +
                         Runtime::get().config().product.soc);
  }
  return ACL_SUCCESS;
}

bool fabric(const aclrtMemSharedHandleType& t) {
  return api::raw(t) == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC;
}

// Exports `handle`: the V1 token in *token, or, with `fabric`, the V2 FABRIC blob written there.
aclError export_handle(const char* api, aclrtDrvMemHandle handle, uint64_t flags, uint64_t* token,
                       uint8_t* fabric = nullptr) {
  if (flags > kDisablePidValidation) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "flags must be 0 or DISABLE_PID_VALIDATION (1)");
  }
  Runtime& rt = Runtime::get();
  const uint64_t core_handle = api::handle_in(handle);
  auto phys = rt.physical().find(core_handle);
  if (!phys) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "the handle is not a live physical memory handle (freed, forged or foreign)");
  }
  const bool open_to_all = (flags & kDisablePidValidation) != 0;
  if (fabric != nullptr) {
    return api::finish(api, rt.sharing().export_fabric(core_handle, phys, open_to_all, fabric));
  }
  auto t = rt.sharing().export_handle(core_handle, phys, open_to_all);
  if (!t.ok()) return api::finish(api, t.status());
  *token = *t;
  return ACL_SUCCESS;
}

// The V1 token a V2 handle stands for: a FABRIC blob's, or the 8 bytes of a DEFAULT one.
aclError v1_token(const char* api, const aclrtMemSharedHandleType& share_type,
                  const void* shareable, uint64_t* token) {
  if (!fabric(share_type)) {
    std::memcpy(token, shareable, sizeof *token);
    return ACL_SUCCESS;
  }
  auto t = Runtime::get().sharing().token_of_fabric(static_cast<const uint8_t*>(shareable));
  if (!t.ok()) return api::finish(api, t.status());
  *token = *t;
  return ACL_SUCCESS;
}

aclError set_pids(const char* api, uint64_t token, int32_t* pid, size_t pidNum) {
  // The count travels as a uint32_t in the vendor runtime.
  if (static_cast<uint32_t>(pidNum) > 65535) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "at most 65535 pids per call");
  }
  Runtime& rt = Runtime::get();
  return api::finish(api, rt.sharing().set_pids(token, pid, static_cast<uint32_t>(pidNum)));
}

aclError import(const char* api, uint64_t token, int physical_device, aclrtDrvMemHandle* handle,
                const uint8_t* fabric = nullptr) {
  auto h = Runtime::get().sharing().import(token, physical_device, fabric);
  if (!h.ok()) return api::finish(api, h.status());
  *handle = api::handle_out(*h);
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType,
                                         uint64_t flags, uint64_t* shareableHandle) {
  ACLVMM_API_ENTER("aclrtMemExportToShareableHandle");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  if (api::raw(handleType) != ACL_MEM_HANDLE_TYPE_NONE) return api::invalid(api, "handleType must be NONE");
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  uint64_t token = 0;
  if (aclError e = export_handle(api, handle, flags, &token)) return e;
  *shareableHandle = token;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags,
                                           aclrtMemSharedHandleType shareType, void* shareableHandle) {
  ACLVMM_API_ENTER("aclrtMemExportToShareableHandleV2");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  if (aclError e = check_share_type(api, shareType)) return e;
  uint64_t token = 0;
  if (fabric(shareType)) {
    return export_handle(api, handle, flags, &token, static_cast<uint8_t*>(shareableHandle));
  }
  if (aclError e = export_handle(api, handle, flags, &token)) return e;
  std::memcpy(shareableHandle, &token, sizeof token);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t* pid, size_t pidNum) {
  ACLVMM_API_ENTER("aclrtMemSetPidToShareableHandle");
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  if (pidNum == 0) return api::invalid(api, "pidNum must be greater than 0");
  return set_pids(api, shareableHandle, pid, pidNum);
  ACLVMM_API_EXIT();
}

aclError aclrtMemSetPidToShareableHandleV2(void* shareableHandle, aclrtMemSharedHandleType shareType,
                                           int32_t* pid, size_t pidNum) {
  ACLVMM_API_ENTER("aclrtMemSetPidToShareableHandleV2");
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  if (pidNum == 0) return api::invalid(api, "pidNum must be greater than 0");
  if (aclError e = check_share_type(api, shareType)) return e;
  uint64_t token = 0;
  if (aclError e = v1_token(api, shareType, shareableHandle, &token)) return e;
  return set_pids(api, token, pid, pidNum);
  ACLVMM_API_EXIT();
}

aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                           aclrtDrvMemHandle* handle) {
  ACLVMM_API_ENTER("aclrtMemImportFromShareableHandle");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  Runtime& rt = Runtime::get();
  auto dev = rt.physical_device(deviceId);
  if (!dev.ok()) return api::finish(api, dev.status());
  auto ctx = rt.current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  return import(api, shareableHandle, *dev, handle);
  ACLVMM_API_EXIT();
}

aclError aclrtMemImportFromShareableHandleV2(void* shareableHandle, aclrtMemSharedHandleType shareType,
                                             uint64_t flags, aclrtDrvMemHandle* handle) {
  ACLVMM_API_ENTER("aclrtMemImportFromShareableHandleV2");
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (aclError e = check_share_type(api, shareType)) return e;
  // V2 imports onto the calling thread's current device.
  auto dev = Runtime::get().current_device();
  if (!dev.ok()) return api::finish(api, dev.status());
  uint64_t token = 0;
  if (aclError e = v1_token(api, shareType, shareableHandle, &token)) return e;
  // Unlike V1, a V2 import asks the driver who exported the token and cannot go on without the
  // answer (hal.md §3.5; FABRIC: the backend decides, as only a token of this server needs it).
  if (!fabric(shareType) && !Runtime::get().device()->capabilities().token_exporter_query) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     "a V2 import needs the driver to tell the token's exporter "
                     "(halMemShareHandleInfoGet, halGetHostID), which this driver library lacks");
  }
  return import(api, token, *dev, handle,
                fabric(shareType) ? static_cast<const uint8_t*>(shareableHandle) : nullptr);
  ACLVMM_API_EXIT();
}

}  // extern "C"
