#include "runtime/injection.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "base/lock_rank.h"

namespace aclvmm {
namespace {

struct Armed {
  std::string api;
  uint32_t remaining;  // calls until the failing one, counting it
  int code;
  bool from_env;
};

RankedMutex<LockRank::kInjection> g_mu;
std::vector<Armed> g_armed;
std::atomic<bool> g_any{false};  // keeps the common case (nothing armed) lock-free

}  // namespace

void injection_reset(const std::vector<InjectionRule>& rules) {
  std::lock_guard lock(g_mu);
  for (auto it = g_armed.begin(); it != g_armed.end();) {
    it = it->from_env ? g_armed.erase(it) : it + 1;
  }
  for (const InjectionRule& r : rules) g_armed.push_back({r.api, r.nth, r.code, true});
  g_any.store(!g_armed.empty());
}

void injection_arm(const std::string& api, uint32_t nth, int code) {
  std::lock_guard lock(g_mu);
  for (auto it = g_armed.begin(); it != g_armed.end();) {
    it = it->api == api ? g_armed.erase(it) : it + 1;
  }
  if (nth != 0) g_armed.push_back({api, nth, code, false});
  g_any.store(!g_armed.empty());
}

namespace {

// A name has at most one rule; a call counts against it only when it is of the asked kind, so the
// barrier and the runtime's own check never count one call twice.
int check(const char* api, bool throwing) {
  if (!g_any.load(std::memory_order_relaxed)) return 0;
  std::lock_guard lock(g_mu);
  for (auto it = g_armed.begin(); it != g_armed.end(); ++it) {
    if (std::strcmp(it->api.c_str(), api) != 0) continue;
    if ((it->code < 0) != throwing) return 0;
    if (--it->remaining > 0) return 0;
    int code = it->code;
    g_armed.erase(it);
    g_any.store(!g_armed.empty());
    return code;
  }
  return 0;
}

}  // namespace

const std::atomic<bool>& injection_armed_flag() { return g_any; }

int injection_check(const char* api) { return check(api, false); }
int injection_check_throw(const char* api) { return check(api, true); }

uint32_t injection_remaining(const std::string& api) {
  std::lock_guard lock(g_mu);
  for (const Armed& a : g_armed) {
    if (a.api == api) return a.remaining;
  }
  return 0;
}

void injection_hold_for_fork() { g_mu.lock(); }
void injection_release_after_fork() { g_mu.unlock(); }

bool is_backend_step(const char* name) {
  static constexpr const char* kPrefixes[] = {"drv.", "dev.", "emu.", "host.", "fake.", "hal."};
  for (const char* prefix : kPrefixes) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

}  // namespace aclvmm
