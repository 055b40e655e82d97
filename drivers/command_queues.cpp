#include "drivers/command_queues.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <new>
#include <system_error>

#include "drivers/injection_steps.h"

namespace aclvmm::dev {

CommandQueues::CommandQueues(CopyEngine& engine, BackendListener* listener,
                             const char* thread_step)
    : engine_(engine),
      gate_(listener ? std::optional<InjectionGate>(*listener) : std::nullopt),
      thread_step_(thread_step) {}

void CommandQueues::destroy_all() {
  for (;;) {
    QueueId id;
    {
      std::lock_guard lock(live_mu_);
      if (live_.empty()) return;
      id.value = reinterpret_cast<uintptr_t>(*live_.begin());
    }
    destroy(id);
  }
}

Result CommandQueues::create(const QueueConfig& config, QueueId* out) {
  if (thread_step_ != nullptr) {
    if (Result r = injected(thread_step_); !r.ok()) return r;
  }
  auto* q = new (std::nothrow) Queue;
  if (q == nullptr) return Result::from_errno(ENOMEM);
  q->config = config;
  q->pid = ::getpid();
  try {
    std::lock_guard lock(live_mu_);
    live_.insert(q);
  } catch (const std::bad_alloc&) {
    delete q;
    return Result::from_errno(ENOMEM);
  }
  try {
    // The thread learns its own id under the queue's lock before it can run a command.
    std::lock_guard lock(q->mu);
    q->thread = std::thread([this, q] { run(q); });
    q->thread_id = q->thread.get_id();
  } catch (const std::system_error&) {
    std::lock_guard lock(live_mu_);
    live_.erase(q);  // rollback: no thread, no queue
    delete q;
    return Result::from_errno(EAGAIN);
  }
  out->value = reinterpret_cast<uintptr_t>(q);
  return Result::success();
}

void CommandQueues::destroy(QueueId id) {
  Queue* q = of(id);
  {
    std::lock_guard lock(live_mu_);
    if (live_.erase(q) == 0) return;
  }
  std::deque<Command> dropped;
  bool own;
  {
    std::lock_guard lock(q->mu);
    q->stop = true;
    dropped.swap(q->pending);
    own = std::this_thread::get_id() == q->thread_id;
    q->orphaned = own;
    q->work.notify_all();
  }
  const CopyOutcome cancelled{Result::from_errno(ECANCELED), CopyOutcome::Side::kNone, 0};
  for (const Command& c : dropped) {
    if (c.completion.done) c.completion.done(c.completion.context, cancelled);
  }
  if (own) {
    // From a host task of this queue (one that ends the process, or destroys its own stream):
    // the thread cannot join itself; it frees the queue when the task has returned.
    q->thread.detach();
    return;
  }
  q->thread.join();
  delete q;
}

void CommandQueues::cancel(QueueId id) {
  Queue* q = of(id);
  std::deque<Command> dropped;
  Fence target = 0;
  bool own = false;
  bool was_busy = false;
  uint64_t started = 0;
  {
    std::lock_guard lock(q->mu);
    if (q->stop) return;
    dropped.swap(q->pending);
    target = q->submitted;
    own = std::this_thread::get_id() == q->thread_id;
    was_busy = q->busy;
    started = q->started;
    // Until the dropped commands' completions have run, no fence passes: a wait() that returns
    // has seen every completion up to its fence (run() defers what finishes meanwhile).
    ++q->cancels_running;
  }
  const CopyOutcome cancelled{Result::from_errno(ECANCELED), CopyOutcome::Side::kNone, 0};
  for (const Command& c : dropped) {
    if (c.completion.done) c.completion.done(c.completion.context, cancelled);
  }
  {
    std::lock_guard lock(q->mu);
    --q->cancels_running;
    if (was_busy && q->busy && q->started == started) {
      q->cancelled_behind += dropped.size();  // their fences pass with the running command's
    } else {
      q->deferred += dropped.size();
    }
    if (q->cancels_running == 0 && q->deferred != 0) {
      q->completed.store(q->completed.load(std::memory_order_relaxed) + q->deferred,
                         std::memory_order_release);
      q->deferred = 0;
      q->passed.notify_all();
    }
  }
  if (own) return;  // the running command is the caller: it passes when it returns
  std::unique_lock lock(q->mu);
  q->passed.wait(lock, [q, target] {
    return q->stop || q->completed.load(std::memory_order_relaxed) >= target;
  });
}

Result CommandQueues::submit(QueueId id, const Command& command, Fence* fence) {
  Queue* q = of(id);
  std::lock_guard lock(q->mu);
  if (q->stop) return Result::from_errno(ECANCELED);
  try {
    q->pending.push_back(command);
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);  // not queued: its completion never runs
  }
  *fence = ++q->submitted;
  q->work.notify_one();
  return Result::success();
}

