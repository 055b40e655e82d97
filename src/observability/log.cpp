#include "observability/log.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "base/lock_rank.h"

namespace aclvmm::log {
namespace {

std::atomic<int> g_level{-1};
std::atomic<int> g_stdout{0};
RankedMutex<LockRank::kLog> g_mu;
// Created on the first line, not at start-up, and never destroyed: a thread that calls exit()
// (an emulated kernel may) runs the static destructors while other threads still log.
std::shared_ptr<spdlog::logger>& g_logger = *new std::shared_ptr<spdlog::logger>();
RankedMutex<LockRank::kLogClock> g_clock_mu;  // local_time(); taken under g_mu, never around it

int read_level() {
  const char* v = std::getenv("ASCEND_GLOBAL_LOG_LEVEL");
  if (v && v[0] >= '0' && v[0] <= '4' && v[1] == '\0') return v[0] - '0';
  return kError;  // CANN: invalid or empty means the default
}

int read_stdout() {
  const char* v = std::getenv("ASCEND_LOG_PRINT_TO_STDOUT");
  if (!v) v = std::getenv("ASCEND_SLOG_PRINT_TO_STDOUT");
  return v && std::strcmp(v, "1") == 0;
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0750);
  }
}

std::shared_ptr<spdlog::logger> make_logger() {
  if (g_stdout.load()) {
    auto sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("aclvmm", sink);
    logger->set_pattern("%v");
    return logger;
  }
  std::string root;
  if (const char* p = std::getenv("ASCEND_PROCESS_LOG_PATH"); p && *p) {
    root = p;
  } else if (const char* w = std::getenv("ASCEND_WORK_PATH"); w && *w) {
    root = std::string(w) + "/log";
  } else {
    const char* home = std::getenv("HOME");
    root = std::string(home && *home ? home : "/tmp") + "/ascend/log";
  }
  std::string dir = root + "/debug/plog";
  make_dirs(dir);
  char stamp[32];
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  local_time(tv.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  std::string file = dir + "/plog-" + std::to_string(getpid()) + "_" + stamp +
                     fmt::format("{:03d}", static_cast<int>(tv.tv_usec / 1000)) + ".log";
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file);
    auto logger = std::make_shared<spdlog::logger>("aclvmm", sink);
    logger->set_pattern("%v");
    logger->flush_on(spdlog::level::warn);
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("aclvmm", sink);
    logger->set_pattern("%v");
    return logger;
  }
}

const char* level_name(Level l) {
  switch (l) {
    case kDebug: return "DEBUG";
    case kInfo: return "INFO";
    case kWarning: return "WARNING";
    case kError: return "ERROR";
    default: return "EVENT";
  }
}

const char* proc_name() {
  // Filled once by a thread-safe static initialiser: threads that log their first messages at the
  // same time raced on filling the buffer (ThreadSanitizer). A plain array, never destroyed, so
  // messages logged at exit still find it.
  static const char* const name = [] {
    static char buf[64] = {0};
    FILE* f = fopen("/proc/self/comm", "r");
    if (f) {
      if (fgets(buf, sizeof buf, f)) buf[strcspn(buf, "\n")] = 0;
      fclose(f);
    }
    if (!buf[0]) strcpy(buf, "unknown");
    return buf;
  }();
  return name;
}

void write_line(Level level, const char* module, const char* file, int line, const char* func,
                const std::string& message) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  local_time(tv.tv_sec, &tm);
  const char* base = std::strrchr(file, '/');
  std::string text = fmt::format(
      "[{}] {}({},{}):{:04d}-{:02d}-{:02d}-{:02d}:{:02d}:{:02d}.{:03d}.{:03d} [{}:{}]{} {}:{}",
      level_name(level), module, getpid(), proc_name(), tm.tm_year + 1900, tm.tm_mon + 1,
      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(tv.tv_usec / 1000),
      static_cast<int>(tv.tv_usec % 1000), base ? base + 1 : file, line,
      static_cast<long>(syscall(SYS_gettid)), func, message);
  std::shared_ptr<spdlog::logger> logger;
  {
    std::lock_guard lock(g_mu);
    if (!g_logger) g_logger = make_logger();
    logger = g_logger;
  }
  logger->info(text);
  if (level >= kWarning) logger->flush();
}

}  // namespace

void reconfigure() noexcept {
  std::lock_guard lock(g_mu);
  g_level.store(read_level());
  int out = read_stdout();
  if (out != g_stdout.load()) g_logger.reset();
  g_stdout.store(out);
}

bool enabled(Level level) noexcept {
  int cur = g_level.load(std::memory_order_relaxed);
  if (cur < 0) {
    reconfigure();
    cur = g_level.load();
  }
  return level >= cur && cur != kNull;
}

void emit(Level level, const char* module, const char* file, int line, const char* func,
          const std::string& message) noexcept {
  try {
    write_line(level, module, file, line, func, message);
  } catch (...) {
    // No memory for the line, or the sink failed: the line is dropped, the caller goes on.
  }
}

void local_time(time_t t, struct tm* out) {
  std::lock_guard lock(g_clock_mu);
  localtime_r(&t, out);
}

void hold_for_fork() {
  g_mu.lock();
  g_clock_mu.lock();
}

void release_after_fork(bool child) {
  if (child) (void)new std::shared_ptr<spdlog::logger>(std::move(g_logger));  // leaked on purpose
  g_clock_mu.unlock();
  g_mu.unlock();
}

}  // namespace aclvmm::log
