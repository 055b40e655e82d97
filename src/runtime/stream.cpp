#include "runtime/stream.h"

#include <unistd.h>

#include <new>
#include <system_error>

#include <spdlog/fmt/fmt.h>

namespace aclvmm {
namespace {

// The stream whose task this thread is executing (set by the worker around each task).
thread_local const Stream* t_running = nullptr;

}  // namespace

Stream::Stream(int device, uint64_t context, std::function<void()> worker_setup)
    : device_(device),
      context_(context),
      worker_setup_(std::move(worker_setup)),
      owner_pid_(getpid()) {}

StatusOr<std::shared_ptr<Stream>> Stream::create(int device, uint64_t context,
                                                 std::function<void()> worker_setup) {
  std::shared_ptr<Stream> stream;
  try {
    stream.reset(new Stream(device, context, std::move(worker_setup)));
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for a new stream");
  }
  try {
    stream->worker_ = std::thread([s = stream.get()] { s->run(); });
  } catch (const std::system_error& e) {
    // Rollback: the stream has no worker and goes with `stream`.
    return Error(ACL_ERROR_RT_NO_STREAM_RESOURCE,
                 fmt::format("the stream's worker thread could not be created: {}", e.what()));
  }
  return stream;
}

Stream::~Stream() { abort(); }

const Stream* Stream::running() { return t_running; }

Status Stream::refuse_from_task(Refusal why) {
  const char* what = why == kWouldWait
                         ? "it would wait for stream work, which includes this task"
                         : "it would destroy that stream and join its worker, the calling thread";
  return Error(ACL_ERROR_RT_PARAM_INVALID,
               fmt::format("called from a task running on stream 0x{:x}: {}, so it would wait for "
                           "itself (a device kernel cannot wait for the device); nothing was "
                           "changed",
                           t_running ? t_running->token() : 0, what));
}

void Stream::enqueue(Task task) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  try {
    queue_.push_back(std::move(task));
  } catch (const std::bad_alloc&) {
    // Reported like a failed task: the caller's asynchronous call has already returned.
    if (first_error_.ok()) {
      first_error_ = Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task");
    }
    return;
  }
  cv_.notify_one();
}

Status Stream::synchronize() {
  if (t_running) return refuse_from_task(kWouldWait);
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !running_; });
  Status st = std::move(first_error_);
  first_error_ = Status();
  return st;
}

void Stream::abort() {
  std::thread worker;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
    worker = std::move(worker_);
    cv_.notify_all();
  }
  if (worker.joinable()) {
    if (worker.get_id() == std::this_thread::get_id()) {
      // A task is ending the process (exit() from a kernel runs the teardown on this thread):
      // joining itself is impossible, and the thread never returns to this stream.
      worker.detach();
    } else {
      worker.join();
    }
  }
  std::lock_guard lock(mu_);
  idle_cv_.notify_all();
}

void Stream::run() {
  if (worker_setup_) worker_setup_();
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    t_running = this;
    Status st = task();
    t_running = nullptr;
    // The task forked and this is the child, where the thread is all there is: the parent's
    // stream must not go on here. Ending the only thread ends the child (as exit(0)).
    if (getpid() != owner_pid_) return;
    lock.lock();
    running_ = false;
    if (!st.ok() && first_error_.ok()) first_error_ = std::move(st);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace aclvmm
