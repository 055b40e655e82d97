// memcpy at user-space speed that turns a bad address into -EFAULT instead of a crash.
//
// The kernel-checked copies (process_vm_readv, pread/pwrite) run at a third of memcpy's speed, and
// copies are the hot path of aclrtMemcpy. So the copy runs as a plain memcpy while a SIGSEGV/SIGBUS
// handler watches the copying thread: a fault inside the copy jumps back out with -EFAULT; any
// other fault goes to the handler that was installed before ours (or the default action).
//
// The guard is used only while our handler is still the installed one (an application or runtime
// that installs its own handler later takes precedence, and copies fall back to the kernel-checked
// path), and never under AddressSanitizer, whose memcpy interceptor faults on wild addresses in
// its own shadow lookups before the copy starts.
#pragma once

#include <cstddef>

namespace aclvmm::dev::emu::os {

// true when guarded copies can run now (installs the handlers on first use).
bool guard_available();
// 0, or -EFAULT when a byte of either range could not be accessed (the destination may then hold
// part of the data). Only call after guard_available() returned true.
int guarded_copy(void* dst, const void* src, size_t n);

}  // namespace aclvmm::dev::emu::os
