#include "api/error_message.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <deque>

#include "observability/log.h"

namespace aclvmm::api {
namespace {

struct Entry {
  int code;
  std::string text;
  std::string when;
};

constexpr size_t kMaxQueued = 1000;  // CANN caps its queue at about this many messages
thread_local std::deque<Entry> t_queue;
thread_local std::string t_buffer;
// The newest failure, when its message was lost for want of memory (0: none). Plain data: it
// needs no allocation to set or to report.
thread_local int t_lost_code = 0;
thread_local char t_fallback[160];
constexpr const char* kLostText = "out of memory while recording the error";

struct Catalog {
  const char* code;
  const char* title;
};

// The CANN error-code family a result belongs to (EH: ACL layer, EE: runtime, EL: driver).
Catalog catalog(int code) {
  switch (code) {
    case 100000: case 100003: case 100006: return {"EH0009", "Invalid_Argument"};
    case 100002: case 100037: return {"EH0018", "API_Call_Sequence"};
    case 107000: case 107001: case 107017: return {"EE1011", "Invalid_Argument"};
    case 107002: return {"EE1018", "API_Call_Sequence"};
    case 200006: return {"EH0006", "Not_Supported"};
    case 207000: case 207021: return {"EE1005", "Not_Supported"};
    case 207001: return {"EL0004", "Memory_Allocation_Failure"};
    case 207005: case 207008: return {"EL0006", "Insufficient_Resources"};
    case 207006: return {"EL0007", "No_Permission"};
    case 507899: return {"EL0015", "Invalid_Device_Access"};
    default: return {"EE9999", "Internal_Error"};
  }
}

std::string now() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  // Not localtime_r: its glibc lock is not reset by fork (log::local_time is held across it).
  log::local_time(tv.tv_sec, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02d-%02d:%02d:%02d.%03d.%03d", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           static_cast<int>(tv.tv_usec / 1000), static_cast<int>(tv.tv_usec % 1000));
  return buf;
}

// The fixed report of a lost message, written without allocating.
const char* lost_report(int code) noexcept {
  const Catalog c = catalog(code);
  std::snprintf(t_fallback, sizeof t_fallback, "[PID: %d] %s(%s): %s (result %d)",
                static_cast<int>(getpid()), c.title, c.code, kLostText, code);
  return t_fallback;
}

}  // namespace

void record_error(int code, const std::string& message) noexcept {
  try {
    Entry e{code, message, now()};
    if (t_queue.size() >= kMaxQueued) t_queue.pop_front();
    t_queue.push_back(std::move(e));
    t_lost_code = 0;  // the newest failure is on record again
  } catch (...) {
    t_lost_code = code;
  }
}

void record_error_without_memory(int code) noexcept { t_lost_code = code; }

const char* take_recent_errors() noexcept {
  if (t_lost_code != 0) {
    const int code = t_lost_code;
    t_lost_code = 0;
    t_queue.clear();
    return lost_report(code);
  }
  if (t_queue.empty()) return nullptr;
  // The newest failure is what the caller is asking about; older ones are its history.
  const Entry& last = t_queue.back();
  try {
    Catalog c = catalog(last.code);
    t_buffer = "[PID: " + std::to_string(getpid()) + "] " + last.when + " " + c.title + "(" +
               c.code + "): " + last.text + " (result " + std::to_string(last.code) + ")";
    if (t_queue.size() > 1) {
      t_buffer += "\n        TraceBack (most recent call last):";
      for (size_t i = 0; i + 1 < t_queue.size(); ++i) {
        t_buffer += "\n        " + t_queue[i].text + " (result " + std::to_string(t_queue[i].code) + ")";
      }
    }
  } catch (...) {
    const int code = last.code;
    t_queue.clear();
    return lost_report(code);
  }
  t_queue.clear();
  return t_buffer.c_str();
}

}  // namespace aclvmm::api
