// Fault injection (ACLVMM_FAULTS and aclvmmInjectFault): the nth following call of an ACL function
// fails with a chosen code before it does anything, so it leaves no partial state behind.
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

}  // namespace aclvmm
