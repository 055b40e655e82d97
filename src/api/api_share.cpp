// Sharing physical memory between processes (V1 and V2 shareable handles, pid whitelist).
//
// The ACL-layer and runtime argument checks are complete; the sharing itself (export tokens,
// the exporter's import service, the whitelist) is issue 3 and answers 207000 until then, the
// code applications already treat as "feature absent".
#include "api/api_common.h"
#include "core/runtime.h"

using namespace aclvmm;

namespace {

aclError not_yet(const char* api) {
  return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "sharing memory between processes is not available in this build yet");
}

aclError check_share_type(const char* api, aclrtMemSharedHandleType share_type) {
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

aclError check_export(const char* api, aclrtDrvMemHandle handle, uint64_t flags) {
  if (flags > 1) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "flags must be 0 or DISABLE_PID_VALIDATION (1)");
  }
  if (!Runtime::get().physical().find(api::token(handle))) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "the handle is not a live physical memory handle");
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType,
                                         uint64_t flags, uint64_t* shareableHandle) {
  const char* api = "aclrtMemExportToShareableHandle";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  if (api::raw(handleType) != ACL_MEM_HANDLE_TYPE_NONE) return api::invalid(api, "handleType must be NONE");
  if (aclError e = check_export(api, handle, flags)) return e;
  return not_yet(api);
}

aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags,
                                           aclrtMemSharedHandleType shareType, void* shareableHandle) {
  const char* api = "aclrtMemExportToShareableHandleV2";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  if (aclError e = check_share_type(api, shareType)) return e;
  if (aclError e = check_export(api, handle, flags)) return e;
  return not_yet(api);
}

aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t* pid, size_t pidNum) {
  const char* api = "aclrtMemSetPidToShareableHandle";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  if (pidNum == 0) return api::invalid(api, "pidNum must be greater than 0");
  if (static_cast<uint32_t>(pidNum) > 65535) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "at most 65535 pids per call");
  }
  (void)shareableHandle;
  return not_yet(api);
}

aclError aclrtMemSetPidToShareableHandleV2(void* shareableHandle, aclrtMemSharedHandleType shareType,
                                           int32_t* pid, size_t pidNum) {
  const char* api = "aclrtMemSetPidToShareableHandleV2";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  if (pidNum == 0) return api::invalid(api, "pidNum must be greater than 0");
  if (aclError e = check_share_type(api, shareType)) return e;
  if (static_cast<uint32_t>(pidNum) > 65535) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "at most 65535 pids per call");
  }
  return not_yet(api);
}

aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                           aclrtDrvMemHandle* handle) {
  const char* api = "aclrtMemImportFromShareableHandle";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  Runtime& rt = Runtime::get();
  auto dev = rt.physical_device(deviceId);
  if (!dev.ok()) return api::finish(api, dev.status());
  auto ctx = rt.current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  (void)shareableHandle;
  return not_yet(api);
}

aclError aclrtMemImportFromShareableHandleV2(void* shareableHandle, aclrtMemSharedHandleType shareType,
                                             uint64_t flags, aclrtDrvMemHandle* handle) {
  const char* api = "aclrtMemImportFromShareableHandleV2";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, shareableHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (aclError e = check_share_type(api, shareType)) return e;
  auto ctx = Runtime::get().current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  return not_yet(api);
}

}  // extern "C"
