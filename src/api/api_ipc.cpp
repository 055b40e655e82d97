// IPC memory sharing by key (runtime-extra.md §3): aclrtIpcMemGetExportKey, SetImportPid,
// ImportByKey, Close, SetAttr, ImportPidInterServer. The ACL layer's checks (and the runtime's
// argument checks made before the context) are here; the rest is vmm/ipc_keys.cpp.
#include <cstring>
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

aclError param(const char* api, const std::string& message) {
  return api::finish(api, Error(ACL_ERROR_RT_PARAM_INVALID, message));
}

}  // namespace

extern "C" {

aclError aclrtIpcMemGetExportKey(void* devPtr, size_t size, char* key, size_t len, uint64_t flags) {
  ACLVMM_API_ENTER("aclrtIpcMemGetExportKey");
  ACLVMM_FORWARD(aclrtIpcMemGetExportKey, devPtr, size, key, len, flags);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, key);
  if (size == 0) return param(api, "size must not be 0");
  // The runtime keeps len as a 32-bit count.
  const uint32_t len32 = static_cast<uint32_t>(len);
  if (len32 == 0) return param(api, "len must not be 0");
  if (flags > ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION) {
    return param(api, "flags " + std::to_string(flags) + " is not an ACL_RT_IPC_MEM_EXPORT_FLAG_*");
  }
  auto made = Runtime::get().ipc_keys().export_range(
      api::addr(devPtr), size, len32, flags == ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  if (!made.ok()) return api::finish(api, made.status());
  std::memcpy(key, made->text, sizeof made->text);  // all 65 bytes
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtIpcMemSetImportPid(const char* key, int32_t* pid, size_t num) {
  ACLVMM_API_ENTER("aclrtIpcMemSetImportPid");
  ACLVMM_FORWARD(aclrtIpcMemSetImportPid, key, pid, num);
  ACLVMM_REQUIRE_NOT_NULL(api, key);
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  // The runtime converts num to int32_t: 0 and counts of 2^31 or more are no count.
  const int32_t count = static_cast<int32_t>(num);
  if (count <= 0) return param(api, "num " + std::to_string(num) + " is no pid count");
  return api::finish(api, Runtime::get().ipc_keys().set_pids(key, pid, count, false));
  ACLVMM_API_EXIT();
}

aclError aclrtIpcMemImportByKey(void** devPtr, const char* key, uint64_t flags) {
  ACLVMM_API_ENTER("aclrtIpcMemImportByKey");
  ACLVMM_FORWARD(aclrtIpcMemImportByKey, devPtr, key, flags);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, key);
  if (flags > ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS) {
    return param(api, "flags " + std::to_string(flags) + " is not an ACL_RT_IPC_MEM_IMPORT_FLAG_*");
  }
  auto address =
      Runtime::get().ipc_keys().import(key, flags == ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS);
  if (!address.ok()) return api::finish(api, address.status());
  *devPtr = reinterpret_cast<void*>(*address);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtIpcMemClose(const char* key) {
  ACLVMM_API_ENTER("aclrtIpcMemClose");
  ACLVMM_FORWARD(aclrtIpcMemClose, key);
  ACLVMM_REQUIRE_NOT_NULL(api, key);
  return api::finish(api, Runtime::get().ipc_keys().close(key));
  ACLVMM_API_EXIT();
}

aclError aclrtIpcMemSetAttr(const char* key, aclrtIpcMemAttrType type, uint64_t attr) {
  ACLVMM_API_ENTER("aclrtIpcMemSetAttr");
  ACLVMM_FORWARD(aclrtIpcMemSetAttr, key, type, attr);
  // No ACL-layer check: the runtime's come first, all 107000.
  if (key == nullptr) return param(api, "key must not be NULL");
  if (api::raw(type) != ACL_RT_IPC_MEM_ATTR_ACCESS_LINK) {
    return param(
        api, "type " + std::to_string(api::raw(type)) + " is not ACL_RT_IPC_MEM_ATTR_ACCESS_LINK");
  }
  if (attr > ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_MULTI_PORT_PATH) {
    return param(api,
                 "attr " + std::to_string(attr) + " is not an ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_*");
  }
  return api::finish(api, Runtime::get().ipc_keys().set_link(key, attr));
  ACLVMM_API_EXIT();
}

aclError aclrtIpcMemImportPidInterServer(const char* key, aclrtServerPid* serverPids, size_t num) {
  ACLVMM_API_ENTER("aclrtIpcMemImportPidInterServer");
  ACLVMM_FORWARD(aclrtIpcMemImportPidInterServer, key, serverPids, num);
  // No ACL-layer check: the runtime's, all 107000.
  if (key == nullptr) return param(api, "key must not be NULL");
  if (serverPids == nullptr) return param(api, "serverPids must not be NULL");
  if (num == 0) return param(api, "num must not be 0");
  // aclvmm is one server: each entry is a set-pid of its pids; earlier entries stay applied.
  for (size_t i = 0; i < num; ++i) {
    const aclrtServerPid& entry = serverPids[i];
    if (entry.pid == nullptr) {
      return param(api, "serverPids[" + std::to_string(i) + "].pid must not be NULL");
    }
    const int32_t count = static_cast<int32_t>(entry.num & 0x7fffffff);
    Status st = Runtime::get().ipc_keys().set_pids(key, entry.pid, count, true);
    if (!st.ok()) return api::finish(api, st);
  }
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
