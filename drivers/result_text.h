// The text of a Result for DeviceBackend::describe() of backends whose results are errnos (emu,
// fake): what the kernel would say, and the number, never empty. A hal backend adds the HAL's
// own text and EL code instead.
#pragma once

#include <string>

#include "drivers/device_result.h"

namespace aclvmm::dev {

// "success", "<the errno's text> (errno N)" or "driver error N".
std::string result_text(Result result);

}  // namespace aclvmm::dev
