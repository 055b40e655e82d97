#include "core/stream.h"

#include <unistd.h>

namespace aclvmm {

Stream::Stream(int device, uint64_t context)
    : device_(device), context_(context), owner_pid_(getpid()) {}

Stream::~Stream() { abort(); }

void Stream::enqueue(Task task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return;
  queue_.push_back(std::move(task));
  if (worker_.joinable() && owner_pid_ != getpid()) {
    // Forked child: the inherited worker does not run here; start this process's own.
    new std::thread(std::move(worker_));  // leaked on purpose, see abort()
    running_ = false;
    owner_pid_ = getpid();
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  cv_.notify_one();
}

Status Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !running_; });
  Status st = std::move(first_error_);
  first_error_ = Status();
  return st;
}

void Stream::abort() {
  std::thread worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
    worker = std::move(worker_);
    cv_.notify_all();
  }
  if (worker.joinable()) {
    if (owner_pid_ == getpid()) {
      worker.join();
    } else {
      // Forked child: the worker thread exists only in the parent. Destroying a joinable
      // std::thread would terminate the process, so the object is deliberately leaked.
      new std::thread(std::move(worker));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  idle_cv_.notify_all();
}

void Stream::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Status st = task();
    lock.lock();
    running_ = false;
    if (!st.ok() && first_error_.ok()) first_error_ = std::move(st);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace aclvmm
