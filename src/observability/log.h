// Logging in the CANN plog line format (conventions.md section 2.1), through spdlog:
//   [LEVEL] MODULE(PID,PROCNAME):YYYY-MM-DD-HH:MM:SS.mmm.uuu [FILE:LINE]TID FUNC:message
// The level comes from ASCEND_GLOBAL_LOG_LEVEL (0 debug .. 4 null, default 3 error). Lines go to
// stdout when ASCEND_LOG_PRINT_TO_STDOUT (or the older ASCEND_SLOG_PRINT_TO_STDOUT) is 1, else to
// $ASCEND_PROCESS_LOG_PATH, $ASCEND_WORK_PATH/log or $HOME/ascend/log, under debug/plog/.
//
// Logging never throws (a line is written on the way out of failing calls, often because memory
// ran out, and from the library's own threads): a line that cannot be formatted or written is
// dropped.
#pragma once

#include <ctime>
#include <string>

#include <spdlog/fmt/fmt.h>

namespace aclvmm::log {

enum Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kNull = 4 };

bool enabled(Level level) noexcept;
void emit(Level level, const char* module, const char* file, int line, const char* func,
          const std::string& message) noexcept;
// Re-reads the environment (aclInit does this so a test can change the level).
void reconfigure() noexcept;
// localtime_r for the library's threads. glibc's localtime_r takes a lock of its own that fork()
// does not reset: a child forked while another thread is inside it hangs in its next localtime_r.
// Here the call runs under a lock that is held across fork, so no library thread is inside it then.
void local_time(time_t t, struct tm* out);
// fork(): the logger's locks are held across fork (runtime_fork.cpp), so that neither process
// inherits them taken. A child also lets go of the logger without destroying it (its sink's own
// lock may be held by a thread that exists only in the parent): its next line opens its own log.
void hold_for_fork();
void release_after_fork(bool child);

}  // namespace aclvmm::log

// The message is formatted inside a try: formatting allocates.
#define ACLVMM_LOG(level, module, ...)                                                     \
  do {                                                                                     \
    if (::aclvmm::log::enabled(level)) {                                                   \
      try {                                                                                \
        ::aclvmm::log::emit(level, module, __FILE__, __LINE__, __func__,                   \
                            fmt::format(__VA_ARGS__));                                     \
      } catch (...) {                                                                      \
      }                                                                                    \
    }                                                                                      \
  } while (0)
#define ACLVMM_LOG_DEBUG(module, ...) ACLVMM_LOG(::aclvmm::log::kDebug, module, __VA_ARGS__)
#define ACLVMM_LOG_INFO(module, ...) ACLVMM_LOG(::aclvmm::log::kInfo, module, __VA_ARGS__)
#define ACLVMM_LOG_WARN(module, ...) ACLVMM_LOG(::aclvmm::log::kWarning, module, __VA_ARGS__)
#define ACLVMM_LOG_ERROR(module, ...) ACLVMM_LOG(::aclvmm::log::kError, module, __VA_ARGS__)
