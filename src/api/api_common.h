// Shared helpers of the C facade: entry checks, error recording and code conversion.
//
// Every exported function follows one shape (api_guard.h): the barrier opens with ACLVMM_API_ENTER
// (runtime start-up and injected failures, ACLVMM_ENTRY), the ACL layer's own argument checks
// follow (100000 on failure, as the vendor's ACL layer does), then one call into the core whose Status
// becomes the return code, and ACLVMM_API_EXIT closes the barrier. Every failure leaves a message
// for aclGetRecentErrMsg on the calling thread and an ERROR line in the log.
#pragma once

#include <cstring>
#include <string>

#include "acl/acl.h"
#include "api/api_guard.h"
#include "base/status.h"

namespace aclvmm::api {

// Starts the runtime if needed and applies failure injection; 0 means go on.
aclError enter(const char* api);
// Records and logs a failure of `api`; returns `code`. The log line names the caller's line.
// Never throws: without memory for the message, the store keeps a fixed text for the code.
aclError fail(const char* api, int code, const std::string& message,
              const char* file = __builtin_FILE(), int line = __builtin_LINE()) noexcept;
// 0 for an ok status, else fail(api, status.code(), status.message()).
inline aclError finish(const char* api, const Status& status, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  return status.ok() ? 0 : fail(api, status.code(), status.message(), file, line);
}
// An ACL-layer parameter error (100000).
inline aclError invalid(const char* api, const std::string& message,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return fail(api, kAclInvalidParam, message, file, line);
}
// Records a warning-level note (not an error): e.g. a feature probe answered "not supported".
void note(const char* api, const std::string& message) noexcept;

// Enumeration values from C callers may lie outside the C++ enumeration's range, and loading such
// a value as the enum type is undefined behaviour: every enum argument is read as a plain int.
template <typename E>
inline int raw(const E& value) {
  static_assert(sizeof(E) == sizeof(int), "ACL enums are int-sized");
  int out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

inline uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline uint64_t token(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline void* from_token(uint64_t t) { return reinterpret_cast<void*>(t); }

}  // namespace aclvmm::api

// Inside an open barrier: starts the runtime and applies injected failures (ACLVMM_API_ENTER does
// this at once; a function whose first check must come before the start does it after).
#define ACLVMM_ENTRY(name)                                \
  do {                                                    \
    aclError aclvmm_entry_ = ::aclvmm::api::enter(name);  \
    if (aclvmm_entry_ != ACL_SUCCESS) return aclvmm_entry_; \
  } while (0)

#define ACLVMM_REQUIRE_NOT_NULL(name, p)                                    \
  do {                                                                      \
    if ((p) == nullptr) return ::aclvmm::api::invalid(name, #p " must not be NULL"); \
  } while (0)
