#include "drivers/result_text.h"

#include <cstring>

namespace aclvmm::dev {

std::string result_text(Result result) {
  if (result.ok()) return "success";
  if (result.is_driver()) return "driver error " + std::to_string(result.driver_value());
  char buf[128] = {0};
  // The GNU strerror_r: returns the text, in buf or a static string; never fails.
  const char* text = ::strerror_r(result.errno_value(), buf, sizeof buf);
  return std::string(text) + " (errno " + std::to_string(result.errno_value()) + ")";
}

}  // namespace aclvmm::dev
