// Trace: managed-memory migrations and faults as Chrome trace-event JSON (ACLVMM_TRACE_FILE), so
// an access pattern can be looked at in a trace viewer (chrome://tracing, Perfetto).
#pragma once

#include <cstdint>
#include <string>

namespace aclvmm::trace {

// Starts recording into `path` (empty: off). Events before this call are not kept.
void open(const std::string& path);
bool enabled();
// One instant event: `name` (e.g. "to_device"), the page address and the device (-1: host).
void event(const char* name, uint64_t address, int device);
// Writes the file (at aclFinalize and at exit); later events start a new recording.
void flush();
// fork(): the recording's lock is held across fork (runtime_fork.cpp), so that neither process
// inherits it taken; both release it afterwards.
void hold_for_fork();
void release_after_fork();

}  // namespace aclvmm::trace
