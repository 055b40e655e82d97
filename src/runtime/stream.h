// Stream: an ordered queue of device work, executed by a queue of the device backend
// (CopyEngine's queued form, drivers/copy_engine.h; emu and fake run each queue on a thread of
// their own, drivers/command_queues.h). The stream is what the core keeps of it (D5): its
// context, its token, the first failure and the refusal of calls that would wait for
// themselves; the queue keeps no error.
//
// Work runs in submission order; the first failure is kept and reported by the next
// synchronisation, as a device error surfaces on real hardware. The queue (and its thread)
// starts with the stream, so a stream that cannot have one is never handed out (207008)
// instead of failing later.
//
// Commands: copies and fills are kCopy / kFill commands, translated by the backend when they
// execute (D4: a copy queued before an unmap of its range fails at the stream's
// synchronisation; managed pages migrate for the executing device then); managed prefetches
// kPrefetch commands; emulated kernels a kHostTask running a core function on the queue's
// thread.
//
// Tasks run device work, and device work cannot wait for the device: a call that would wait for
// stream work from a thread that is executing a task (running()) is refused with 107000 by the
// core (refuse_from_task), instead of deadlocking on itself.
//
// fork(): a forked child inherits the object but not the queue's thread. The runtime abandons
// every inherited stream in the child without touching it (docs/architecture.md, "fork"); a
// queue whose own task forked ends in the child when the task returns (command_queues.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "base/lock_rank.h"
#include "base/status.h"
#include "drivers/device_backend.h"
#include "vmm/memory_ops.h"

namespace aclvmm {

class Stream {
 public:
  using Task = std::function<Status()>;

  // A stream whose queue is running on `device`'s backend; `worker_setup` runs first on the
  // queue's thread (the runtime makes the stream's context current there). 207008 when no queue
  // (thread) can be created, 207001 without memory; nothing is left behind then.
  static StatusOr<std::shared_ptr<Stream>> create(std::shared_ptr<dev::DeviceBackend> backend,
                                                  int device, uint64_t context,
                                                  std::function<void()> worker_setup);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  uint64_t context() const { return context_; }
  // The application's name for the stream (its table token), for messages.
  uint64_t token() const { return token_.load(std::memory_order_relaxed); }
  void set_token(uint64_t token) { token_.store(token, std::memory_order_relaxed); }

  // A host task. One that cannot be queued (no memory) becomes the stream's error instead.
  void enqueue(Task task);
  // aclrtMemcpyAsync / aclrtMemsetAsync through `ops` as device `who` executes them; a failure
  // becomes the stream's error, its message after "<api> (async): ".
  void enqueue_copy(memops::MemoryOps& ops, void* dst, const void* src, size_t n,
                    const Accessor& who, const char* api);
  void enqueue_fill(memops::MemoryOps& ops, void* dst, uint8_t value, size_t n,
                    const Accessor& who, const char* api);
  // A managed prefetch (kPrefetch: the backend's unified memory, in stream order). Its failure
  // is only logged, as the vendor's driver-side prefetch failures are: the call succeeded.
  void enqueue_prefetch(uint64_t address, uint64_t size, dev::Location target);
  // aclrtValueWrite: the 64-bit `value` is stored at `address` when the stream reaches it, as
  // device `who` writes (a kCopy through the device MMU: a fault is the stream's failure).
  void enqueue_value_write(memops::MemoryOps& ops, uint64_t address, uint64_t value,
                           const Accessor& who);
  // aclrtValueWait: the stream (not the caller) waits until ready(word) holds for the 64-bit
  // word at `address`, read as device `who`; another stream, a kernel, another process or the
  // CPU may change it meanwhile. No timeout: cancel() or abort() end the wait, which then
  // counts as discarded.
  void enqueue_value_wait(memops::MemoryOps& ops, uint64_t address,
                          std::function<bool(uint64_t)> ready, const Accessor& who);
  // Waits for every task submitted so far; returns the first failure since the last call.
  // From a task: 107000 at once (refuse_from_task). `deadline` (none: for ever) bounds the wait:
  // past it 507046, the work goes on and the failure stays for a later call. An abort() or
  // cancel() while it waits: 107023.
  using Deadline = std::chrono::steady_clock::time_point;
  Status synchronize(const Deadline* deadline = nullptr);
  // Waits as synchronize() does but leaves a failure for the next synchronize() (work the
  // caller orders behind the stream's; the first pass of a device's timed synchronisation).
  Status drain(const Deadline* deadline = nullptr);
  // aclrtStreamAbort: every command not started is dropped, the running one finishes, and the
  // stream is empty with no pending failure when it returns; it stays usable. Waiters of
  // synchronize() at that moment return 107023. A running memory wait (aclrtValueWait) sees
  // cancelling() and ends.
  void cancel();
  // True while cancel() or abort() runs: a long-running task of the stream's own (a memory
  // wait) ends early.
  bool halting() const {
    return cancelling_.load(std::memory_order_acquire) || stopping_.load(std::memory_order_acquire);
  }
  // Drops tasks that have not started (aclrtDestroyStreamForce) and stops the queue. From the
  // queue's own thread (a task that ends the process) the thread is left running instead of
  // joined.
  void abort();

  // The stream whose task the calling thread is executing; nullptr elsewhere.
  static const Stream* running();
  // The 107000 a refused call from a task returns: it names the running stream and says why.
  enum Refusal { kWouldWait, kWouldDestroy };
  static Status refuse_from_task(Refusal why);

 private:
  struct Pending;  // stream.cpp: what a queued command's completion needs
  Stream(std::shared_ptr<dev::DeviceBackend> backend, int device, uint64_t context,
         std::function<void()> worker_setup);
  // Queues `command` whose completion context is `pending` (taken: freed by the completion, or
  // here when the command cannot be queued).
  void submit(dev::Command command, Pending* pending);
  // A failure of the stream's own (a command that could not be queued).
  void record(Status st);
  // From a completion: one more command done, with its failure if any.
  void finish(Status st);
  static void completed(void* context, const dev::CopyOutcome& outcome);
  static dev::Result run_task(void* context);
  static void thread_started(void* context);

  const std::shared_ptr<dev::DeviceBackend> backend_;  // keeps the queue's engine alive
  dev::CopyEngine& engine_;
  const int device_;
  const uint64_t context_;
  const std::function<void()> worker_setup_;
  std::atomic<uint64_t> token_{0};
  dev::QueueId queue_;
  // A synchronisation counts completions instead of waiting on the queue's fence: completions
  // run for every queued command (cancelled ones from abort() included), so the count is the
  // stream's own and a synchronize racing abort() never names a queue that is gone.
  RankedMutex<LockRank::kStreamQueue> mu_;
  ConditionVariable done_cv_;
  uint64_t submitted_ = 0;  // commands queued
  uint64_t done_ = 0;       // of which completed (run, failed or cancelled)
  bool stopped_ = false;    // abort() ran: the queue is gone
  uint64_t cancels_ = 0;    // cancel() calls that began: a waiter that sees it move returns 107023
  Status first_error_;
  // Serializes cancel() with abort(): the queue must not be destroyed under a cancel that waits
  // for its running command.
  RankedMutex<LockRank::kStreamControl> control_mu_;
  std::atomic<bool> cancelling_{false};
  std::atomic<bool> stopping_{false};  // abort() began: the queue is being destroyed
};

}  // namespace aclvmm
