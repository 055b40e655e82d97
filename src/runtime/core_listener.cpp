#include "runtime/core_listener.h"

#include <cstring>
#include <new>

#include "drivers/injection_steps.h"
#include "observability/log.h"
#include "observability/trace.h"
#include "runtime/injection.h"

namespace aclvmm {

void CoreListener::log(dev::Severity severity, const char* module, const char* message) noexcept {
  const log::Level level = severity == dev::Severity::kError     ? log::kError
                           : severity == dev::Severity::kWarning ? log::kWarning
                           : severity == dev::Severity::kInfo    ? log::kInfo
                                                                 : log::kDebug;
  ACLVMM_LOG(level, module, "{}", message);
}

// The managed-memory trace (docs/managed-memory.md §7) of a backend that keeps the residency
// model (step 6). A recording that cannot grow drops the event: the listener must not throw.
void CoreListener::residency_event(const dev::ResidencyEvent& event) noexcept {
  try {
    trace::event(event.what, event.address, event.device);
  } catch (...) {
  }
}

void CoreListener::usage_changed(dev::DeviceIndex device, int64_t delta_bytes) noexcept {
  const size_t slot = device >= 0 && device < dev::kMaxDevices ? static_cast<size_t>(device)
                                                                : dev::kMaxDevices;
  usage_[slot].fetch_add(delta_bytes, std::memory_order_relaxed);
}

int64_t CoreListener::reported_usage(dev::DeviceIndex device) const {
  const size_t slot = device >= 0 && device < dev::kMaxDevices ? static_cast<size_t>(device)
                                                                : dev::kMaxDevices;
  return usage_[slot].load(std::memory_order_relaxed);
}

const std::atomic<bool>& CoreListener::injection_armed() const noexcept {
  return injection_armed_flag();
}

int CoreListener::injected(const char* step) noexcept {
  if (int code = injection_check(step)) return code;
  for (const dev::steps::LegacyStepName& alias : dev::steps::kLegacyStepNames) {
    if (std::strcmp(alias.current, step) != 0) continue;
    if (int code = injection_check(alias.legacy)) return code;
  }
  return 0;
}

CoreListener& core_listener() {
  static CoreListener* listener = new CoreListener();  // never destroyed, like the runtime
  return *listener;
}

namespace {

size_t slot_of(dev::DeviceIndex device) {
  return device >= 0 && device < dev::kMaxDevices ? static_cast<size_t>(device)
                                                   : dev::kMaxDevices;
}

// Destroys the backend, then its listener (the backend may report until its last release).
struct WithUsage {
  DeviceUsage* usage;
  void operator()(dev::DeviceBackend* backend) const {
    delete backend;
    delete usage;
  }
};

}  // namespace

void DeviceUsage::log(dev::Severity severity, const char* module, const char* message) noexcept {
  core_listener().log(severity, module, message);
}

void DeviceUsage::residency_event(const dev::ResidencyEvent& event) noexcept {
  core_listener().residency_event(event);
}

void DeviceUsage::usage_changed(dev::DeviceIndex device, int64_t delta_bytes) noexcept {
  core_listener().usage_changed(device, delta_bytes);
  if (MemoryPool* pool = pools_[slot_of(device)].load(std::memory_order_acquire)) {
    pool->mirror(delta_bytes);
  }
}

const std::atomic<bool>& DeviceUsage::injection_armed() const noexcept {
  return core_listener().injection_armed();
}

int DeviceUsage::injected(const char* step) noexcept { return core_listener().injected(step); }

void DeviceUsage::connect(dev::DeviceIndex device, std::shared_ptr<MemoryPool> pool) {
  const size_t slot = slot_of(device);
  owned_[slot] = std::move(pool);
  pools_[slot].store(owned_[slot].get(), std::memory_order_release);
}

StatusOr<std::shared_ptr<dev::DeviceBackend>> open_device(const Config& config) {
  dev::BackendOptions options;
  options.emulation.soc = config.product.soc;
  options.emulation.device_count = config.device_count;
  options.emulation.device_memory =
      config.device_memory != 0 ? config.device_memory : config.product.memory_bytes;
  options.emulation.host_access_open = config.host_access_open;
  options.emulation.host_numa = config.host_numa;
  options.emulation.server_id = config.server_id;
  for (const PodMember& m : config.pod) {
    options.emulation.pod.push_back({m.server_id, m.address, m.port});
  }
  options.emulation.visible_devices.assign(config.visible.begin(), config.visible.end());
  options.hal.library = config.hal_library;
  options.hal.hide = config.hal_hide;
  auto* usage = new (std::nothrow) DeviceUsage();
  if (usage == nullptr) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to listen to the device backend");
  }
  std::unique_ptr<dev::DeviceBackend> opened;
  const dev::Result r = dev::open_device_backend(config.driver, options, usage, &opened);
  if (!r.ok()) {
    delete usage;
    return Error(r.is_driver() ? code_from_driver(r.driver_value())
                               : code_from_errno(r.is_errno() ? -r.errno_value() : -EINVAL),
                 "the device backend " + config.driver + " could not be opened: " +
                     std::to_string(r.raw()));
  }
  try {
    // On failure shared_ptr's constructor calls the deleter itself.
    return std::shared_ptr<dev::DeviceBackend>(opened.release(), WithUsage{usage});
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to hold the device backend");
  }
}

void connect_pools(const std::shared_ptr<dev::DeviceBackend>& device,
                   const std::vector<std::shared_ptr<MemoryPool>>& pools,
                   const std::shared_ptr<MemoryPool>& host) {
  const WithUsage* with = std::get_deleter<WithUsage>(device);
  if (with == nullptr) return;
  try {
    for (size_t d = 0; d < pools.size() && d < dev::kMaxDevices; ++d) {
      if (!pools[d]) continue;
      with->usage->connect(static_cast<dev::DeviceIndex>(d), pools[d]);
    }
    if (host) {
      with->usage->connect(dev::kNoDevice, host);
    }
  } catch (const std::bad_alloc&) {
    // The ledger still refuses; its reports still reach the pools connected so far.
    ACLVMM_LOG_WARN("RUNTIME", "no memory to connect the memory pools to the device backend");
  }
}

}  // namespace aclvmm
