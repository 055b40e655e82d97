#include "api/api_guard.h"

#include <cerrno>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "api/api_common.h"
#include "api/error_message.h"
#include "runtime/injection.h"

namespace aclvmm::api {

void injected_throw(const char* api) {
  switch (injection_check_throw(api)) {
    case 0: return;
    case kInjectThrowBadAlloc: throw std::bad_alloc();
    case kInjectThrowLengthError: throw std::length_error("injected by aclvmmInjectFault");
    case kInjectThrowSystemError:
      throw std::system_error(EAGAIN, std::generic_category(), "injected by aclvmmInjectFault");
    case kInjectThrowRuntimeError: throw std::runtime_error("injected by aclvmmInjectFault");
    default: throw kInjectThrowNonStandard;  // deliberately not a std::exception
  }
}

aclError caught(const char* api) noexcept {
  int code = ACL_ERROR_INTERNAL_ERROR;
  const char* kind = "an exception that is not a std::exception";
  const char* what = "";
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    code = ACL_ERROR_RT_MEMORY_ALLOCATION;
    kind = "out of host memory (std::bad_alloc)";
    what = e.what();
  } catch (const std::length_error& e) {
    code = ACL_ERROR_RT_MEMORY_ALLOCATION;
    kind = "a request too large to allocate (std::length_error)";
    what = e.what();
  } catch (const std::system_error& e) {
    code = ACL_ERROR_RT_RESOURCE_ALLOC_FAIL;
    kind = "a system resource could not be created, e.g. a thread (std::system_error)";
    what = e.what();
  } catch (const std::exception& e) {
    kind = "internal error (C++ exception)";
    what = e.what();
  } catch (...) {
  }
  try {
    std::string message = kind;
    if (*what) message += std::string(": ") + what;
    return fail(api, code, message);
  } catch (...) {
    // Not even the message could be composed: the store keeps its fixed text for this code.
    record_error_without_memory(code);
    return code;
  }
}

}  // namespace aclvmm::api
