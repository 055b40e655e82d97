// Contexts.
#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"

using namespace aclvmm;

extern "C" {

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  ACLVMM_API_ENTER("aclrtCreateContext");
  ACLVMM_FORWARD(aclrtCreateContext, context, deviceId);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  Runtime& rt = Runtime::get();
  auto dev = rt.physical_device(deviceId);
  if (!dev.ok()) return api::finish(api, dev.status());
  auto ctx = rt.create_context(*dev, false);
  if (!ctx.ok()) return api::finish(api, ctx.status());
  *context = api::from_token(*ctx);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtDestroyContext(aclrtContext context) {
  ACLVMM_API_ENTER("aclrtDestroyContext");
  ACLVMM_FORWARD(aclrtDestroyContext, context);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  return api::finish(api, Runtime::get().destroy_context(api::token(context)));
  ACLVMM_API_EXIT();
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  ACLVMM_API_ENTER("aclrtSetCurrentContext");
  ACLVMM_FORWARD(aclrtSetCurrentContext, context);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  return api::finish(api, Runtime::get().set_current_context(api::token(context)));
  ACLVMM_API_EXIT();
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  ACLVMM_API_ENTER("aclrtGetCurrentContext");
  ACLVMM_FORWARD(aclrtGetCurrentContext, context);
  ACLVMM_REQUIRE_NOT_NULL(api, context);
  auto ctx = Runtime::get().current_context();
  if (!ctx.ok()) return api::finish(api, ctx.status());
  *context = api::from_token(*ctx);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
