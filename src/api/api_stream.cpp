// Streams.
#include "api/api_common.h"
#include "core/runtime.h"

using namespace aclvmm;

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  const char* api = "aclrtCreateStream";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  auto s = Runtime::get().create_stream();
  if (!s.ok()) return api::finish(api, s.status());
  *stream = api::from_token(*s);
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  const char* api = "aclrtDestroyStream";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), false));
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  const char* api = "aclrtDestroyStreamForce";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), true));
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  const char* api = "aclrtSynchronizeStream";
  ACLVMM_ENTRY(api);
  auto s = Runtime::get().resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  return api::finish(api, (*s)->synchronize());
}

}  // extern "C"
