// SyncCopyEngine: the base of a copy engine that has the synchronous form (copy, fill) and not
// yet the queues (migration step 3: queues come with step 4, docs/device-interface.md §11).
// Every queue call answers kNotSupported, as UnsupportedCopyEngine's do.
#pragma once

#include <cerrno>

#include "drivers/copy_engine.h"

namespace aclvmm::dev {

class SyncCopyEngine : public CopyEngine {
 public:
  Result create_queue(const QueueConfig&, QueueId*) override { return unsupported(); }
  void destroy_queue(QueueId) override {}
  Result submit(QueueId, const Command&, Fence*) override { return unsupported(); }
  Result wait(QueueId, Fence, int) override { return unsupported(); }
  Fence completed(QueueId) const override { return 0; }

 protected:
  static Result unsupported() { return Result::from_errno(EOPNOTSUPP); }
  static CopyOutcome failure(Result result, CopyOutcome::Side side, uint64_t address) {
    return CopyOutcome{result, side, address};
  }
  // What every copy checks of an endpoint before it translates: a size (kInvalidArgument), a
  // known kind (kInvalidArgument), not managed unless the engine reaches unified memory
  // (`managed`; kNotSupported otherwise), a range that does not wrap (kBadAddress). false with
  // *out set when the endpoint is refused.
  static bool admissible(const CopyEndpoint& e, uint64_t size, CopyOutcome::Side side,
                         CopyOutcome* out, bool managed = false) {
    if (size == 0 || (e.kind != EndpointKind::kHostMemory && e.kind != EndpointKind::kMapped &&
                      e.kind != EndpointKind::kManaged)) {
      *out = failure(Result::from_errno(EINVAL), CopyOutcome::Side::kNone, 0);
      return false;
    }
    if (e.kind == EndpointKind::kManaged && !managed) {
      *out = failure(unsupported(), side, e.address);
      return false;
    }
    if (e.address + size < e.address) {
      *out = failure(Result::from_errno(EFAULT), side, e.address);
      return false;
    }
    return true;
  }
};

}  // namespace aclvmm::dev
