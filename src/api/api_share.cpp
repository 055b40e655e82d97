// Sharing physical memory between processes: V1 and V2 shareable handles and the pid whitelist
// (behavior.md section 7). The work is in vmm/share_service.cpp; this file does the ACL and
// runtime argument checks and converts between the V1 and V2 token forms.
#include "api/api_common.h"
#include "runtime/runtime.h"
#include "vmm/share_token.h"

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

// Exports `handle`; on success *token is the V1 token and *physical the exporter's device.
aclError export_handle(const char* api, aclrtDrvMemHandle handle, uint64_t flags, uint64_t* token,
                       int* physical) {
  if (flags > kDisablePidValidation) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "flags must be 0 or DISABLE_PID_VALIDATION (1)");
  }
  Runtime& rt = Runtime::get();
  auto phys = rt.physical().find(api::token(handle));
  if (!phys) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "the handle is not a live physical memory handle (freed, forged or foreign)");
  }
  *physical = phys->on_device() ? phys->device : 0;
  // The token carries the exporter's logical device id (the host id, 0, for host memory).
  const uint32_t token_device = phys->on_device() ? static_cast<uint32_t>(rt.user_device(phys->device)) : 0;
  auto t = rt.sharing().export_handle(api::token(handle), phys, token_device, *physical,
                                      (flags & kDisablePidValidation) != 0);
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
  return api::finish(api, rt.sharing().set_pids(token, pid, static_cast<uint32_t>(pidNum),
                                                rt.config().device_count));
}

aclError import(const char* api, uint64_t token, int physical_device, aclrtDrvMemHandle* handle) {
  auto h = Runtime::get().sharing().import(token, physical_device);
  if (!h.ok()) return api::finish(api, h.status());
  *handle = api::from_token(*h);
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
  int physical = 0;
  if (aclError e = export_handle(api, handle, flags, &token, &physical)) return e;
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
  int physical = 0;
  if (aclError e = export_handle(api, handle, flags, &token, &physical)) return e;
  if (fabric(shareType)) {
    write_fabric(static_cast<uint8_t*>(shareableHandle), ShareToken::unpack(token),
                 static_cast<uint32_t>(physical));
  } else {
    std::memcpy(shareableHandle, &token, sizeof token);
  }
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
  if (fabric(shareType)) {
    ShareToken t;
    if (!read_fabric(static_cast<const uint8_t*>(shareableHandle), &t)) {
      return api::fail(api, ACL_ERROR_RT_INVALID_HANDLE, "the fabric handle is not one aclvmm produced");
    }
    token = t.pack();
  } else {
    std::memcpy(&token, shareableHandle, sizeof token);
  }
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
  if (fabric(shareType)) {
    ShareToken t;
    if (!read_fabric(static_cast<const uint8_t*>(shareableHandle), &t)) {
      return api::fail(api, ACL_ERROR_RT_INVALID_HANDLE, "the fabric handle is not one aclvmm produced");
    }
    token = t.pack();
  } else {
    std::memcpy(&token, shareableHandle, sizeof token);
  }
  return import(api, token, *dev, handle);
  ACLVMM_API_EXIT();
}

}  // extern "C"
