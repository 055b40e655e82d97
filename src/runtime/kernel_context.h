// aclvmmKernelContext (include/aclvmm/aclvmm.h): what an emulated kernel's memory accesses go
// through. A kernel runs on its stream's worker as the stream's device; aclvmmKernelRead /
// aclvmmKernelWrite copy through the emulated device MMU with that device's rights, exactly as
// aclrtMemcpy does, and the first failed access fails the kernel (later ones keep failing).
// Both kinds of kernel use it: aclvmmLaunchKernel's functions and the named kernels of
// aclrtLaunchKernelWithConfig (kernels.h).
#pragma once

#include <string>
#include <utility>

#include "base/status.h"
#include "vmm/address_space.h"
#include "vmm/host_registrations.h"
#include "vmm/memory_ops.h"

struct aclvmmKernelContext {
  aclvmm::Accessor who;
  aclvmm::memops::MemoryOps* memory = nullptr;  // the copy engine of the stream's runtime
  int user_device = 0;
  aclvmm::Status error;
  // The runtime's host registrations: the process memory the device may reach.
  const aclvmm::HostRegistrations* registrations = nullptr;
};

namespace aclvmm {

// A kernel's copy of n bytes between a device address and its own buffer (to_device: the device
// address is dst): through the device MMU as ctx's device. Plain process memory on the device
// side is reachable only inside a MAPPED host registration of that device (runtime-extra.md §5:
// a kernel sees device memory, not the host's); elsewhere 507899. The first failure sticks.
Status kernel_copy(aclvmmKernelContext* ctx, void* dst, const void* src, size_t n, bool to_device);

// Runs body(&ctx) as a kernel of `who`'s device (user id `user_device`); its Status is the
// kernel's: the first failed access, worded as the kernel's failure.
template <typename Body>
Status run_emulated_kernel(const Accessor& who, memops::MemoryOps* memory, int user_device,
                           const HostRegistrations* registrations, Body&& body) {
  aclvmmKernelContext ctx{who, memory, user_device, Status(), registrations};
  std::forward<Body>(body)(&ctx);
  if (ctx.error.ok()) return Status::Ok();
  return Error(ctx.error.code(), "emulated kernel failed: " + ctx.error.message());
}

}  // namespace aclvmm
