// FakeCopyEngine: the fake's CopyEngine over its byte stores: the synchronous form (copy, fill)
// below, and the queues (CopyEngineBase: one thread per queue running commands in submission
// order, drivers/command_queues.h, as emu's), with every call on a queue that is not live (never
// made, or destroyed) a counted violation. As emu's (drivers/emu/device/
// copy_engine.h): kMapped endpoints are translated through the fake MMU when the copy runs,
// piece by piece across entries, with the executor's rights (copy_rights.h); kManaged endpoints
// through the unified memory's policy for the executing device (FakeUnified::reach_locked).
// kHostMemory endpoints are the test's own buffers: the fake cannot probe process
// memory without a system call, so it refuses what its CPU model says faults (the null page and
// fake memory, fake_mmu.h host_reaches_locked) before any byte moves, and trusts the rest.
// Results and sides as emu's; a size of 0 or an unknown kind (the contract's preconditions) is
// a counted violation (fake_machine.h).
//
// Threading: the machine's lock for the whole call.
#pragma once

#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_mmu.h"
#include "drivers/copy_engine_base.h"
#include "drivers/fake/fake_unified.h"

namespace aclvmm::dev::fake {

class FakeCopyEngine final : public CopyEngineBase {
 public:
  FakeCopyEngine(FakeMachine& machine, FakeMmu& mmu, FakeUnified& unified)
      : CopyEngineBase(&machine.listener(), nullptr), machine_(machine), mmu_(mmu),
        unified_(unified) {
    prefetch_through(&unified);
  }
  ~FakeCopyEngine() override { destroy_queues(); }

  CopyOutcome copy(const CopyRequest& request) override;
  CopyOutcome fill(const FillRequest& request) override;

  void destroy_queue(QueueId queue) override;
  void cancel(QueueId queue) override;
  Result submit(QueueId queue, const Command& command, Fence* fence) override;
  Result wait(QueueId queue, Fence fence, int timeout_ms) override;
  Fence completed(QueueId queue) const override;

 private:
  // A broken precondition, counted (takes the lock).
  bool broken(uint64_t size, EndpointKind a, EndpointKind b);
  // A queue that is not live, counted (takes the lock).
  bool dead(QueueId queue) const;
  // Under the lock: kBadAddress with the first address the CPU cannot reach on a host endpoint.
  bool host_refused(const CopyEndpoint& endpoint, uint64_t size, CopyOutcome::Side side,
                    CopyOutcome* out) const;
  // Under the lock: the bytes behind a kMapped or kManaged endpoint (FakeMmu / FakeUnified).
  Result reach_locked(const CopyEndpoint& endpoint, uint64_t va, uint64_t left, bool write,
                      const Executor& who, ByteStore** bytes, uint64_t* offset, uint64_t* length);

  FakeMachine& machine_;
  FakeMmu& mmu_;
  FakeUnified& unified_;
};

}  // namespace aclvmm::dev::fake
