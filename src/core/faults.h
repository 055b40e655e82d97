// Fault injection (ACLVMM_FAULTS and aclvmmInjectFault).
//
// A rule names an ACL function or a backend step ("drv.*", see core/fault_backend.h). For an ACL
// function the nth following call fails with the rule's code before it does anything, so it
// leaves no partial state behind. For a backend step the nth following execution of the step
// returns -code (the code is a positive errno), in the middle of whatever call runs it: that is
// how the rollback of every multi-step call is tested.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace aclvmm {

// Replaces the rules that came from ACLVMM_FAULTS; rules armed through aclvmmInjectFault stay.
void faults_reset(const std::vector<FaultRule>& rules);
// nth 0 clears the rule for `api`.
void faults_arm(const std::string& api, uint32_t nth, int code);
// Counts one call of `api`; returns the code to fail with, or 0.
int faults_check(const char* api);
// Calls of `api` until its rule fires, the failing one included; 0 when no rule is armed for it
// (it never was, was cleared, or has fired).
uint32_t faults_remaining(const std::string& api);
// fork(): the rules' lock is held across fork (runtime_fork.cpp), so that neither process
// inherits it taken; both release it afterwards.
void faults_hold_for_fork();
void faults_release_after_fork();

}  // namespace aclvmm
