// Status and StatusOr: how errors cross the core's boundary without exceptions.
//
// A Status carries the aclError value the caller must return (the vendor's numbering, so no second
// translation table is needed) and a human-readable message for aclGetRecentErrMsg.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "acl/error_codes/rt_error_codes.h"

namespace aclvmm {

// ACL-layer codes that the core also produces (acl_base_rt.h keeps them as objects, not macros).
inline constexpr int kAclSuccess = 0;
inline constexpr int kAclInvalidParam = 100000;
inline constexpr int kAclRepeatInitialize = 100002;
inline constexpr int kAclInvalidFile = 100003;
inline constexpr int kAclParseFile = 100006;
inline constexpr int kAclKernelNotFound = 100029;        // ACL_ERROR_KERNEL_NOT_FOUND
inline constexpr int kAclKernelAlreadyRegistered = 100031;  // ACL_ERROR_KERNEL_ALREADY_REGISTERED
inline constexpr int kAclRepeatFinalize = 100037;
inline constexpr int kAclFeatureUnsupported = 200006;
inline constexpr int kAclInternalError = 500000;

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(int code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == 0; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  int code_ = 0;
  std::string message_;
};

inline Status Error(int code, std::string message) { return Status(code, std::move(message)); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

// Translation of a negative errno from the driver layer, as the vendor driver does it
// (behavior.md section 0: kernel errno -> HAL code -> ACL code).
int code_from_errno(int neg_errno);
// A drvError_t of the vendor's driver library as the vendor runtime maps it (hal.md §3.0).
int code_from_driver(uint32_t driver_error);

}  // namespace aclvmm

// Error propagation between layers, so that a call's happy path reads as a sequence of steps:
//
//   ACLVMM_RETURN_IF_ERROR(expr);        expr is a Status: a failure is returned as it is.
//   ACLVMM_ASSIGN_OR_RETURN(lhs, expr);  expr is a StatusOr<T>: a failure's Status is returned
//                                        (it converts to any StatusOr), else the value is moved
//                                        into lhs, a declaration ("auto x", "const T x") or an
//                                        existing variable.
//
// expr is evaluated once. Both are statements, not expressions; ACLVMM_ASSIGN_OR_RETURN expands
// to several, so it needs braces as the body of an if or a loop, takes one use per line, and its
// lhs cannot hold an unparenthesised comma (no structured bindings). A call that must undo
// something on failure still tests the result itself: these macros return at once.
#define ACLVMM_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::aclvmm::Status aclvmm_st_ = (expr);    \
    if (!aclvmm_st_.ok()) return aclvmm_st_; \
  } while (0)

#define ACLVMM_ASSIGN_OR_RETURN(lhs, expr) \
  ACLVMM_ASSIGN_OR_RETURN_IMPL_(ACLVMM_STATUS_CONCAT_(aclvmm_statusor_, __LINE__), lhs, expr)

// Implementation details of the macros above.
#define ACLVMM_STATUS_CONCAT_INNER_(a, b) a##b
#define ACLVMM_STATUS_CONCAT_(a, b) ACLVMM_STATUS_CONCAT_INNER_(a, b)
#define ACLVMM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return statusor.status();            \
  lhs = std::move(statusor).value()