Result CommandQueues::wait(QueueId id, Fence fence, int timeout_ms) {
  Queue* q = of(id);
  // A device task cannot wait for its own queue: the command it runs is ahead of the fence.
  if (std::this_thread::get_id() == q->thread_id) return Result::from_errno(EDEADLK);
  std::unique_lock lock(q->mu);
  auto reached = [q, fence] { return q->completed.load(std::memory_order_relaxed) >= fence; };
  if (timeout_ms < 0) {
    q->passed.wait(lock, reached);
  } else if (!q->passed.wait_for(lock, std::chrono::milliseconds(timeout_ms), reached)) {
    return Result::from_errno(ETIMEDOUT);
  }
  return Result::success();
}

Fence CommandQueues::completed(QueueId id) const {
  return of(id)->completed.load(std::memory_order_acquire);
}

bool CommandQueues::live(QueueId id) const {
  std::lock_guard lock(live_mu_);
  return live_.count(of(id)) != 0;
}

CopyOutcome CommandQueues::execute(const Command& c) {
  if (Result r = injected(steps::kQueueExecute); !r.ok()) {
    return CopyOutcome{r, CopyOutcome::Side::kNone, 0};
  }
  switch (c.kind) {
    case CommandKind::kCopy:
      return engine_.copy(c.copy);
    case CommandKind::kFill:
      return engine_.fill(c.fill);
    case CommandKind::kHostTask:
      if (c.task.run == nullptr) break;
      return CopyOutcome{c.task.run(c.completion.context), CopyOutcome::Side::kNone, 0};
    case CommandKind::kPrefetch:
      if (unified_ == nullptr) return CopyOutcome{Result::from_errno(EOPNOTSUPP), CopyOutcome::Side::kNone, 0};
      return CopyOutcome{unified_->prefetch(c.prefetch.address, c.prefetch.size, c.prefetch.target),
                         CopyOutcome::Side::kNone, c.prefetch.address};
  }
  return CopyOutcome{Result::from_errno(EINVAL), CopyOutcome::Side::kNone, 0};
}

void CommandQueues::run(Queue* q) {
  if (q->config.on_thread_start) q->config.on_thread_start(q->config.context);
  std::unique_lock lock(q->mu);
  for (;;) {
    q->work.wait(lock, [q] { return q->stop || !q->pending.empty(); });
    if (q->stop) break;
    const Command c = std::move(q->pending.front());
    q->pending.pop_front();
    q->busy = true;
    ++q->started;
    lock.unlock();
    const CopyOutcome outcome = execute(c);
    // A host task forked and this is the child, where this thread is all there is: the
    // parent's queue must not go on here (ending the only thread ends the child, as exit(0)).
    if (::getpid() != q->pid) return;
    if (c.completion.done) c.completion.done(c.completion.context, outcome);
    lock.lock();
    const Fence passing = 1 + q->cancelled_behind;
    q->cancelled_behind = 0;
    q->busy = false;
    if (q->cancels_running != 0) {
      q->deferred += passing;  // a cancel's completions are still running: it passes them all
    } else {
      q->completed.store(q->completed.load(std::memory_order_relaxed) + passing,
                         std::memory_order_release);
      q->passed.notify_all();
    }
  }
  const bool orphaned = q->orphaned;
  lock.unlock();
  if (orphaned) delete q;
}

}  // namespace aclvmm::dev
