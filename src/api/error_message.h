// The per-thread queue behind aclGetRecentErrMsg, composed in the CANN 9 layout
// (conventions.md section 2.3): a headline "[PID: p] time Title(CODE): message", then the
// earlier messages under "TraceBack (most recent call last):".
#pragma once

#include <string>

namespace aclvmm::api {

void record_error(int code, const std::string& message);
// The composed text, or nullptr when the queue is empty; reading clears the queue. The pointer
// stays valid until the next call on the same thread.
const char* take_recent_errors();

}  // namespace aclvmm::api
