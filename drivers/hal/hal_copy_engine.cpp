// HalCopyEngine: drvMemcpy / drvMemsetD8 (hal.md §3.11). The driver takes no direction and no
// executing device: it infers the direction from the addresses and reaches whatever the process
// mapped, so the executor's rights are the driver's business here, not checked again.
#include "drivers/hal/hal_units.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::hal {

HalCopyEngine::HalCopyEngine(const HalContext& ctx, UnifiedMemory* unified)
    : CopyEngineBase(ctx.listener, steps::kHalQueueThread), ctx_(ctx) {
  prefetch_through(unified);
}

CopyOutcome HalCopyEngine::copy(const CopyRequest& request) {
  CopyOutcome out;
  if (!admissible(request.src, request.size, CopyOutcome::Side::kSource, &out, true) ||
      !admissible(request.dst, request.size, CopyOutcome::Side::kDestination, &out, true)) {
    return out;
  }
  out.result = driver_result(
      ctx_.fn->drvMemcpy(request.dst.address, request.size, request.src.address, request.size));
  return out;
}

CopyOutcome HalCopyEngine::fill(const FillRequest& request) {
  CopyOutcome out;
  if (!admissible(request.dst, request.size, CopyOutcome::Side::kDestination, &out, true)) {
    return out;
  }
  out.result = driver_result(
      ctx_.fn->drvMemsetD8(request.dst.address, request.size, request.value, request.size));
  if (!out.result.ok()) {
    out.failed_side = CopyOutcome::Side::kDestination;
    out.failed_address = request.dst.address;
  }
  return out;
}

}  // namespace aclvmm::dev::hal
