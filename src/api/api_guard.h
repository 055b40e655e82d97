// The exception barrier of the C facade: no C++ exception leaves an exported function.
//
// A C caller cannot catch a C++ exception; one that escapes terminates the process. Every
// exported function therefore has one shape:
//
//   aclError aclrtSomething(int32_t deviceId) {
//     ACLVMM_API_ENTER("aclrtSomething");  // opens the barrier, starts the runtime, applies
//                                          // injected failures (ACLVMM_ENTRY)
//     ...                                  // the ACL-layer checks and one call into the core
//     ACLVMM_API_EXIT();                   // closes it: an exception becomes a code + message
//   }
//
// ACLVMM_API_GUARD(name) opens the barrier without starting the runtime, for the functions that
// answer without it or must not start it (versions, aclFinalize, the recent error text, the
// kernel-side helpers); one that needs the runtime later, after a check that must come first
// (a zero-byte aclrtMemcpy returns 0 at once), then uses ACLVMM_ENTRY. A function that does not
// return aclError closes with ACLVMM_API_EXIT_WITH(value), its documented failure value (NULL,
// 0, -1); the message is recorded all the same. Both open macros define `api`, the name.
//
// What an exception becomes (one table for the whole library): std::bad_alloc and
// std::length_error → 207001, std::system_error (a thread that cannot be created) → 207005,
// anything else → 500000, each with a message for aclGetRecentErrMsg naming the function and the
// exception. Code on a path that can fail is expected to turn its failures into a Status and roll
// back itself; the barrier is the last line, for what nobody foresaw.
//
// tests/abi/check_api_guard.sh proves the shape for every name the built library exports, and
// tests/api/api_guard_test.cpp makes each one's barrier throw (ACLVMM_FAULT_THROW_* rules).
#pragma once

#include "acl/acl.h"

namespace aclvmm::api {

// Throws what a throwing injection rule armed for `api` asks for (runtime/injection.h); else
// nothing.
void injected_throw(const char* api);
// Only inside a catch handler: records and logs the exception in flight as a failure of `api`
// and returns its code. Never throws.
aclError caught(const char* api) noexcept;

}  // namespace aclvmm::api

#define ACLVMM_API_GUARD(name)    \
  const char* const api = (name); \
  try {                           \
    ::aclvmm::api::injected_throw(api)

#define ACLVMM_API_ENTER(name) \
  ACLVMM_API_GUARD(name);      \
  ACLVMM_ENTRY(api)

#define ACLVMM_API_EXIT()               \
  }                                     \
  catch (...) {                         \
    return ::aclvmm::api::caught(api);  \
  }                                     \
  do {                                  \
  } while (0)

#define ACLVMM_API_EXIT_WITH(value) \
  }                                 \
  catch (...) {                     \
    (void)::aclvmm::api::caught(api); \
    return (value);                 \
  }                                 \
  do {                              \
  } while (0)
