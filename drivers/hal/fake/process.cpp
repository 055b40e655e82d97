// The per-process state: its creation, the emu backend inside it, the listener emu reports to,
// the layout extension, and fork().
//
// Lifetime. Nothing here is ever destroyed. The vendor's driver state ends when the process does
// (the kernel releases everything when the descriptor closes, hal.md §2), and so does ours: no
// exit-time destructor joins emu's threads or frees memory a late caller may still name, so a
// process can exit from anywhere, a forked child included.
//
// fork(). A child starts as a process with no device opened (hal.md §1.4). The handlers below,
// registered when the library is loaded, follow the order the core uses
// (src/runtime/runtime_fork.cpp): before fork every lock a child must find released is taken:
// the creation lock, the tables' mutex, the backend lock, the backend's own locks
// (DeviceBackend::prepare_fork), emu's process-wide window record, the injection rules (a leaf).
// The parent releases them. The child releases what it will use again (the creation lock, the
// window record, the rules), tells the backend it is in a child (after_fork_child: it abandons
// the parent's threads and descriptors), and abandons the whole Process object, locks and all:
// its handles, mappings and threads belong to the parent. The child's first backend then calls
// release_inherited() on the abandoned one, which gives the parent's windows back so that the
// new backend claims them again.
#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "drivers/emu/device/emu_device_backend.h"
#include "drivers/emu/device/windows.h"
#include "drivers/hal/fake/fake_hal.h"
#include "drivers/hal/fake/fake_hal_ext.h"

namespace aclvmm::fakehal {
namespace {

std::mutex g_create_mu;                        // creation of the Process object
std::atomic<Process*> g_process{nullptr};
dev::DeviceBackend* g_inherited = nullptr;     // a forked child's abandoned backend
Process* g_forking = nullptr;                  // whose locks prepare_fork took
dev::DeviceBackend* g_forking_backend = nullptr;

const char* severity_name(dev::Severity s) {
  switch (s) {
    case dev::Severity::kDebug: return "debug";
    case dev::Severity::kInfo: return "info";
    case dev::Severity::kWarning: return "warning";
    default: return "error";
  }
}

// Registered at load: a fork before any call must find the handlers in place.
const int g_atfork = pthread_atfork(&Process::prepare_fork, &Process::after_fork_parent,
                                    &Process::after_fork_child);

}  // namespace

void Listener::log(dev::Severity severity, const char* module, const char* message) noexcept {
  if (severity < dev::Severity::kWarning && !config().verbose) return;
  std::fprintf(stderr, "[fake-hal] %s %s: %s\n", severity_name(severity), module ? module : "",
               message ? message : "");
}

Process& Process::get() {
  if (Process* p = g_process.load(std::memory_order_acquire)) return *p;
  std::lock_guard lock(g_create_mu);
  if (Process* p = g_process.load(std::memory_order_relaxed)) return *p;
  Process* p = new Process();
  g_process.store(p, std::memory_order_release);
  return *p;
}

Process* Process::peek() { return g_process.load(std::memory_order_acquire); }

dev::DeviceBackend* Process::backend() {
  if (dev::DeviceBackend* b = backend_.load(std::memory_order_acquire)) return b;
  std::lock_guard lock(backend_mu_);
  if (dev::DeviceBackend* b = backend_.load(std::memory_order_relaxed)) return b;
  const Config& c = config();
  if (!c.valid) return nullptr;
  // A forked child gives the parent's address space back first (device_backend.h, "Fork").
  if (g_inherited != nullptr) {
    g_inherited->release_inherited();
    g_inherited = nullptr;
  }
  dev::BackendOptions options;
  options.emulation.soc = c.soc;
  options.emulation.device_count = c.device_count;
  options.emulation.device_memory = c.device_memory;
  options.emulation.host_access_open = c.host_access_open;
  options.emulation.host_numa = c.host_numa;
  options.emulation.server_id = c.server_id;
  std::unique_ptr<dev::DeviceBackend> made;
  const dev::Result r = dev::emu::EmuDeviceBackend::open(options, listener_, &made);
  if (!r.ok()) {
    char line[160];
    std::snprintf(line, sizeof line, "the emulated NPU cannot be set up (errno %d)",
                  r.errno_value());
    listener_.log(dev::Severity::kError, "DRV", line);
    return nullptr;  // a later call tries again
  }
  layout_ = made->windows().layout();
  dev::DeviceBackend* b = made.release();
  backend_.store(b, std::memory_order_release);
  return b;
}

void Process::prepare_fork() {
  g_create_mu.lock();
  g_forking = g_process.load(std::memory_order_acquire);
  g_forking_backend = nullptr;
  if (g_forking != nullptr) {
    g_forking->mu.lock();
    g_forking->backend_mu_.lock();
    g_forking_backend = g_forking->backend_.load(std::memory_order_acquire);
    if (g_forking_backend != nullptr) g_forking_backend->prepare_fork();
  }
  // What dev::prepare_fork_process() does for emu (drivers/device_registry.cpp), called directly:
  // the registry would pull every backend it can open into this library, the hal backend too.
  dev::emu::EmuWindows::prepare_fork();
  injection_prepare_fork();
}

void Process::after_fork_parent() {
  injection_after_fork();
  dev::emu::EmuWindows::after_fork_parent();
  if (g_forking != nullptr) {
    if (g_forking_backend != nullptr) g_forking_backend->after_fork_parent();
    g_forking->backend_mu_.unlock();
    g_forking->mu.unlock();
  }
  g_forking = nullptr;
  g_forking_backend = nullptr;
  g_create_mu.unlock();
}

void Process::after_fork_child() {
  injection_after_fork();
  dev::emu::EmuWindows::after_fork_child();
  if (g_forking_backend != nullptr) {
    g_forking_backend->after_fork_child();
    g_inherited = g_forking_backend;  // released by the child's first backend
  }
  // Abandoned: everything in it is the parent's. Its locks are let go first (this thread took
  // them in prepare_fork and is the only one left), so that no lock stays held for the child's
  // life under the locks of the state it makes afresh.
  if (g_forking != nullptr) {
    g_forking->backend_mu_.unlock();
    g_forking->mu.unlock();
  }
  g_process.store(nullptr, std::memory_order_release);
  g_forking = nullptr;
  g_forking_backend = nullptr;
  g_create_mu.unlock();
}

}  // namespace aclvmm::fakehal

