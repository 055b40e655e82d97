#include "vmm/memory_ops.h"

#include <cstdio>
#include <string>

#include "base/hex.h"

namespace aclvmm::memops {
namespace {

// The started runtime's device backend always has one; a copy racing the runtime's teardown
// (a task that outlived its stream) finds none.
Status no_engine() {
  return Error(kAclInternalError, "the copy found no device backend (the runtime is stopped)");
}

}  // namespace

dev::CopyEndpoint MemoryOps::endpoint(uint64_t va) const {
  // Managed memory: its residency is the backend's, applied when the copy runs.
  if (managed_.in_window(va)) return dev::CopyEndpoint{va, dev::EndpointKind::kManaged};
  // Plain process memory is what the core's records do not know; everything else (device and
  // host blocks, VMM mappings, and addresses in the windows that nothing holds, which the
  // engine then refuses) is behind the device MMU. aclrtMallocHost blocks go to the engine too,
  // translated through their kHostBlock page-table entries like any other block (D10): their
  // end is then the block's, as the core's own check made it ("runs past its aclrtMallocHost
  // block"), where a CPU copy would run on into whatever the CPU view has after it, and a copy
  // between a block and device memory is one piece per entry, as it was one per segment.
  StatusOr<PointerInfo> info = space_.pointer_info(va, 1);
  const bool process = info.ok() && info->kind == PointerInfo::kUnregistered;
  return dev::CopyEndpoint{va, process ? dev::EndpointKind::kHostMemory : dev::EndpointKind::kMapped};
}

dev::Executor MemoryOps::executor(const Accessor& who) {
  return dev::Executor{who.device < 0 ? dev::kNoDevice : who.device, who.peer_mask};
}

Status MemoryOps::side_refused(uint64_t va, uint64_t n, bool write, const Accessor& who) const {
  if (managed_.in_window(va)) return managed_.covered(va, n);
  return space_.check_device_access(va, n, write, who);
}

Status MemoryOps::refused(const dev::CopyOutcome& out, uint64_t dst, uint64_t src, uint64_t n,
                          const Accessor& who) const {
  // The failure path only: the core's records say why, in the order the core always checked
  // (the destination's range first, then the source's), with today's codes and words.
  ACLVMM_RETURN_IF_ERROR(side_refused(dst, n, true, who));
  if (src != 0) ACLVMM_RETURN_IF_ERROR(side_refused(src, n, false, who));
  const bool source = out.failed_side == dev::CopyOutcome::Side::kSource;
  const uint64_t va = out.failed_address;
  if (out.result.condition() == dev::Condition::kOutOfMemory && managed_.in_window(va)) {
    // A migration found the executing device full with nothing of its own to evict.
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 "device " + std::to_string(who.device) + " has no room for a managed page");
  }
  std::string why;
  switch (out.result.condition()) {
    case dev::Condition::kBadAddress: why = "the address is not accessible"; break;
    case dev::Condition::kNotPermitted: why = "the executing device may not reach it"; break;
    default:
      why = out.result.is_errno() ? "errno " + std::to_string(out.result.errno_value())
                                  : "driver error " + std::to_string(out.result.driver_value());
  }
  if (out.failed_side == dev::CopyOutcome::Side::kNone) {
    // The device refused the operation as a whole (an injected dev.copy.* step, say): it names
    // no side or address, so the words name the operation.
    const std::string operation =
        src != 0 ? "the copy of " + std::to_string(n) + " bytes from " + hex(src) + " to " + hex(dst)
                 : "the fill of " + std::to_string(n) + " bytes at " + hex(dst);
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, operation + " failed: " + why);
  }
  // The records allow the range: a bad process pointer, or a mapping that changed while the copy
  // ran. The engine's side and first address say where.
  const bool process = endpoint(va).kind == dev::EndpointKind::kHostMemory;
  std::string what = source ? "reading " : "writing ";
  what += process ? "the host buffer" : "device memory";
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, what + " at " + hex(va) + " failed: " + why);
}

Status MemoryOps::checked_first(const dev::DeviceBackend& device, uint64_t dst, uint64_t src,
                                uint64_t n, const Accessor& who) const {
  if (device.capabilities().copies_check_access) return Status::Ok();
  // The engine checks nothing (hal): the core's records decide, in the order of refused().
  ACLVMM_RETURN_IF_ERROR(side_refused(dst, n, true, who));
  if (src != 0) ACLVMM_RETURN_IF_ERROR(side_refused(src, n, false, who));
  return Status::Ok();
}

Status MemoryOps::copy(void* dst, const void* src, size_t n, const Accessor& who) {
  const uint64_t d = reinterpret_cast<uint64_t>(dst), s = reinterpret_cast<uint64_t>(src);
  const std::shared_ptr<dev::DeviceBackend>& device = rt_.device();
  if (!device) return no_engine();
  ACLVMM_RETURN_IF_ERROR(checked_first(*device, d, s, n, who));
  const dev::CopyOutcome out = device->copy_engine().copy(copy_request(dst, src, n, who));
  return out.result.ok() ? Status::Ok() : refused(out, d, s, n, who);
}

Status MemoryOps::fill(void* dst, uint8_t value, size_t n, const Accessor& who) {
  const uint64_t d = reinterpret_cast<uint64_t>(dst);
  const std::shared_ptr<dev::DeviceBackend>& device = rt_.device();
  if (!device) return no_engine();
  ACLVMM_RETURN_IF_ERROR(checked_first(*device, d, 0, n, who));
  const dev::CopyOutcome out = device->copy_engine().fill(fill_request(dst, value, n, who));
  return out.result.ok() ? Status::Ok() : refused(out, d, 0, n, who);
}

}  // namespace aclvmm::memops
