// CopyEngine: data movement executed by a device (the DMA engines behind drvMemcpy / drvMemsetD8)
// and the queues that order device work (what a stream is on hardware).
//
// Two forms. The synchronous form (copy, fill) runs on the calling thread and returns when the
// bytes have moved: aclrtMemcpy, aclrtMemset, and the reads and writes of emulated kernels. The
// queued form (submit) appends a Command to a queue; the backend executes a queue's commands one
// after another in submission order, on its own thread, and reports each one's outcome to the
// command's Completion. A stream in the core becomes a queue plus the core's bookkeeping (its
// context, its first error, the refusal of calls that would wait for themselves).
//
// How an address is expressed (CopyEndpoint): always the virtual address the application named;
// the backend translates it **when the command executes** (docs/device-interface.md D4), as a
// device's MMU does:
// - kHostMemory: plain process memory the CPU reaches at `address` (an application buffer).
//   The backend must survive a bad pointer: kBadAddress with CopyOutcome::failed_side naming the
//   side, never a crash (emu: the guarded memcpy, or the kernel-checked copies).
// - kMapped: memory behind the device MMU (mappings, device and host blocks). The backend
//   translates through its page table (fed by DeviceMmu) and checks the executor's rights there:
//   READ on the source and READWRITE on the destination for device memory (a device block is
//   also reachable from a device with peer access to its owner), the HOST location's rights for
//   host memory, whichever device executes. A range that is not fully mapped, or that the
//   executor may not reach, fails with kBadAddress / kNotPermitted naming the side and the first
//   address; the core builds the message from its own bookkeeping on that path only.
// - kManaged: an address in the managed window. Residency is the backend's (unified_memory.h),
//   so only the backend can say where those bytes are when the command runs: it applies its
//   migration policy for `executor` and moves the bytes.
// The core classifies an endpoint only to pick the kind (its pointer index answers that); a
// mapping made or removed after a command was queued and before it runs is what the command
// sees, as on hardware (an unmap before execution fails the copy at the stream's next
// synchronisation).
//
// Contract
// - Sizes are > 0. The backend keeps every physical object it translated to alive while it
//   copies from or into it (emu: a reference taken at translation), so a concurrent unmap or free
//   never pulls memory from under a running copy. Everything a Command points to stays valid
//   until its Completion ran.
// - Outcome: CopyOutcome::result 0, or the failure with the side and the first address that
//   could not be read or written (the core's 507899 message names them). Bytes before that
//   address may have been written.
// - Queues: create_queue() makes a queue bound to a device; kNoResources when the backend cannot
//   have one (emu: no thread; the core's 207008). submit() returns the command's fence, or a
//   failure (kOutOfMemory, kNoResources) with the command not queued and its Completion never
//   called. Every queued command's Completion runs exactly once: on the queue's thread after the
//   command ran, or with kCancelled from destroy_queue() for a command that had not started.
//   wait() returns when the fence has passed, or kTimedOut after timeout_ms (< 0: no limit); it
//   refuses a wait on the queue whose thread calls it (-EDEADLK: a device task cannot wait for
//   its own queue; the core refuses earlier with 107000 and its message). completed() is the
//   latest passed fence. The queue keeps no error: the core keeps a stream's first failure from
//   the completions.
// - destroy_queue(): drops the commands that have not started (their completions get kCancelled),
//   waits for the running one, and frees the queue. From the queue's own thread (a host task
//   that ends the process) it does not wait for itself.
// - cancel(): the same drop, but the queue stays (aclrtStreamAbort): the commands queued when it
//   is called and not started get kCancelled (their completions run on the cancelling thread),
//   it returns once the running one has finished, and every fence given so far has passed then
//   (cancelled fences pass with the running command, and never before their completions ran).
//   Commands submitted meanwhile run as usual. From the queue's own thread it drops the others
//   and does not wait for itself. A running host task that must stop early (a wait on memory)
//   is the core's to interrupt: the backend stops no running command.
// - kHostTask: `run` is called on the queue's thread when the queue reaches it; the task may
//   call any core function (copies, allocations, submits to any queue including its own, which
//   run after it), except waiting for its own queue. Its Result is the command's outcome.
//   QueueConfig::on_thread_start runs on a queue's thread before its first command (the core
//   makes the stream's context current there). A host task that forks: in the child, the queue's
//   thread ends when the task returns, and no completion runs there.
// - kPrefetch: unified memory's prefetch executed in queue order (UnifiedMemory::prefetch).
//
// Threading: copy/fill from any thread, concurrently (also on overlapping memory: as on hardware
// the bytes are then undefined). submit/wait/completed from any thread; submits to one queue
// from several threads are ordered as the calls return. Completions and host tasks run on the
// backend's threads. copy/fill and wait block; submit never waits for the device.
// Lifetime: a QueueId lives from create_queue to destroy_queue; the backend's destruction
// destroys every queue left.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

enum class EndpointKind : uint8_t { kHostMemory, kMapped, kManaged };

struct CopyEndpoint {
  uint64_t address = 0;  // always the virtual address the caller named; translated at execution
  EndpointKind kind = EndpointKind::kHostMemory;
};

struct CopyRequest {
  CopyEndpoint dst;
  CopyEndpoint src;
  uint64_t size = 0;
  Executor executor;
};

struct FillRequest {
  CopyEndpoint dst;
  uint8_t value = 0;
  uint64_t size = 0;
  Executor executor;
};

struct PrefetchRequest {
  uint64_t address = 0;  // in the managed window
  uint64_t size = 0;
  Location target;       // kDevice, kHost or kHostNuma
};

struct CopyOutcome {
  enum class Side : uint8_t { kNone, kSource, kDestination };
  Result result;
  Side failed_side = Side::kNone;
  uint64_t failed_address = 0;
};

enum class CommandKind : uint8_t { kCopy, kFill, kPrefetch, kHostTask };

// Called exactly once per queued command (contract above); `context` is the core's.
struct Completion {
  void (*done)(void* context, const CopyOutcome& outcome) = nullptr;
  void* context = nullptr;
};

struct HostTask {
  Result (*run)(void* context) = nullptr;  // context: Completion::context
};

struct Command {
  CommandKind kind = CommandKind::kCopy;
  CopyRequest copy;          // kCopy
  FillRequest fill;          // kFill
  PrefetchRequest prefetch;  // kPrefetch
  HostTask task;             // kHostTask
  Completion completion;
};

struct QueueConfig {
  DeviceIndex device = kNoDevice;
  void (*on_thread_start)(void* context) = nullptr;  // may be null
  void* context = nullptr;                           // valid until destroy_queue
};

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;

  virtual CopyOutcome copy(const CopyRequest& request) = 0;
  virtual CopyOutcome fill(const FillRequest& request) = 0;

  virtual Result create_queue(const QueueConfig& config, QueueId* out) = 0;
  virtual void destroy_queue(QueueId queue) = 0;
  virtual void cancel(QueueId queue) = 0;
  virtual Result submit(QueueId queue, const Command& command, Fence* fence) = 0;
  virtual Result wait(QueueId queue, Fence fence, int timeout_ms) = 0;
  virtual Fence completed(QueueId queue) const = 0;
};

}  // namespace aclvmm::dev
