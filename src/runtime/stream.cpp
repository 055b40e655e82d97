#include "runtime/stream.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

#include <spdlog/fmt/fmt.h>

#include "observability/log.h"

namespace aclvmm {
namespace {

// The stream whose task this thread is executing (set around each host task).
thread_local const Stream* t_running = nullptr;

Status labelled(const char* api, Status st) {
  return st.ok() ? st : Error(st.code(), std::string(api) + " (async): " + st.message());
}

}  // namespace

// What a queued command's completion needs: the stream, and for a host task its function and
// the Status it returned; for a copy or fill what the core's message of a failure is made from.
struct Stream::Pending {
  Stream* stream = nullptr;
  Task task;
  Status status;
  memops::MemoryOps* ops = nullptr;
  uint64_t dst = 0, src = 0, size = 0;  // src 0: a fill
  Accessor who;
  const char* api = nullptr;
  bool prefetch = false;  // kPrefetch: a failure is logged, not the stream's error
  uint64_t word = 0;      // aclrtValueWrite: the value the copy stores
};

Stream::Stream(std::shared_ptr<dev::DeviceBackend> backend, int device, uint64_t context,
               std::function<void()> worker_setup)
    : backend_(std::move(backend)),
      engine_(backend_->copy_engine()),
      device_(device),
      context_(context),
      worker_setup_(std::move(worker_setup)) {}

StatusOr<std::shared_ptr<Stream>> Stream::create(std::shared_ptr<dev::DeviceBackend> backend,
                                                 int device, uint64_t context,
                                                 std::function<void()> worker_setup) {
  std::shared_ptr<Stream> stream;
  try {
    stream.reset(new Stream(std::move(backend), device, context, std::move(worker_setup)));
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for a new stream");
  }
  dev::QueueConfig config;
  config.device = device;
  config.on_thread_start = &Stream::thread_started;
  config.context = stream.get();
  const dev::Result made = stream->engine_.create_queue(config, &stream->queue_);
  if (!made.ok()) {
    // Rollback: the stream has no queue and goes with `stream` (stopped: nothing to destroy).
    stream->stopped_ = true;
    if (made.condition() == dev::Condition::kOutOfMemory) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the stream's queue");
    }
    return Error(ACL_ERROR_RT_NO_STREAM_RESOURCE,
                 fmt::format("the stream's worker thread could not be created: {}",
                             stream->backend_->describe(made)));
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

void Stream::thread_started(void* context) {
  auto* self = static_cast<Stream*>(context);
  if (self->worker_setup_) self->worker_setup_();
}

dev::Result Stream::run_task(void* context) {
  auto* p = static_cast<Pending*>(context);
  t_running = p->stream;
  p->status = p->task();
  t_running = nullptr;
  return p->status.ok() ? dev::Result::success() : dev::Result::from_errno(EIO);
}

void Stream::completed(void* context, const dev::CopyOutcome& outcome) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(context));
  Stream* self = p->stream;
  Status st;
  if (outcome.result.condition() == dev::Condition::kCancelled) {
    // Dropped by abort() before it started: nothing ran, nothing to report.
  } else if (p->task) {
    if (!p->status.ok()) {
      st = std::move(p->status);
    } else if (!outcome.result.ok()) {
      // The queue failed the task without running it (dev.queue.execute).
      st = Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the stream's task could not be executed: " +
                                                      self->backend_->describe(outcome.result));
    }
  } else if (p->prefetch) {
    if (!outcome.result.ok()) {
      ACLVMM_LOG_WARN("RUNTIME", "managed prefetch of {} bytes at 0x{:x} failed: {}", p->size,
                      p->dst, self->backend_->describe(outcome.result));
    }
  } else if (!outcome.result.ok()) {
    st = labelled(p->api, p->ops->refused(outcome, p->dst, p->src, p->size, p->who));
  }
  self->finish(std::move(st));
}

void Stream::finish(Status st) {
  std::lock_guard lock(mu_);
  if (!st.ok() && first_error_.ok()) first_error_ = std::move(st);
  ++done_;
  done_cv_.notify_all();
}

void Stream::record(Status st) {
  std::lock_guard lock(mu_);
  if (first_error_.ok()) first_error_ = std::move(st);
}

void Stream::submit(dev::Command command, Pending* pending) {
  std::unique_ptr<Pending> owned(pending);
  command.completion.done = &Stream::completed;
  command.completion.context = pending;
  std::lock_guard lock(mu_);
  if (stopped_) return;
  dev::Fence fence = 0;
  const dev::Result queued = engine_.submit(queue_, command, &fence);
  if (!queued.ok()) {
    // Reported like a failed task: the caller's asynchronous call has already returned.
    if (first_error_.ok()) {
      first_error_ = queued.condition() == dev::Condition::kOutOfMemory
                         ? Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task")
                         : Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                                 "the task could not be queued: " + backend_->describe(queued));
    }
    return;
  }
  (void)owned.release();  // the completion frees it
  ++submitted_;
}

