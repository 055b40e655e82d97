// A failed device-backend call as the application sees it: the Result's errno mapped as the
// vendor driver maps kernel errnos (behavior.md §0, code_from_errno), or its drvError_t as the
// vendor runtime maps driver results (hal.md §3.0, code_from_driver), with the backend's own
// words for it (describe) after what the core was doing.
#pragma once

#include <cerrno>
#include <string>

#include "base/status.h"
#include "drivers/device_backend.h"

namespace aclvmm {

inline int device_code(dev::Result r) {
  if (r.is_driver()) return code_from_driver(r.driver_value());
  return code_from_errno(r.is_errno() ? -r.errno_value() : -EIO);
}

inline Status device_error(dev::DeviceBackend& device, dev::Result r, const std::string& what) {
  return Error(device_code(r), what + ": " + device.describe(r));
}

}  // namespace aclvmm
