// Result: what every operation of the device interface returns (docs/device-interface.md, D1).
//
// Contract
// - 0 is success. A negative value is a negative errno, as the Linux kernel reports it: what the
//   software backends (emu, fake) return, since they play the part of the vendor's kernel module.
//   A positive value is a drvError_t of the vendor's driver library (hal.md §4), passed through
//   unchanged by the hal backend. No backend mixes the two domains in one result.
// - The drivers never know ACL error codes. The core turns a Result into an aclError with two
//   tables that already exist in the specification: errno -> code as the vendor driver maps kernel
//   errnos (behavior.md §0, today's code_from_errno), and drvError_t -> code as the vendor runtime
//   maps driver results (hal.md §3.0). The split matters: the HAL refuses bad geometry in user
//   space with INVALID_VALUE (107000) and in the kernel with EINVAL (507899); one errno could not
//   carry both.
// - Where the core must branch on a result (the call-site exceptions of hal.md §3.x, a retry, a
//   fallback), it asks condition(), which names the meaning in both domains, instead of comparing
//   raw values; the raw value is kept for the code table and for messages.
// - [[nodiscard]]: a result that is dropped on purpose is cast to void at the call site.
//
// Threading: a plain value; no state.
#pragma once

#include <cstdint>

namespace aclvmm::dev {

// What a failure means, for the core's branches. Both domains map onto it (table in condition()).
enum class Condition : uint8_t {
  kOk,
  kInvalidArgument,  // EINVAL; INVALID_VALUE(3), PARA_ERROR(8), UNINIT(9)
  kBadAddress,       // EFAULT; BAD_ADDRESS(79), INVALID_HANDLE(4): an address, token or handle
                     // that names nothing (the kernel reports unknown share tokens this way)
  kOutOfMemory,      // ENOMEM; OUT_OF_MEMORY(6)
  kNoResources,      // ENOSPC, EMFILE, ENFILE, EAGAIN (no thread); NO_RESOURCES(14), MALLOC_FAIL(40)
  kNotSupported,     // EOPNOTSUPP; NOT_SUPPORT(0xfffe)
  kNotPermitted,     // EPERM, EACCES; OPER_NOT_PERMITTED(46)
  kBusy,             // EBUSY, EEXIST, EADDRINUSE; BUSY(13), REPEATED_INIT(10)
  kNotFound,         // ENOENT, ESRCH, ECONNREFUSED; NOT_EXIST(11)
  kTimedOut,         // ETIMEDOUT; WAIT_TIMEOUT(16)
  kCancelled,        // ECANCELED: a queued command dropped by destroy_queue
  kDeviceLost,       // ENODEV, ENXIO, EIO; NO_DEVICE(1), BUS_DOWN(33), DEV_PROCESS_HANG(43)
  kOther,
};

class [[nodiscard]] Result {
 public:
  constexpr Result() = default;
  static constexpr Result success() { return Result(0); }
  // errno_value > 0 (e.g. ENOMEM); stored negated.
  static constexpr Result from_errno(int errno_value) { return Result(-errno_value); }
  // A drvError_t other than DRV_ERROR_NONE.
  static constexpr Result from_driver(uint32_t driver_error) {
    return Result(static_cast<int32_t>(driver_error));
  }
  // Today's convention, for adapters over code that returns 0 or -errno.
  static constexpr Result from_raw(int32_t raw) { return Result(raw); }

  constexpr bool ok() const { return raw_ == 0; }
  constexpr bool is_errno() const { return raw_ < 0; }
  constexpr bool is_driver() const { return raw_ > 0; }
  // The positive errno, or 0 when this is not an errno.
  constexpr int errno_value() const { return raw_ < 0 ? -raw_ : 0; }
  // The drvError_t, or 0 when this is not one.
  constexpr uint32_t driver_value() const { return raw_ > 0 ? static_cast<uint32_t>(raw_) : 0; }
  constexpr int32_t raw() const { return raw_; }
  constexpr Condition condition() const;

  friend constexpr bool operator==(Result a, Result b) { return a.raw_ == b.raw_; }
  friend constexpr bool operator!=(Result a, Result b) { return a.raw_ != b.raw_; }

 private:
  constexpr explicit Result(int32_t raw) : raw_(raw) {}
  int32_t raw_ = 0;
};

namespace detail {

// Linux errno values (asm-generic; the same on x86_64 and aarch64). Spelled out so that this
// header needs no system header; tests/unit/drivers checks them against <cerrno>.
enum : int {
  kEPERM = 1, kENOENT = 2, kESRCH = 3, kEIO = 5, kENXIO = 6, kEAGAIN = 11, kENOMEM = 12,
  kEACCES = 13, kEFAULT = 14, kEBUSY = 16, kEEXIST = 17, kENODEV = 19, kEINVAL = 22,
  kENFILE = 23, kEMFILE = 24, kENOSPC = 28, kEADDRINUSE = 98, kEOPNOTSUPP = 95,
  kETIMEDOUT = 110, kECONNREFUSED = 111, kECANCELED = 125,
};

constexpr Condition errno_condition(int e) {
  switch (e) {
    case kEINVAL: return Condition::kInvalidArgument;
    case kEFAULT: return Condition::kBadAddress;
    case kENOMEM: return Condition::kOutOfMemory;
    case kENOSPC: case kEMFILE: case kENFILE: case kEAGAIN: return Condition::kNoResources;
    case kEOPNOTSUPP: return Condition::kNotSupported;
    case kEPERM: case kEACCES: return Condition::kNotPermitted;
    case kEBUSY: case kEEXIST: case kEADDRINUSE: return Condition::kBusy;
    case kENOENT: case kESRCH: case kECONNREFUSED: return Condition::kNotFound;
    case kETIMEDOUT: return Condition::kTimedOut;
    case kECANCELED: return Condition::kCancelled;
    case kENODEV: case kENXIO: case kEIO: return Condition::kDeviceLost;
    default: return Condition::kOther;
  }
}

constexpr Condition driver_condition(uint32_t d) {
  switch (d) {
    case 3: case 8: return Condition::kInvalidArgument;
    case 4: case 79: return Condition::kBadAddress;
    case 6: return Condition::kOutOfMemory;
    case 14: case 40: return Condition::kNoResources;
    case 0xfffe: return Condition::kNotSupported;
    case 46: return Condition::kNotPermitted;
    case 13: case 10: return Condition::kBusy;  // BUSY, REPEATED_INIT (a second open)
    case 9: return Condition::kInvalidArgument;  // UNINIT: closing what is not open
    case 11: return Condition::kNotFound;
    case 16: return Condition::kTimedOut;
    case 1: case 33: case 43: return Condition::kDeviceLost;
    default: return Condition::kOther;
  }
}

}  // namespace detail

constexpr Condition Result::condition() const {
  if (raw_ == 0) return Condition::kOk;
  return raw_ < 0 ? detail::errno_condition(-raw_) : detail::driver_condition(driver_value());
}

}  // namespace aclvmm::dev
