// CopyEngineBase: the base of a copy engine whose backend executes queues on host threads (emu,
// fake): the queued half of the interface (create_queue .. completed) is CommandQueues'
// (command_queues.h), which runs kCopy / kFill commands through the engine's own copy / fill;
// a derived engine writes the synchronous form only. admissible() holds the checks every copy
// makes of an endpoint before it translates.
#pragma once

#include <cerrno>

#include "drivers/command_queues.h"
#include "drivers/copy_engine.h"

namespace aclvmm::dev {

class CopyEngineBase : public CopyEngine {
 public:
  Result create_queue(const QueueConfig& config, QueueId* out) override {
    return queues_.create(config, out);
  }
  void destroy_queue(QueueId queue) override { queues_.destroy(queue); }
  void cancel(QueueId queue) override { queues_.cancel(queue); }
  Result submit(QueueId queue, const Command& command, Fence* fence) override {
    return queues_.submit(queue, command, fence);
  }
  Result wait(QueueId queue, Fence fence, int timeout_ms) override {
    return queues_.wait(queue, fence, timeout_ms);
  }
  Fence completed(QueueId queue) const override { return queues_.completed(queue); }

 protected:
  // `listener` (may be null) and `thread_step` as CommandQueues takes them.
  CopyEngineBase(BackendListener* listener, const char* thread_step)
      : queues_(*this, listener, thread_step) {}
  // The derived engine's destructor calls this first: a queue's thread may be running the
  // derived copy() until its queue is destroyed.
  void destroy_queues() { queues_.destroy_all(); }
  // The unit kPrefetch commands run on (CommandQueues::prefetch_through), from the constructor.
  void prefetch_through(UnifiedMemory* unified) { queues_.prefetch_through(unified); }
  bool live(QueueId queue) const { return queues_.live(queue); }

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

 private:
  CommandQueues queues_;
};

}  // namespace aclvmm::dev
