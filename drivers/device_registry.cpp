// open_device_backend(): the device backends this library is built with, each behind the
// failure-injection decorator (drivers/injection/), so every "dev.*" rule reaches whichever
// backend the core opens: "emu" (the software NPU) and "hal" (the vendor's driver library, or the
// fake one built on the emulator, hal.md). The fake is a test library of its own
// (drivers/fake/fake_backend.h: open_fake_backend), never linked into libascendcl.so.
#include <cerrno>
#include <memory>
#include <new>
#include <utility>

#include "drivers/device_backend.h"
#include "drivers/emu/device/emu_device_backend.h"
#include "drivers/emu/device/windows.h"
#include "drivers/hal/hal_backend.h"
#include "drivers/injection/injecting_backend.h"

namespace aclvmm::dev {

void prepare_fork_process() { emu::EmuWindows::prepare_fork(); }
void after_fork_process_parent() { emu::EmuWindows::after_fork_parent(); }
void after_fork_process_child() { emu::EmuWindows::after_fork_child(); }

Result open_device_backend(const std::string& name, const BackendOptions& options,
                           BackendListener* listener, std::unique_ptr<DeviceBackend>* out) {
  if (listener == nullptr || out == nullptr) return Result::from_errno(EINVAL);
  try {
    std::unique_ptr<DeviceBackend> bare;
    if (name == "emu") {
      if (Result r = emu::EmuDeviceBackend::open(options, *listener, &bare); !r.ok()) return r;
    } else if (name == "hal") {
      if (Result r = hal::HalBackend::open(options, *listener, &bare); !r.ok()) return r;
    } else {
      return Result::from_errno(ENOENT);
    }
    return injection::wrap_with_injection(std::move(bare), *listener, out);
  } catch (const std::bad_alloc&) {
    // A backend's set-up copies strings from the options: no memory for them is no backend.
    return Result::from_errno(ENOMEM);
  }
}

}  // namespace aclvmm::dev
