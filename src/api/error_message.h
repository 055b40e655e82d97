// The per-thread queue behind aclGetRecentErrMsg, composed in the CANN 9 layout
// (conventions.md section 2.3): a headline "[PID: p] time Title(CODE): message", then the
// earlier messages under "TraceBack (most recent call last):".
//
// Nothing here throws: the store is used on the way out of a failing call, often because memory
// ran out. When a message cannot be stored or composed, the failure is still remembered by its
// code and reported with a fixed text, "out of memory while recording the error".
#pragma once

#include <string>

namespace aclvmm::api {

void record_error(int code, const std::string& message) noexcept;
// A failure whose message could not even be composed.
void record_error_without_memory(int code) noexcept;
// The composed text, or nullptr when the queue is empty; reading clears the queue. The pointer
// stays valid until the next call on the same thread.
const char* take_recent_errors() noexcept;

}  // namespace aclvmm::api
