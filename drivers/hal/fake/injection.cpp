// Failure injection (hal.md §5: the fake "offers fault injection" for the codes a real driver can
// give and the emulator never does: BUS_DOWN, SEND_MESG, WAIT_TIMEOUT, ...). A rule makes calls
// of one exported function return a code without doing anything. Rules come from
// ACLVMM_HAL_FAULTS (read with the configuration) and from aclvmmFakeHalInject (fake_hal_ext.h).
//
//   ACLVMM_HAL_FAULTS = rule { "," rule }
//   rule  = function [ "@" n ] [ "*" count ] "=" code
//   n     = the first failing call, counted from the library's load: 1.. (default 1)
//   count = how many calls fail from there: 1.. (default 1), or 0 for every call
//   code  = a decimal or 0x-hexadecimal drvError_t > 0, or its name with or without the
//           DRV_ERROR_ prefix (BUS_DOWN, DRV_ERROR_WAIT_TIMEOUT)
//
// Cost while nothing is armed: one relaxed load per call.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "drivers/hal/fake/fake_hal.h"
#include "drivers/hal/fake/fake_hal_ext.h"

namespace aclvmm::fakehal {
namespace {

constexpr const char* kNames[] = {
#define FAKE_HAL_NAME(name) #name,
    FAKE_HAL_INJECTABLE(FAKE_HAL_NAME)
#undef FAKE_HAL_NAME
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Fn::kCount));

struct Code {
  const char* name;
  uint32_t value;
};
constexpr Code kCodes[] = {
    {"NO_DEVICE", 1}, {"INVALID_DEVICE", 2}, {"INVALID_VALUE", 3}, {"INVALID_HANDLE", 4},
    {"INVALID_MALLOC_TYPE", 5}, {"OUT_OF_MEMORY", 6}, {"INNER_ERR", 7}, {"PARA_ERROR", 8},
    {"UNINIT", 9}, {"REPEATED_INIT", 10}, {"NOT_EXIST", 11}, {"REPEATED_USERD", 12},
    {"BUSY", 13}, {"NO_RESOURCES", 14}, {"WAIT_TIMEOUT", 16}, {"IOCRL_FAIL", 17},
    {"CLIENT_BUSY", 23}, {"SOCKET_CLOSE", 25}, {"SEND_MESG", 27}, {"BUS_DOWN", 33},
    {"OVER_LIMIT", 37}, {"FILE_OPS", 38}, {"MALLOC_FAIL", 40}, {"PROCESS_EXIT", 42},
    {"DEV_PROCESS_HANG", 43}, {"OPER_NOT_PERMITTED", 46}, {"NO_EVENT_RESOURCES", 47},
    {"NO_STREAM_RESOURCES", 48}, {"NO_NOTIFY_RESOURCES", 49}, {"NO_MODEL_RESOURCES", 50},
    {"TRY_AGAIN", 51}, {"MEMORY_OPT_FAIL", 58}, {"COPY_USER_FAIL", 74}, {"QUEUE_EMPTY", 75},
    {"QUEUE_FULL", 76}, {"BAD_ADDRESS", 79}, {"CDQ_ABNORMAL", 82}, {"CDQ_NOT_EXIST", 83},
    {"NO_CDQ_RESOURCES", 84}, {"RESUME", 89}, {"NOT_SUPPORT", 0xfffe},
};

struct Rule {
  Fn fn;
  uint64_t skip;    // calls that still pass before this rule fires
  uint64_t count;   // calls it still fails; 0: unlimited
  uint32_t code;
};

// Process-wide, inherited by a forked child (the rules are configuration, not driver state).
// Never destroyed: calls may come from late destructors.
struct Rules {
  std::mutex mu;
  std::vector<Rule> rules;
  std::atomic<bool> armed{false};
};

Rules& rules() {
  static Rules* const r = new Rules;
  return *r;
}

bool find_fn(const char* name, size_t len, Fn* out) {
  for (size_t i = 0; i < static_cast<size_t>(Fn::kCount); ++i) {
    if (std::strlen(kNames[i]) == len && std::strncmp(kNames[i], name, len) == 0) {
      *out = static_cast<Fn>(i);
      return true;
    }
  }
  return false;
}

bool parse_number(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* digits = s.c_str() + (hex ? 2 : 0);
  if (*digits == '\0' || std::strspn(digits, hex ? "0123456789abcdefABCDEF" : "0123456789") !=
                             std::strlen(digits)) {
    return false;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(digits, nullptr, hex ? 16 : 10);
  if (errno != 0) return false;
  *out = v;
  return true;
}

bool parse_code(const std::string& s, uint32_t* out) {
  uint64_t v = 0;
  if (parse_number(s, &v)) {
    if (v == 0 || v > UINT32_MAX) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }
  const std::string bare = s.rfind("DRV_ERROR_", 0) == 0 ? s.substr(10) : s;
  for (const Code& c : kCodes) {
    if (bare == c.name) {
      *out = c.value;
      return true;
    }
  }
  return false;
}

void arm(const Rule& rule) {
  Rules& r = rules();
  std::lock_guard lock(r.mu);
  r.rules.push_back(rule);
  r.armed.store(true, std::memory_order_release);
}

}  // namespace

bool arm_from_text(const std::string& text, std::string* error) {
  *error = "function[@n][*count]=code[,...] with an exported driver function, n >= 1, "
           "count >= 0 (0: every call) and a drvError_t code > 0 or its name";
  std::vector<Rule> parsed;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    std::string head = item.substr(0, eq);
    uint64_t n = 1, count = 1;
    const size_t star = head.find('*');
    if (star != std::string::npos) {
      if (!parse_number(head.substr(star + 1), &count) || count > UINT32_MAX) return false;
      head.resize(star);
    }
    const size_t at = head.find('@');
    if (at != std::string::npos) {
      if (!parse_number(head.substr(at + 1), &n) || n == 0 || n > UINT32_MAX) return false;
      head.resize(at);
    }
    Rule rule{};
    if (!find_fn(head.c_str(), head.size(), &rule.fn)) return false;
    if (!parse_code(item.substr(eq + 1), &rule.code)) return false;
    rule.skip = n - 1;
    rule.count = count;
    parsed.push_back(rule);
    start = end + 1;
  }
  for (const Rule& r : parsed) arm(r);
  return true;
}