void Stream::enqueue(Task task) {
  Pending* p = new (std::nothrow) Pending;
  if (p != nullptr) {
    try {
      p->task = std::move(task);
    } catch (const std::bad_alloc&) {
      delete p;
      p = nullptr;
    }
  }
  if (p == nullptr) return record(Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task"));
  p->stream = this;
  dev::Command command;
  command.kind = dev::CommandKind::kHostTask;
  command.task.run = &Stream::run_task;
  submit(command, p);
}

void Stream::enqueue_copy(memops::MemoryOps& ops, void* dst, const void* src, size_t n,
                          const Accessor& who, const char* api) {
  Pending* p = new (std::nothrow) Pending;
  if (p == nullptr) return record(Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task"));
  *p = Pending{this, nullptr, Status(), &ops, reinterpret_cast<uint64_t>(dst),
               reinterpret_cast<uint64_t>(src), n, who, api};
  if (Status refused = ops.checked_first(*backend_, p->dst, p->src, n, who); !refused.ok()) {
    delete p;
    return record(refused);
  }
  dev::Command command;
  command.kind = dev::CommandKind::kCopy;
  command.copy = ops.copy_request(dst, src, n, who);
  submit(command, p);
}

void Stream::enqueue_fill(memops::MemoryOps& ops, void* dst, uint8_t value, size_t n,
                          const Accessor& who, const char* api) {
  Pending* p = new (std::nothrow) Pending;
  if (p == nullptr) return record(Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task"));
  *p = Pending{this, nullptr, Status(), &ops, reinterpret_cast<uint64_t>(dst), 0, n, who, api};
  if (Status refused = ops.checked_first(*backend_, p->dst, 0, n, who); !refused.ok()) {
    delete p;
    return record(refused);
  }
  dev::Command command;
  command.kind = dev::CommandKind::kFill;
  command.fill = ops.fill_request(dst, value, n, who);
  submit(command, p);
}

void Stream::enqueue_prefetch(uint64_t address, uint64_t size, dev::Location target) {
  Pending* p = new (std::nothrow) Pending;
  if (p == nullptr) return record(Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task"));
  p->stream = this;
  p->dst = address;
  p->size = size;
  p->prefetch = true;
  dev::Command command;
  command.kind = dev::CommandKind::kPrefetch;
  command.prefetch = dev::PrefetchRequest{address, size, target};
  submit(command, p);
}

void Stream::enqueue_value_write(memops::MemoryOps& ops, uint64_t address, uint64_t value,
                                 const Accessor& who) {
  Pending* p = new (std::nothrow) Pending;
  if (p == nullptr) return record(Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to queue the task"));
  *p = Pending{this, nullptr, Status(), &ops, address, 0, sizeof(uint64_t), who,
               "aclrtValueWrite"};
  p->word = value;  // the copy's source: it lives in the completion's context until it ran
  p->src = reinterpret_cast<uint64_t>(&p->word);
  dev::Command command;
  command.kind = dev::CommandKind::kCopy;
  command.copy = ops.copy_request(reinterpret_cast<void*>(address), &p->word, sizeof(uint64_t), who);
  submit(command, p);
}

void Stream::enqueue_value_wait(memops::MemoryOps& ops, uint64_t address,
                                std::function<bool(uint64_t)> ready, const Accessor& who) {
  enqueue([this, &ops, address, ready = std::move(ready), who]() -> Status {
    // Polls as a device's wait engine would: at once, then with a growing pause up to 1 ms, so
    // that a wait of seconds costs no core.
    auto pause = std::chrono::microseconds(0);
    for (;;) {
      uint64_t word = 0;
      Status st = ops.copy(&word, reinterpret_cast<const void*>(address), sizeof word, who);
      if (!st.ok()) return labelled("aclrtValueWait", st);
      if (ready(word)) return Status::Ok();
      if (halting()) return Status::Ok();  // discarded by aclrtStreamAbort or a destroy
      if (pause.count() == 0) {
        std::this_thread::yield();
        pause = std::chrono::microseconds(10);
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  });
}

Status Stream::synchronize(const Deadline* deadline) {
  ACLVMM_RETURN_IF_ERROR(drain(deadline));
  std::lock_guard lock(mu_);
  return std::exchange(first_error_, Status());
}

Status Stream::drain(const Deadline* deadline) {
  if (t_running) return refuse_from_task(kWouldWait);
  std::unique_lock lock(mu_);
  // Until the stream is idle: every command submitted, including those its tasks submit while
  // it waits, has completed. Completions record failures before they count, so every failure
  // is in first_error_ then.
  const uint64_t cancels = cancels_;
  auto idle = [this, cancels] { return done_ >= submitted_ || cancels_ != cancels; };
  if (deadline == nullptr) {
    done_cv_.wait(lock, idle);
  } else if (!done_cv_.wait_until(lock, *deadline, idle)) {
    return Error(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                 fmt::format("stream 0x{:x} still had {} task(s) running or queued when the "
                             "timeout expired; they go on",
                             token(), submitted_ - done_));
  }
  if (cancels_ != cancels) {
    return Error(ACL_ERROR_RT_STREAM_ABORT,
                 fmt::format("stream 0x{:x} was aborted (aclrtStreamAbort) while this call "
                             "waited for it",
                             token()));
  }
  return Status::Ok();
}

void Stream::cancel() {
  std::lock_guard control(control_mu_);
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    ++cancels_;
    done_cv_.notify_all();  // waiters return 107023
  }
  cancelling_.store(true, std::memory_order_release);
  // Outside mu_: the cancelled commands' completions and the running one's take it.
  engine_.cancel(queue_);
  cancelling_.store(false, std::memory_order_release);
  std::lock_guard lock(mu_);
  first_error_ = Status();  // what the discarded work or the running task failed with is gone
}

void Stream::abort() {
  // From the stream's own task (exit() from a kernel tears the runtime down): a cancel() on
  // another thread may hold the control lock while it waits for this very task, so it is not
  // taken; the queue's thread is left running then (destroy_queue from its own thread).
  std::unique_lock<RankedMutex<LockRank::kStreamControl>> control(control_mu_, std::defer_lock);
  if (t_running != this) control.lock();
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_.store(true, std::memory_order_release);  // a running memory wait ends
  // Outside mu_: the cancelled commands' completions and the running one's take it.
  engine_.destroy_queue(queue_);
}

}  // namespace aclvmm
