// The CPU touching an address where it may fault: tried in a forked child, so a fault ends the
// child and the test goes on to assert it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

namespace aclvmm::testing {

// Whether a read of va faults.
inline bool cpu_read_faults(uint64_t va) {
  const pid_t child = ::fork();
  if (child == 0) {
    volatile const char* p = reinterpret_cast<const char*>(va);
    (void)*p;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace aclvmm::testing
