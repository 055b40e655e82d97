// Invariant checks of the fuzz harness: a violated invariant prints what was expected and traps,
// so libFuzzer reports the input as a crash and saves it.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace fuzz {

// The operation being executed, printed with every violation.
extern const char* g_step;
extern int g_step_index;

[[noreturn]] inline void violation(const char* file, int line, const char* what) {
  std::fprintf(stderr, "\naclvmm_fuzz_api: INVARIANT VIOLATED at step %d (%s): %s [%s:%d]\n",
               g_step_index, g_step ? g_step : "?", what, file, line);
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace fuzz

#define FUZZ_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (!(cond)) {                                                               \
      char fuzz_msg_[768];                                                       \
      std::snprintf(fuzz_msg_, sizeof fuzz_msg_, __VA_ARGS__);                   \
      ::fuzz::violation(__FILE__, __LINE__, fuzz_msg_);                          \
    }                                                                            \
  } while (0)
