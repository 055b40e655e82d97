// How many file descriptors the process holds: the tests that check a failed call closed what
// it opened compare the count before and after.
#pragma once

#include <dirent.h>

#include <cstddef>

namespace aclvmm::testing {

// Entries of /proc/self/fd, the directory's own descriptor included (it cancels out in a
// comparison).
inline size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

}  // namespace aclvmm::testing
