// Streams.
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"
#include "runtime/stream_values.h"

using namespace aclvmm;

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  ACLVMM_API_ENTER("aclrtCreateStream");
  ACLVMM_FORWARD(aclrtCreateStream, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  auto s = Runtime::get().create_stream();
  if (!s.ok()) return api::finish(api, s.status());
  *stream = api::from_token(*s);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtDestroyStream(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtDestroyStream");
  ACLVMM_FORWARD(aclrtDestroyStream, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), false));
  ACLVMM_API_EXIT();
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtDestroyStreamForce");
  ACLVMM_FORWARD(aclrtDestroyStreamForce, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  return api::finish(api, Runtime::get().destroy_stream(api::token(stream), true));
  ACLVMM_API_EXIT();
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtSynchronizeStream");
  ACLVMM_FORWARD(aclrtSynchronizeStream, stream);
  auto s = Runtime::get().resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  return api::finish(api, (*s)->synchronize());
  ACLVMM_API_EXIT();
}

aclError aclrtCreateStreamWithConfig(aclrtStream* stream, uint32_t priority, uint32_t flag) {
  ACLVMM_API_ENTER("aclrtCreateStreamWithConfig");
  ACLVMM_FORWARD(aclrtCreateStreamWithConfig, stream, priority, flag);
  ACLVMM_REQUIRE_NOT_NULL(api, stream);
  (void)priority;  // reserved: every value is accepted and changes nothing
  // Only the known bits are translated; the others are ignored, as the vendor's ACL layer does.
  constexpr uint32_t kKnownFlags = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC |
                                   ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE |
                                   ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
  auto s = Runtime::get().create_stream_with_flags(flag & kKnownFlags);
  if (!s.ok()) return api::finish(api, s.status());
  *stream = api::from_token(*s);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  ACLVMM_API_ENTER("aclrtSynchronizeStreamWithTimeout");
  ACLVMM_FORWARD(aclrtSynchronizeStreamWithTimeout, stream, timeout);
  // The vendor's ACL layer answers this one with 107000 itself, not 100000.
  if (timeout < -1) {
    return api::finish(api, Error(ACL_ERROR_RT_PARAM_INVALID,
                                  "the timeout must be -1 (none) or a positive number of "
                                  "milliseconds, not " + std::to_string(timeout)));
  }
  return api::finish(api, Runtime::get().synchronize_stream(api::token(stream), timeout));
  ACLVMM_API_EXIT();
}

aclError aclrtStreamAbort(aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtStreamAbort");
  ACLVMM_FORWARD(aclrtStreamAbort, stream);
  return api::finish(api, Runtime::get().abort_stream(api::token(stream)));
  ACLVMM_API_EXIT();
}

aclError aclrtValueWrite(void* devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtValueWrite");
  ACLVMM_FORWARD(aclrtValueWrite, devAddr, value, flag, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, devAddr);
  return api::finish(api, value_write(Runtime::get(), api::addr(devAddr), value, flag,
                                      api::token(stream)));
  ACLVMM_API_EXIT();
}

aclError aclrtValueWait(void* devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtValueWait");
  ACLVMM_FORWARD(aclrtValueWait, devAddr, value, flag, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, devAddr);
  return api::finish(api, value_wait(Runtime::get(), api::addr(devAddr), value, flag,
                                     api::token(stream)));
  ACLVMM_API_EXIT();
}

}  // extern "C"
