// Contexts.
#include "api/api_common.h"
#include "core/runtime.h"

using namespace aclvmm;

extern "C" {

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  const char* api = "aclrtCreateContext";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  Runtime& rt = Runtime::get();
  auto dev = rt.physical_device(deviceId);
  if (!dev.ok()) return api::finish(api, dev.status());
  auto ctx = rt.create_context(*dev, false);
  if (!ctx.ok()) return api::finish(api, ctx.status());
  *context = api::from_token(*ctx);
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  const char* api = "aclrtDestroyContext";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  return api::finish(api, Runtime::get().destroy_context(api::token(context)));
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  const char* api = "aclrtSetCurrentContext";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  return api::finish(api, Runtime::get().set_current_context(api::token(context)));
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  const char* api = "aclrtGetCurrentContext";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  auto ctx = Runtime::get().current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  *context = api::from_token(*ctx);
  return ACL_SUCCESS;
}

}  // extern "C"
