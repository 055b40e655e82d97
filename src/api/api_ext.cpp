// The aclvmm extension API (include/aclvmm/aclvmm.h).
#include "aclvmm/aclvmm.h"

#include <string>

#include "api/api_common.h"
#include "core/faults.h"
#include "core/memory_ops.h"
#include "core/runtime.h"
#include "core/stats.h"

using namespace aclvmm;

struct aclvmmKernelContext {
  Accessor who;
  int user_device = 0;
  Status error;
};

extern "C" {

const char* aclvmmStatsJson(void) {
  thread_local std::string buffer;
  buffer = stats_json();
  return buffer.c_str();
}

aclError aclvmmInjectFault(const char* api, uint32_t nth, aclError code) {
  ACLVMM_REQUIRE_NOT_NULL("aclvmmInjectFault", api);
  if (nth != 0 && code == ACL_SUCCESS) {
    return api::invalid("aclvmmInjectFault", "code must be an error code, not 0");
  }
  faults_arm(api, nth, code);
  return ACL_SUCCESS;
}

uint32_t aclvmmFaultRemaining(const char* api) { return api ? faults_remaining(api) : 0; }

aclError aclvmmLaunchKernel(aclrtStream stream, aclvmmKernelFunc func, void* args) {
  const char* api = "aclvmmLaunchKernel";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, func);
  Runtime& rt = Runtime::get();
  auto s = rt.resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  Accessor who = rt.accessor_for((*s)->device());
  const int user = rt.user_device(who.device);
  (*s)->enqueue([who, user, func, args] {
    aclvmmKernelContext ctx{who, user, Status()};
    func(&ctx, args);
    if (ctx.error.ok()) return Status::Ok();
    return Error(ctx.error.code(), "emulated kernel failed: " + ctx.error.message());
  });
  return ACL_SUCCESS;
}

static aclError kernel_copy(const char* api, aclvmmKernelContext* ctx, void* dst, const void* src,
                            size_t size) {
  ACLVMM_REQUIRE_NOT_NULL(api, ctx);
  if (!ctx->error.ok()) return ctx->error.code();
  if (size == 0) return ACL_SUCCESS;
  ACLVMM_REQUIRE_NOT_NULL(api, dst);
  ACLVMM_REQUIRE_NOT_NULL(api, src);
  Status st = memops::copy(dst, src, size, ctx->who);
  if (!st.ok()) ctx->error = st;
  return api::finish(api, st);
}

aclError aclvmmKernelRead(aclvmmKernelContext* ctx, void* dst, const void* devSrc, size_t size) {
  return kernel_copy("aclvmmKernelRead", ctx, dst, devSrc, size);
}

aclError aclvmmKernelWrite(aclvmmKernelContext* ctx, void* devDst, const void* src, size_t size) {
  return kernel_copy("aclvmmKernelWrite", ctx, devDst, src, size);
}

int32_t aclvmmKernelDeviceId(const aclvmmKernelContext* ctx) { return ctx ? ctx->user_device : -1; }

}  // extern "C"
