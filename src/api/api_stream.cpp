// Streams.
#include "api/api_common.h"
#include "runtime/runtime.h"

using namespace aclvmm;

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  ACLVMM_API_ENTER("aclrtCreateStream");
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  auto s = Runtime::get().create_stream();
  if (!s.ok()) return api::finish(api, s.status());
  *stream = api::from_token(*s);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtDestroyStream(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtDestroyStream");
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), false));
  ACLVMM_API_EXIT();
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtDestroyStreamForce");
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), true));
  ACLVMM_API_EXIT();
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtSynchronizeStream");
  auto s = Runtime::get().resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  return api::finish(api, (*s)->synchronize());
  ACLVMM_API_EXIT();
}

}  // extern "C"
