#include "api/api_common.h"

#include "api/error_message.h"
#include "core/faults.h"
#include "core/log.h"
#include "core/runtime.h"

namespace aclvmm::api {

aclError enter(const char* api) {
  Status st = Runtime::get().start();
  if (!st.ok()) return fail(api, st.code(), st.message());
  if (int code = faults_check(api)) {
    return fail(api, code, "failure injected by ACLVMM_FAULTS / aclvmmInjectFault");
  }
  return ACL_SUCCESS;
}

aclError fail(const char* api, int code, const std::string& message, const char* file, int line) {
  record_error(code, std::string(api) + ": " + message);
  // A repeated aclInit is documented as harmless; it is worth a warning, not an error.
  const log::Level level = code == kAclRepeatInitialize ? log::kWarning : log::kError;
  if (log::enabled(level)) {
    log::emit(level, "ASCENDCL", file, line, api, message + ", result = " + std::to_string(code));
  }
  return code;
}

void note(const char* api, const std::string& message) {
  if (log::enabled(log::kWarning)) log::emit(log::kWarning, "ASCENDCL", __FILE__, __LINE__, api, message);
}

}  // namespace aclvmm::api