// The emulator's counters, as DeviceBackend::visit_statistics gives them (fake_hal_ext.h).
FAKE_HAL_API int aclvmmFakeHalStatistics(aclvmmFakeHalCounterVisit visit, void* context) {
  class Forward final : public aclvmm::dev::StatisticsVisitor {
   public:
    Forward(aclvmmFakeHalCounterVisit visit, void* context) : visit_(visit), context_(context) {}
    void counter(const char* group, const char* name, uint64_t value) override {
      visit_(context_, group, name, value, 0);
    }
    void flag(const char* group, const char* name, bool value) override {
      visit_(context_, group, name, value ? 1 : 0, 1);
    }

   private:
    aclvmmFakeHalCounterVisit visit_;
    void* context_;
  };
  try {
    if (visit == nullptr) return -1;
    aclvmm::fakehal::Process* p = aclvmm::fakehal::Process::peek();
    aclvmm::dev::DeviceBackend* backend = p != nullptr ? p->existing_backend() : nullptr;
    if (backend == nullptr) return -1;
    Forward forward(visit, context);
    backend->visit_statistics(forward);
    return 0;
  } catch (...) {
    return -1;
  }
}

FAKE_HAL_API int aclvmmFakeHalLayout(uint64_t out[10]) {
  try {
    if (out == nullptr) return -1;
    aclvmm::fakehal::Process& p = aclvmm::fakehal::Process::get();
    if (p.backend() == nullptr) return -1;
    const aclvmm::dev::WindowLayout& l = p.layout();
    const aclvmm::dev::VaRange ranges[] = {l.host_pinned, l.managed, l.device, l.device_general,
                                           l.no_uc};
    for (size_t i = 0; i < 5; ++i) {
      out[2 * i] = ranges[i].base;
      out[2 * i + 1] = ranges[i].size;
    }
    return 0;
  } catch (...) {
    return -1;
  }
}
