// The aclvmm extension API (include/aclvmm/aclvmm.h).
#include "aclvmm/aclvmm.h"

#include <cstring>
#include <string>

#include "api/api_common.h"
#include "runtime/injection.h"
#include "runtime/kernel_context.h"
#include "runtime/kernel_registry.h"
#include "runtime/runtime.h"
#include "runtime/stats_snapshot.h"
#include "vmm/memory_ops.h"

using namespace aclvmm;

static_assert(ACLVMM_FAULT_THROW_BAD_ALLOC == kInjectThrowBadAlloc &&
                  ACLVMM_FAULT_THROW_LENGTH_ERROR == kInjectThrowLengthError &&
                  ACLVMM_FAULT_THROW_SYSTEM_ERROR == kInjectThrowSystemError &&
                  ACLVMM_FAULT_THROW_RUNTIME_ERROR == kInjectThrowRuntimeError &&
                  ACLVMM_FAULT_THROW_NON_STANDARD == kInjectThrowNonStandard,
              "aclvmm.h names the throwing injection kinds of runtime/injection.h");

extern "C" {

const char* aclvmmStatsJson(void) {
  ACLVMM_API_GUARD("aclvmmStatsJson");
  thread_local std::string buffer;
  buffer = stats_json(Runtime::get());
  return buffer.c_str();
  ACLVMM_API_EXIT_WITH(nullptr);
}

aclError aclvmmInjectFault(const char* name, uint32_t nth, aclError code) {
  ACLVMM_API_GUARD("aclvmmInjectFault");
  ACLVMM_REQUIRE_NOT_NULL(api, name);
  if (nth != 0 && code == ACL_SUCCESS) return api::invalid(api, "code must be an error code, not 0");
  const bool backend_step = is_backend_step(name);
  if (nth != 0 && code < 0 && (backend_step || !is_throw_injection(code))) {
    return api::invalid(api, "a negative code must be an ACLVMM_FAULT_THROW_* kind, for an ACL function");
  }
  injection_arm(name, nth, code);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

uint32_t aclvmmFaultRemaining(const char* name) {
  ACLVMM_API_GUARD("aclvmmFaultRemaining");
  return name ? injection_remaining(name) : 0;
  ACLVMM_API_EXIT_WITH(0u);
}

aclError aclvmmLaunchKernel(aclrtStream stream, aclvmmKernelFunc func, void* args) {
  ACLVMM_API_ENTER("aclvmmLaunchKernel");
  ACLVMM_REQUIRE_NOT_NULL(api, func);
  Runtime& rt = Runtime::get();
  auto s = rt.resolve_stream(api::token(stream));
  if (!s.ok()) return api::finish(api, s.status());
  Accessor who = rt.accessor_for((*s)->device());
  const int user = rt.user_device(who.device);
  memops::MemoryOps* memory = &rt.memory_ops();
  const HostRegistrations* registrations = &rt.host_registrations();
  (*s)->enqueue([who, memory, user, registrations, func, args] {
    return run_emulated_kernel(who, memory, user, registrations,
                               [&](aclvmmKernelContext* ctx) { func(ctx, args); });
  });
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

static aclError kernel_access(const char* api, aclvmmKernelContext* ctx, void* dst,
                              const void* src, size_t size, bool to_device) {
  ACLVMM_REQUIRE_NOT_NULL(api, ctx);
  if (!ctx->error.ok()) return ctx->error.code();
  if (size == 0) return ACL_SUCCESS;
  ACLVMM_REQUIRE_NOT_NULL(api, dst);
  ACLVMM_REQUIRE_NOT_NULL(api, src);
  return api::finish(api, kernel_copy(ctx, dst, src, size, to_device));
}

aclError aclvmmKernelRead(aclvmmKernelContext* ctx, void* dst, const void* devSrc, size_t size) {
  ACLVMM_API_GUARD("aclvmmKernelRead");
  return kernel_access(api, ctx, dst, devSrc, size, /*to_device=*/false);
  ACLVMM_API_EXIT();
}

aclError aclvmmKernelWrite(aclvmmKernelContext* ctx, void* devDst, const void* src, size_t size) {
  ACLVMM_API_GUARD("aclvmmKernelWrite");
  return kernel_access(api, ctx, devDst, src, size, /*to_device=*/true);
  ACLVMM_API_EXIT();
}

aclError aclvmmRegisterKernel(const char* name, aclvmmNamedKernelFunc func, void* userData) {
  // The registry is the process's: registering starts no runtime (API_GUARD, not API_ENTER).
  ACLVMM_API_GUARD("aclvmmRegisterKernel");
  if (name == nullptr || *name == '\0') return api::invalid(api, "name must be a non-empty string");
  ACLVMM_REQUIRE_NOT_NULL(api, func);
  return api::finish(api, KernelRegistry::get().add(name, func, userData));
  ACLVMM_API_EXIT();
}

aclError aclvmmUnregisterKernel(const char* name) {
  ACLVMM_API_GUARD("aclvmmUnregisterKernel");
  if (name == nullptr || *name == '\0') return api::invalid(api, "name must be a non-empty string");
  return api::finish(api, KernelRegistry::get().remove(name));
  ACLVMM_API_EXIT();
}

int32_t aclvmmKernelDeviceId(const aclvmmKernelContext* ctx) {
  ACLVMM_API_GUARD("aclvmmKernelDeviceId");
  return ctx ? ctx->user_device : -1;
  ACLVMM_API_EXIT_WITH(-1);
}

}  // extern "C"
