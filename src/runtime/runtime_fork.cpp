// fork(): what a child inherits from the runtime (docs/architecture.md, "fork").
//
// As with CUDA and the vendor's runtime, a child inherits no usable runtime state: no contexts,
// streams, handles, reservations, exports or imports. It can always exit (exit(), return from
// main, aclFinalize), and any call starts the runtime afresh, with its configuration read again.
// The child handler therefore abandons the parent's Runtime object as it stands and installs a new
// one that is not started. Nothing inherited is joined (its threads exist only in the parent),
// freed (its charges would go back into the parent's shared statistics, its memory is the
// parent's), unlocked or destroyed (its locks may be held by threads of the parent's). The address
// ranges it had claimed stay mapped in the child (what the child reads through them is what it
// inherited) until the new runtime's first start has the backend release them and claim the
// windows again.
//
// Lock order over fork. pthread_atfork runs prepare handlers in reverse order of registration and
// the others in order of registration. ShareService registers its own handler at the runtime's
// first start, after this one (registered with the first Runtime), so before fork:
//   1. ShareService's lock (its handler: the child must not keep the parent's endpoints);
//   2. the device backend's locks (DeviceBackend::prepare_fork; which backend is read under the
//      runtime's device_mu_, released at once, and a reference held until after fork), whose
//      after_fork_child abandons
//      what the parent's threads hold; then the backends' process-wide state
//      (dev::prepare_fork_process: emu's record of its windows and no-UC claims, so that the
//      child finds it whole), taken whether or not a backend is open: another thread may be
//      inside a start's open_device, its backend not yet ours, holding it. Their code calls the
//      listener, so the leaf locks below come after them. The new runtime's first start calls
//      release_inherited on the abandoned backend, and the first backend opened in the child
//      gives back what is left of the parent's windows and no-UC ranges (and every mapping in
//      them) before it claims the windows again where they were;
//   3. the leaf locks, in this order: failure injection, the trace, the log and its clock. Code
//      takes them under the locks above (a backend step claiming a range checks its injection
//      rules, window claims and the listener log), never the other way round, and takes nothing
//      under them.
//   4. (drivers/host's statistics segment registry: its handler was installed at load, first,
//      so its prepare handler runs last.)
// 1 to 3 are increasing ranks of base/lock_rank.h, checked like every other acquisition; 4 is a
// backend's leaf above them all (lock_rank.h says why).
// Runtime::mu_, the region tree and the tables' locks are not taken: the child never uses them
// (reader-writer locks could not even be released there: the thread's id changed).
// After fork both processes release all of them (plain mutexes, released by the thread that took
// them); then the child gets its new runtime. ShareService's child handler runs after this one.
#include <memory>
#include <new>
#include <vector>

#include "observability/log.h"
#include "observability/trace.h"
#include "runtime/injection.h"
#include "runtime/runtime.h"

namespace aclvmm {
namespace {

// The backend whose locks fork_prepare took. The parent and child handlers release exactly
// those: a start or teardown on another thread may replace Runtime::device_ meanwhile (the
// runtime's own lock is not held across fork), and reading device_ again there left the first
// backend's locks held in the parent, whose destructor then waited on them for ever
// (ForkWhileLogging, about 1 run in 100). A reference, taken under device_mu_: a teardown that
// drops the runtime's meanwhile must not destroy the backend while this thread holds its locks.
std::shared_ptr<dev::DeviceBackend> g_forking_device;

// A forked child abandons the backends it inherited (device_backend.h: never destroyed in a
// child): their references are kept here, reachable and never freed, for the process's life.
std::vector<std::shared_ptr<dev::DeviceBackend>>* const g_kept_in_child =
    new std::vector<std::shared_ptr<dev::DeviceBackend>>();

void keep_for_the_process(std::shared_ptr<dev::DeviceBackend> backend) {
  if (!backend) return;
  try {
    g_kept_in_child->push_back(std::move(backend));
  } catch (const std::bad_alloc&) {
    // No memory for the list: the reference is leaked on its own instead.
    (void)new (std::nothrow) std::shared_ptr<dev::DeviceBackend>(std::move(backend));
  }
}

}  // namespace

void Runtime::fork_prepare() {
  {
    Runtime& rt = get();
    std::lock_guard device_lock(rt.device_mu_);
    g_forking_device = rt.device_;
  }
  if (g_forking_device) g_forking_device->prepare_fork();
  dev::prepare_fork_process();
  injection_hold_for_fork();
  trace::hold_for_fork();
  log::hold_for_fork();
}

void Runtime::fork_parent() {
  log::release_after_fork(false);
  trace::release_after_fork();
  injection_release_after_fork();
  dev::after_fork_process_parent();
  if (g_forking_device) g_forking_device->after_fork_parent();
  g_forking_device.reset();  // the backend goes here if a teardown dropped it meanwhile
}

void Runtime::fork_child() {
  log::release_after_fork(true);
  trace::release_after_fork();
  injection_release_after_fork();
  dev::after_fork_process_child();
  if (g_forking_device) g_forking_device->after_fork_child();
  keep_for_the_process(std::move(g_forking_device));
  replace_in_forked_child();
}

}  // namespace aclvmm
