// Failure injection (ACLVMM_FAULTS and aclvmmInjectFault).
//
// A rule names an ACL function or a backend step (drivers/injection_steps.h: "dev.*" at the
// device interface, a backend's own such as "emu.*", and the older "drv.*" names). For an
// ACL function the nth following call fails with the rule's code before it does anything, so it
// leaves no partial state behind. For a backend step the nth following execution of the step
// returns -code (the code is a positive errno), in the middle of whatever call runs it: that is
// how the rollback of every multi-step call is tested.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config.h"

namespace aclvmm {

// Replaces the rules that came from ACLVMM_FAULTS; rules armed through aclvmmInjectFault stay.
void injection_reset(const std::vector<InjectionRule>& rules);
// nth 0 clears the rule for `api`.
void injection_arm(const std::string& api, uint32_t nth, int code);
// Codes below 0 make the call throw a C++ exception at the API layer's barrier instead of
// returning a code (src/api/api_guard.h; aclvmm.h names them ACLVMM_FAULT_THROW_*). They are how
// the test of that barrier reaches every exported function.
constexpr int kInjectThrowBadAlloc = -1;     // std::bad_alloc
constexpr int kInjectThrowLengthError = -2;  // std::length_error
constexpr int kInjectThrowSystemError = -3;  // std::system_error (EAGAIN), as std::thread throws
constexpr int kInjectThrowRuntimeError = -4; // std::runtime_error
constexpr int kInjectThrowNonStandard = -5;  // an int: not a std::exception at all
constexpr bool is_throw_injection(int code) {
  return code <= kInjectThrowBadAlloc && code >= kInjectThrowNonStandard;
}

// True for the name of a step below the core: the old "drv." steps, the device interface's "dev."
// steps and a backend's own ("emu.", "host.", "fake.", "hal."; drivers/injection_steps.h).
// Their rules carry an errno-like code; only ACL functions can be made to throw.
bool is_backend_step(const char* name);

// Counts one call of `api` against a rule with a code (> 0); returns the code to fail with, or 0.
int injection_check(const char* api);
// Counts one call of `api` against a throwing rule; returns its kInjectThrow* code, or 0.
int injection_check_throw(const char* api);
// True while any rule is armed (one relaxed load): what a device backend reads before asking
// (drivers/backend_listener.h, InjectionGate).
const std::atomic<bool>& injection_armed_flag();
// Calls of `api` until its rule fires, the failing one included; 0 when no rule is armed for it
// (it never was, was cleared, or has fired).
uint32_t injection_remaining(const std::string& api);
// fork(): the rules' lock is held across fork (runtime_fork.cpp), so that neither process
// inherits it taken; both release it afterwards.
void injection_hold_for_fork();
void injection_release_after_fork();

}  // namespace aclvmm
