#include "runtime/kernel_context.h"

#include <spdlog/fmt/fmt.h>

namespace aclvmm {

Status kernel_copy(aclvmmKernelContext* ctx, void* dst, const void* src, size_t n,
                   bool to_device) {
  if (!ctx->error.ok()) return ctx->error;
  const uint64_t device_side = reinterpret_cast<uint64_t>(to_device ? dst : src);
  Status st;
  if (ctx->memory->process_memory(device_side) &&
      (ctx->registrations == nullptr ||
       !ctx->registrations->reachable(device_side, n, ctx->who.device))) {
    st = Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               fmt::format("device {} cannot reach host memory at 0x{:x} ({} bytes): it is not "
                           "registered for that device (aclrtHostRegister)",
                           ctx->user_device, device_side, n));
  } else {
    st = ctx->memory->copy(dst, src, n, ctx->who);
  }
  if (!st.ok()) ctx->error = st;
  return st;
}

}  // namespace aclvmm
