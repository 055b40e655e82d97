// CommandQueues: the queued half of a copy engine (copy_engine.h, "Queues"), shared by the
// backends that execute on host threads (emu, fake): one thread per queue running its commands
// in submission order through the engine's own synchronous form (copy, fill), a host task's
// function, or a kPrefetch through the backend's unified memory (prefetch_through; without one,
// kNotSupported).
// It is what the core's Stream worker was before migration step 4 (docs/device-interface.md
// D5): the core keeps a stream's context, first error and refusals; the queue keeps none.
//
// Per queue: a deque of commands, the latest submitted and the latest passed fence, the thread.
// A command's completion runs on the queue's thread after the command ran and before its fence
// passes, so a wait() that returns has seen every completion up to its fence. Failure
// injection: `thread_step` (emu: emu.queue.thread) before a queue's thread is made, and
// dev.queue.execute when each command is about to run (the command then fails with the rule's
// errno without running), both through the listener's gate.
//
// fork(): a host task that forks finds itself, in the child, on the only thread there is; its
// queue's thread then ends when the task returns, without a completion and without touching the
// queue (whose lock another thread of the parent may have held). Nothing else runs in a child:
// a forked child's backend is abandoned with everything it holds.
//
// Threading: every method from any thread; a QueueId lives from create to destroy (the caller
// passes only live ones; the fake checks with live() first). Completions and host tasks run on
// the queue threads with no lock of this object held.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "drivers/backend_listener.h"
#include "drivers/copy_engine.h"
#include "drivers/unified_memory.h"

namespace aclvmm::dev {

class CommandQueues {
 public:
  // `engine` runs kCopy / kFill commands (the backend's own engine, not the decorator: the
  // decorator's step for a queued command is dev.queue.submit). `listener` may be null (nothing
  // is injected); it and `engine` outlive this object.
  CommandQueues(CopyEngine& engine, BackendListener* listener, const char* thread_step);
  ~CommandQueues() { destroy_all(); }
  CommandQueues(const CommandQueues&) = delete;
  CommandQueues& operator=(const CommandQueues&) = delete;

  Result create(const QueueConfig& config, QueueId* out);
  void destroy(QueueId queue);
  // CopyEngine::cancel: the queue's pending commands get kCancelled; returns once the command
  // running at the call (if any) has finished, with every fence given so far passed.
  void cancel(QueueId queue);
  Result submit(QueueId queue, const Command& command, Fence* fence);
  Result wait(QueueId queue, Fence fence, int timeout_ms);
  Fence completed(QueueId queue) const;
  bool live(QueueId queue) const;
  // Destroys every queue left (the owning engine, before its own members go: a queue's thread
  // may be in its copy()).
  void destroy_all();
  // The unified memory whose prefetch kPrefetch commands run (UnifiedMemory::prefetch, the
  // backend's own unit, as kCopy runs its own engine); set once, before the first queue, and it
  // outlives this object.
  void prefetch_through(UnifiedMemory* unified) { unified_ = unified; }

 private:
  UnifiedMemory* unified_ = nullptr;
  struct Queue {
    QueueConfig config;
    std::mutex mu;
    std::condition_variable work;    // a command arrived, or stop
    std::condition_variable passed;  // `completed` rose
    std::deque<Command> pending;
    Fence submitted = 0;
    std::atomic<Fence> completed{0};
    bool busy = false;           // a command is executing (popped, its fence not yet passed)
    uint64_t started = 0;        // commands popped so far (which one is busy)
    Fence cancelled_behind = 0;  // fences cancel() dropped behind the busy one: they pass with it
    int cancels_running = 0;     // cancel() calls whose dropped completions are still running
    Fence deferred = 0;          // fences that passed meanwhile: the last such cancel adds them
    bool stop = false;
    bool orphaned = false;  // destroyed from its own thread: the thread frees the queue
    std::thread thread;
    std::thread::id thread_id;
    pid_t pid = 0;  // the process that made the queue (fork, above)
  };
  static Queue* of(QueueId id) { return reinterpret_cast<Queue*>(static_cast<uintptr_t>(id.value)); }
  void run(Queue* q);
  CopyOutcome execute(const Command& c);
  Result injected(const char* step) const {
    return gate_ ? gate_->check(step) : Result::success();
  }

  CopyEngine& engine_;
  const std::optional<InjectionGate> gate_;
  const char* const thread_step_;
  mutable std::mutex live_mu_;
  std::set<Queue*> live_;
};

}  // namespace aclvmm::dev
