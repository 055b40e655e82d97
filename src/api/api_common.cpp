#include "api/api_common.h"

#include "api/error_message.h"
#include "observability/log.h"
#include "runtime/injection.h"
#include "runtime/runtime.h"

namespace aclvmm::api {

aclError enter(const char* api) {
  // Inside the barrier (api_guard.h): what the start throws becomes a code there.
  Status st = Runtime::get().start();
  if (!st.ok()) return fail(api, st.code(), st.message());
  if (int code = injection_check(api)) {
    return fail(api, code, "failure injected by ACLVMM_FAULTS / aclvmmInjectFault");
  }
  return ACL_SUCCESS;
}

aclError fail(const char* api, int code, const std::string& message, const char* file,
              int line) noexcept {
  try {
    record_error(code, std::string(api) + ": " + message);
  } catch (...) {
    record_error_without_memory(code);  // the code is what the caller gets; the text is lost
  }
  // A repeated aclInit is documented as harmless; it is worth a warning, not an error.
  const log::Level level = code == kAclRepeatInitialize ? log::kWarning : log::kError;
  if (log::enabled(level)) {
    try {
      log::emit(level, "ASCENDCL", file, line, api, message + ", result = " + std::to_string(code));
    } catch (...) {
      // The log line is lost; the failure is still recorded and returned.
    }
  }
  return code;
}

void note(const char* api, const std::string& message) noexcept {
  if (log::enabled(log::kWarning)) log::emit(log::kWarning, "ASCENDCL", __FILE__, __LINE__, api, message);
}

}  // namespace aclvmm::api
