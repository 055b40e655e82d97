#include "drivers/emu/os/descriptor_room.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

namespace aclvmm::dev::emu::os {
namespace {

// Serialises the windows of our own callers, so that one window's restore cannot cut another's
// short. A leaf: nothing else is locked while it is held.
std::mutex g_window_mu;
// Budgeted descriptors alive now.
std::atomic<int> g_budget_used{0};

// Takes a place of the budget; false when it is spent.
bool take_budget() {
  int used = g_budget_used.load(std::memory_order_relaxed);
  while (used < kLowBudget) {
    if (g_budget_used.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

void reset_after_fork() {
  // The parent's lock may have been held by a thread that does not exist here: the child starts
  // with a fresh one in the same place (a std::mutex holds no resource to leak).
  new (&g_window_mu) std::mutex;
}

void register_fork_handler() {
  static const bool registered = [] {
    return ::pthread_atfork(nullptr, nullptr, reset_after_fork) == 0;
  }();
  (void)registered;
}

// The soft limit to open the window with: the hard one, capped at fs.nr_open's default when it
// is infinite (the kernel refuses a soft limit above nr_open).
rlim_t window_limit(const rlimit& lim) {
  constexpr rlim_t kNrOpenDefault = 1u << 20;
  return lim.rlim_max == RLIM_INFINITY ? kNrOpenDefault : lim.rlim_max;
}

// Moves `fd` to the lowest free number at or above `floor` (the window must be open); the new
// descriptor, or `fd` itself when that fails.
int move_above(int fd, rlim_t floor) {
  if (fd < 0 || static_cast<rlim_t>(fd) >= floor) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(floor));
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

// Whether `lim` leaves room above the soft limit.
bool room_above(const rlimit& lim) {
  return lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < window_limit(lim) &&
         lim.rlim_cur <= (1u << 30);
}

// Opens the window, runs `body(floor)` and closes the window again; `body` runs without the
// window (floor 0: nothing to move) when there is no room above the soft limit, or when `fd` is
// at or above it already. *soft is the application's soft limit as read under the window's lock
// (0 when unknown or infinite): outside the lock another thread's window may be showing its
// raised one.
template <typename Body>
int in_window(Body body, int fd = -1, rlim_t* soft = nullptr) {
  if (soft != nullptr) *soft = 0;
  if (!placement_enabled()) return body(rlim_t{0});
  register_fork_handler();
  std::lock_guard<std::mutex> lock(g_window_mu);
  rlimit saved{};
  if (::getrlimit(RLIMIT_NOFILE, &saved) != 0) return body(rlim_t{0});
  if (soft != nullptr && saved.rlim_cur != RLIM_INFINITY) *soft = saved.rlim_cur;
  // Already out of the application's range (received while its range was full, say).
  if (fd >= 0 && static_cast<rlim_t>(fd) >= saved.rlim_cur) return body(rlim_t{0});
  if (!room_above(saved)) return body(rlim_t{0});
  rlimit raised = saved;
  raised.rlim_cur = window_limit(saved);
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) return body(rlim_t{0});
  const int result = body(saved.rlim_cur);
  const int err = errno;
  (void)::setrlimit(RLIMIT_NOFILE, &saved);
  errno = err;
  return result;
}

}  // namespace

bool placement_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("ACLVMM_HIGH_DESCRIPTORS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

int open_held(const std::function<int()>& open, bool* budgeted) {
  if (budgeted != nullptr) *budgeted = false;
  if (!placement_enabled()) return open();
  if (budgeted != nullptr && take_budget()) {
    const int fd = open();
    if (fd >= 0) {
      *budgeted = true;
      return fd;
    }
    release_budgeted();
    // The application's range is full: the window may still find room above it.
    if (fd != -EMFILE) return fd;
  }
  return in_window([&](rlim_t floor) {
    const int fd = open();
    return floor == 0 ? fd : move_above(fd, floor);
  });
}

int place_held(int fd, bool* budgeted, bool* above) {
  if (budgeted != nullptr) *budgeted = false;
  if (above != nullptr) *above = false;
  if (fd < 0) return fd;
  if (!placement_enabled()) return fd;
  if (budgeted != nullptr && take_budget()) {
    *budgeted = true;
    return fd;
  }
  rlim_t soft = 0;
  const int placed =
      in_window([&](rlim_t floor) { return floor == 0 ? fd : move_above(fd, floor); }, fd, &soft);
  if (above != nullptr) *above = soft != 0 && static_cast<rlim_t>(placed) >= soft;
  return placed;
}

void release_budgeted() { g_budget_used.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace aclvmm::dev::emu::os
