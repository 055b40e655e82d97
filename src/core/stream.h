// Stream: an ordered queue of device work, executed by its own worker thread.
//
// Work runs in submission order; the first failure is kept and reported by the next
// synchronisation, as a device error surfaces on real hardware. The worker starts with the first
// task, so a process may hold many idle streams at no cost.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <sys/types.h>

#include "core/status.h"

namespace aclvmm {

class Stream {
 public:
  using Task = std::function<Status()>;

  Stream(int device, uint64_t context);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  uint64_t context() const { return context_; }
  void enqueue(Task task);
  // Waits for every task submitted so far; returns the first failure since the last call.
  Status synchronize();
  // Drops tasks that have not started (aclrtDestroyStreamForce) and stops the worker.
  void abort();

 private:
  void run();

  const int device_;
  const uint64_t context_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> queue_;
  bool running_ = false;  // a task is executing
  bool stop_ = false;
  Status first_error_;
  std::thread worker_;
  pid_t owner_pid_;  // a forked child inherits the object but not the worker thread
};

}  // namespace aclvmm
