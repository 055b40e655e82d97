// A failed device-backend call as the application sees it: the Result's errno mapped as the
// vendor driver maps kernel errnos (behavior.md §0, code_from_errno), with the backend's own
// words for it (describe) after what the core was doing.
#pragma once

#include <cerrno>
#include <string>

#include "base/status.h"
#include "drivers/device_backend.h"

namespace aclvmm {

inline int device_code(dev::Result r) {
  return code_from_errno(r.is_errno() ? -r.errno_value() : -EIO);
}

inline Status device_error(dev::DeviceBackend& device, dev::Result r, const std::string& what) {
  return Error(device_code(r), what + ": " + device.describe(r));
}

}  // namespace aclvmm
