// Facts about processes that only the kernel can tell (/proc), for every backend that runs on a
// POSIX host: the sharing whitelist's start times, the monitor's staleness checks, and the pid the
// vendor's driver compares whitelists against.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev::host {

// Reads at most `cap` bytes of a small file (a /proc entry) into `buf`; false when it cannot be
// opened or is empty. *len is the count read.
bool read_small_file(const char* path, char* buf, size_t cap, size_t* len);

// Start time of `pid` in /proc/<pid>/stat units (clock ticks since boot), 0 when there is no such
// process.
uint64_t process_start_time(int pid);

// The calling process's pid namespace (inode of /proc/self/ns/pid), 0 when unknown.
uint64_t own_pid_namespace();

// This process's pid in the outermost pid namespace /proc can see (the first NSpid entry of
// /proc/self/status): what the vendor's driver compares against share whitelists. getpid()
// where the kernel has no NSpid line.
int32_t bare_tgid();

}  // namespace aclvmm::dev::host
