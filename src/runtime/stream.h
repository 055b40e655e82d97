// Stream: an ordered queue of device work, executed by its own worker thread.
//
// Work runs in submission order; the first failure is kept and reported by the next
// synchronisation, as a device error surfaces on real hardware. The worker starts with the stream,
// so a stream that cannot have one is never handed out (207008) instead of failing later.
//
// Tasks run device work, and device work cannot wait for the device: a call that would wait for
// stream work from a thread that is executing a task (running()) is refused with 107000 by the
// core (refuse_from_task), instead of deadlocking on itself.
//
// fork(): a forked child inherits the object but not its worker. The runtime abandons every
// inherited stream in the child without touching it (docs/architecture.md, "fork"); a worker
// whose own task forked ends in the child when the task returns.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <sys/types.h>

#include "base/lock_rank.h"
#include "base/status.h"

namespace aclvmm {

class Stream {
 public:
  using Task = std::function<Status()>;

  // A stream whose worker is running; `worker_setup` runs first on the worker thread (the
  // runtime makes the stream's context current there). 207008 when no thread can be created,
  // 207001 without memory; nothing is left behind then.
  static StatusOr<std::shared_ptr<Stream>> create(int device, uint64_t context,
                                                  std::function<void()> worker_setup);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  uint64_t context() const { return context_; }
  // The application's name for the stream (its table token), for messages.
  uint64_t token() const { return token_.load(std::memory_order_relaxed); }
  void set_token(uint64_t token) { token_.store(token, std::memory_order_relaxed); }

  // A task that cannot be queued (no memory) becomes the stream's error instead.
  void enqueue(Task task);
  // Waits for every task submitted so far; returns the first failure since the last call.
  // From a task: 107000 at once (refuse_from_task).
  Status synchronize();
  // Drops tasks that have not started (aclrtDestroyStreamForce) and stops the worker. From the
  // worker itself (a task that ends the process) the worker is left running instead of joined.
  void abort();

  // The stream whose task the calling thread is executing; nullptr elsewhere.
  static const Stream* running();
  // The 107000 a refused call from a task returns: it names the running stream and says why.
  enum Refusal { kWouldWait, kWouldDestroy };
  static Status refuse_from_task(Refusal why);

 private:
  Stream(int device, uint64_t context, std::function<void()> worker_setup);
  void run();

  const int device_;
  const uint64_t context_;
  const std::function<void()> worker_setup_;
  const pid_t owner_pid_;  // a worker that finds itself in a forked child stops (run())
  std::atomic<uint64_t> token_{0};
  RankedMutex<LockRank::kStreamQueue> mu_;
  ConditionVariable cv_;
  ConditionVariable idle_cv_;
  std::deque<Task> queue_;
  bool running_ = false;  // a task is executing
  bool stop_ = false;
  Status first_error_;
  std::thread worker_;
};

}  // namespace aclvmm
