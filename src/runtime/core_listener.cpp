#include "runtime/core_listener.h"

#include <cstring>
#include <new>

#include "drivers/injection_steps.h"
#include "observability/log.h"
#include "runtime/injection.h"

namespace aclvmm {

void CoreListener::log(dev::Severity severity, const char* module, const char* message) noexcept {
  const log::Level level = severity == dev::Severity::kError     ? log::kError
                           : severity == dev::Severity::kWarning ? log::kWarning
                           : severity == dev::Severity::kInfo    ? log::kInfo
                                                                 : log::kDebug;
  ACLVMM_LOG(level, module, "{}", message);
}

// The managed-memory trace comes through here once residency moves into emu (step 6).
void CoreListener::residency_event(const dev::ResidencyEvent&) noexcept {}

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

StatusOr<std::shared_ptr<dev::DeviceBackend>> open_device(const Config& config) {
  dev::BackendOptions options;
  options.emulation.soc = config.product.soc;
  options.emulation.device_count = config.device_count;
  options.emulation.device_memory =
      config.device_memory != 0 ? config.device_memory : config.product.memory_bytes;
  options.emulation.host_access_open = config.host_access_open;
  options.emulation.host_numa = config.host_numa;
  options.emulation.visible_devices.assign(config.visible.begin(), config.visible.end());
  std::unique_ptr<dev::DeviceBackend> opened;
  const dev::Result r = dev::open_device_backend(config.driver, options, &core_listener(), &opened);
  if (!r.ok()) {
    return Error(code_from_errno(r.is_errno() ? -r.errno_value() : -EINVAL),
                 "the device backend " + config.driver + " could not be opened: " +
                     std::to_string(r.raw()));
  }
  try {
    return std::shared_ptr<dev::DeviceBackend>(std::move(opened));
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to hold the device backend");
  }
}

}  // namespace aclvmm