uint32_t injected(Fn fn) noexcept {
  (void)config();  // ACLVMM_HAL_FAULTS is armed when the configuration is read
  Rules& r = rules();
  if (!r.armed.load(std::memory_order_relaxed)) return 0;
  std::lock_guard lock(r.mu);
  uint32_t code = 0;
  // Every rule of the function counts the call; the first one past its skip fails it.
  for (auto it = r.rules.begin(); it != r.rules.end();) {
    if (it->fn != fn) {
      ++it;
      continue;
    }
    if (it->skip > 0) {
      --it->skip;
      ++it;
      continue;
    }
    if (code != 0) {
      ++it;
      continue;
    }
    code = it->code;
    if (it->count == 1) {
      it = r.rules.erase(it);
      continue;
    }
    if (it->count > 1) --it->count;
    ++it;
  }
  if (r.rules.empty()) r.armed.store(false, std::memory_order_relaxed);
  return code;
}

void injection_prepare_fork() { rules().mu.lock(); }
void injection_after_fork() { rules().mu.unlock(); }

}  // namespace aclvmm::fakehal

using aclvmm::fakehal::Fn;

FAKE_HAL_API int aclvmmFakeHalInject(const char* function, unsigned skip, unsigned count,
                                     unsigned error) {
  try {
    (void)aclvmm::fakehal::config();  // the environment's rules come first
    Fn fn{};
    if (function == nullptr || error == 0 ||
        !aclvmm::fakehal::find_fn(function, std::strlen(function), &fn)) {
      return -1;
    }
    aclvmm::fakehal::arm({fn, skip, count, error});
    return 0;
  } catch (...) {
    return -1;
  }
}

FAKE_HAL_API void aclvmmFakeHalClearInjections(void) {
  aclvmm::fakehal::Rules& r = aclvmm::fakehal::rules();
  std::lock_guard lock(r.mu);
  r.rules.clear();
  r.armed.store(false, std::memory_order_relaxed);
}
