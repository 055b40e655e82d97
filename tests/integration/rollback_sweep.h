// The harness of the rollback sweeps (rollback_sweep_*_test.cpp): every backend step ("drv.*") of
// a multi-step call is failed in turn, at its 1st, 2nd, ... execution, and a failed call must leave
// the process exactly as it found it: the same descriptors (/proc/self/fd), the same mappings in
// the emulator's windows and of its memory (/proc/self/maps), the same live objects and device
// memory (aclvmmStatsJson), and the same answers of the API about the objects the call touched
// (rollback_sweep_api.h: access rights, pointer attributes, address ranges, handle properties,
// bytes). A call that absorbs the failure and succeeds must answer as a clean run does. The same
// call must then succeed, and releasing what it made must bring the process back to where it was
// before the scenario began.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "integration/int_util.h"
#include "integration/rollback_sweep_api.h"

namespace rollback_sweep {

using namespace aclvmm_itest;

// Every step that runs on behalf of a call (on the caller's thread, or a stream's for queued
// work). The steps the library's own threads run by themselves (the share listener's poll and
// accept, the fault thread's next_fault) would fire at any time and are not swept.
inline const std::vector<const char*> kSteps = {
    "drv.claim_fixed",   "drv.release_window", "drv.create_physical", "drv.adopt_physical",
    "drv.map_cpu",       "drv.unmap_cpu",      "drv.bind_numa",       "drv.host_copy",
    "drv.host_fill",     "drv.read",           "drv.write",           "drv.fill",
    "drv.populate",      "drv.share_listen",   "drv.share_connect",   "drv.share_send",
    "drv.share_recv",    "drv.uffd_start",     "drv.uffd_watch",      "drv.uffd_unwatch",
    "drv.uffd_revoke",   "drv.uffd_resolve",   "drv.uffd_resolve_read_only",
    "drv.uffd_protect_writes", "drv.uffd_allow_writes"};

constexpr int kENOMEM = 12;

// Points swept in this process (a point: a call, a step, an nth at which the step failed).
inline std::atomic<long> g_points{0};

// Address ranges whose /proc/self/maps lines are compared: the emulator's windows.
inline std::vector<std::pair<uint64_t, uint64_t>>& windows() {
  static std::vector<std::pair<uint64_t, uint64_t>> w;
  return w;
}

struct MapsLine {
  uint64_t start = 0, end = 0;
  std::string text;
};
inline std::vector<MapsLine> maps_lines() {
  std::vector<MapsLine> out;
  std::ifstream in("/proc/self/maps");
  for (std::string line; std::getline(in, line);) {
    MapsLine m;
    m.text = line;
    m.start = std::strtoull(line.c_str(), nullptr, 16);
    m.end = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16);
    out.push_back(std::move(m));
  }
  return out;
}

// Adds the window around `addr` (the maps line holding it, while nothing is mapped there).
inline void add_window_at(uint64_t addr) {
  for (const MapsLine& m : maps_lines()) {
    if (addr >= m.start && addr < m.end) windows().emplace_back(m.start, m.end);
  }
}

// The emulator's lines: those inside a window and those of its memory anywhere. Stacks, heaps
// and sanitizer mappings elsewhere move by themselves and are left out.
inline std::vector<std::string> emulator_maps() {
  std::vector<std::string> out;
  for (const MapsLine& m : maps_lines()) {
    bool keep = m.text.find("aclvmm") != std::string::npos;
    for (const auto& w : windows()) keep = keep || (m.start < w.second && m.end > w.first);
    if (keep) out.push_back(m.text);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n - 1;  // the directory's own descriptor
}

struct State {
  size_t fds = 0;
  std::vector<std::string> maps;
  LiveCounts live;  // every "live" count and each device's memory_used
};
inline State snapshot() { return State{open_fds(), emulator_maps(), live_counts()}; }

inline std::string differences(const State& want, const State& got) {
  std::string s;
  if (want.fds != got.fds) {
    s += "fds " + std::to_string(want.fds) + " -> " + std::to_string(got.fds) + "; ";
  }
  if (want.live != got.live) s += "live " + describe(want.live) + "-> " + describe(got.live) + "; ";
  for (const std::string& l : want.maps) {
    if (!std::binary_search(got.maps.begin(), got.maps.end(), l)) s += "\n  maps lost: " + l;
  }
  for (const std::string& l : got.maps) {
    if (!std::binary_search(want.maps.begin(), want.maps.end(), l)) s += "\n  maps new: " + l;
  }
  if (s.empty() && want.maps.size() != got.maps.size()) s = "maps line count differs";
  return s;
}

// "" when the process is in state `want`. Descriptors of ended exports are closed by the share
// listener once it is woken (and the listener ends 200 ms after its last export), so a difference
// is given up to a second to go away.
inline std::string settled(const State& want) {
  std::string why;
  for (int i = 0; i < 100; ++i) {
    why = differences(want, snapshot());
    if (why.empty()) return why;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return why;
}

// One call under test. `setup` makes what the call needs, `undo` releases what a successful
// call made, `teardown` what setup made; all three must succeed.
struct Call {
  std::string name;
  std::function<aclError()> run;
  std::function<void()> undo = [] {};
  std::function<void()> setup = [] {};
  std::function<void()> teardown = [] {};
  // Checked after every successful run (e.g. the bytes a copy moved).
  std::function<void()> verify = [] {};
  // The objects the call touches, as setup made them (their API answers are compared).
  std::function<Watch()> watch = [] { return Watch{}; };
};

// Points compared through the API in this process, and the comparisons made (one per question).
inline std::atomic<long> g_api_points{0}, g_api_comparisons{0};

// Compares the API's answers; "" when they agree. Counts the comparison.
inline std::string api_check(const ApiView& want, const ApiView& got) {
  if (std::getenv("ACLVMM_SWEEP_SHOW_ANSWERS")) {
    for (const auto& [key, answer] : got) std::printf("    %s: %s\n", key.c_str(), answer.c_str());
  }
  if (want.empty()) return "";
  ++g_api_points;
  g_api_comparisons += static_cast<long>(want.size());
  return api_differences(want, got);
}

// What a clean run of a call shows: the steps it executes, with how often, and the API's answers
// about the objects it touched before any run (with the managed bytes) and after the clean run.
struct CleanRun {
  std::vector<std::pair<const char*, uint32_t>> ran;
  ApiView before, after;
};

// The steps of `steps` one run of `c` executes, with how often: every step is armed at once with
// an nth no call reaches, and what each rule has left afterwards tells how often it ran. The API
// is asked before the run as each point asks it, so that the counted steps are those a point
// meets. A run of its own gives the managed bytes before the call (reading them moves pages,
// which would change the steps the call runs).
inline CleanRun clean_run(const Call& c, const std::vector<const char*>& steps) {
  constexpr uint32_t kNever = 1u << 30;
  CleanRun out;
  c.setup();
  out.before = api_view(c.watch(), true);
  if (c.run() == kOk) c.undo();
  c.teardown();
  c.setup();
  const Watch w = c.watch();
  (void)api_view(w, false);
  for (const char* step : steps) EXPECT_EQ(aclvmmInjectFault(step, kNever, kENOMEM), kOk);
  const aclError rc = c.run();
  for (const char* step : steps) {
    const uint32_t left = aclvmmFaultRemaining(step);
    EXPECT_EQ(aclvmmInjectFault(step, 0, 0), kOk);
    if (left != kNever) out.ran.emplace_back(step, kNever - left);
  }
  EXPECT_EQ(rc, kOk) << c.name << " fails without any injected failure";
  out.after = api_view(w, true);
  if (rc == kOk) c.undo();
  c.teardown();
  return out;
}

// Fails each step `c` runs at each of its executions in turn (step failures with errno `err`);
// returns the points swept. Steps default to every step.
inline long sweep(const Call& c, const std::vector<const char*>& steps = kSteps,
                  int err = kENOMEM) {
  long points = 0;
  std::string ran_text;
  // Every point must come back to this state (taken before anything ran, since the share
  // listener closes the descriptors of ended exports a little later).
  const State origin = snapshot();
  const CleanRun clean = clean_run(c, steps);
  EXPECT_EQ(settled(origin), "") << c.name << " leaks without any injected failure";
  for (const auto& [step, count] : clean.ran) {
    ran_text += std::string(ran_text.empty() ? "" : ", ") + step + " x" + std::to_string(count);
    // nth = count + 1 must not fire: the count is checked on the way.
    for (uint32_t nth = 1; nth <= count + 1 && !::testing::Test::HasFailure(); ++nth) {
      const std::string at = c.name + " with " + step + " failing at execution " +
                             std::to_string(nth);
      c.setup();
      const Watch w = c.watch();
      const State before = snapshot();
      const ApiView answers = api_view(w, false);
      EXPECT_EQ(aclvmmInjectFault(step, nth, err), kOk);
      const aclError rc = c.run();
      const bool fired = aclvmmFaultRemaining(step) == 0;
      EXPECT_EQ(aclvmmInjectFault(step, 0, 0), kOk);
      EXPECT_EQ(fired, nth <= count) << at << ": the step runs " << count << " time(s)";
      if (fired) ++points;
      if (rc != kOk) {
        EXPECT_TRUE(fired) << at << ": failed with " << rc << " although the step did not fail";
        const std::string why = settled(before);
        EXPECT_EQ(why, "") << at << ": failed with " << rc << " and did not roll back";
        EXPECT_EQ(api_check(with_missing(answers, clean.before), api_view(w, true)), "")
            << at << ": failed with " << rc << " and the API reports a change";
        const aclError again = c.run();
        EXPECT_EQ(again, kOk) << at << ": the call fails again with the rule cleared";
        if (again == kOk) c.verify();
        if (again == kOk) c.undo();
      } else {
        if (fired) {
          EXPECT_EQ(api_check(clean.after, api_view(w, true)), "")
              << at << ": the call absorbed the failure, but the API reports what a clean run does not";
        }
        c.verify();
        c.undo();
      }
      c.teardown();
      const std::string leaked = settled(origin);
      EXPECT_EQ(leaked, "") << at << ": returned " << rc << "; releasing everything leaves this";
    }
  }
  g_points += points;
  std::printf("[ sweep    ] %s: %ld points (%s)\n", c.name.c_str(), points,
              ran_text.empty() ? "no backend step" : ran_text.c_str());
  return points;
}

// AclTest whose windows are known: each is found from an address the runtime hands out there.
class RollbackSweepTest : public AclTest {
 protected:
  void SetUp() override {
    // The sweep compares the process's descriptors and mappings before and after each call;
    // freed device memory kept for reuse (drivers/emu/os/memory_recycler.h) holds both on
    // purpose, so this process recycles nothing; connections kept to exporters after an import
    // (docs/sharing.md §5) hold descriptors too, so it keeps none.
    setenv("ACLVMM_RECYCLE_BYTES", "0", 1);
    setenv("ACLVMM_SHARE_LINKS", "0", 1);
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    windows().clear();
    void* p = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&p, k2M, 0, nullptr, 0), kOk);
    ASSERT_EQ(aclrtReleaseMemAddress(p), kOk);
    add_window_at(u64(p));
    ASSERT_EQ(aclrtMallocHost(&p, 4096), kOk);
    ASSERT_EQ(aclrtFreeHost(p), kOk);
    add_window_at(u64(p));
    ASSERT_EQ(aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    ASSERT_EQ(aclrtFree(p), kOk);
    add_window_at(u64(p));
    ASSERT_EQ(windows().size(), 3u) << "the device, host pinned and managed windows";
    // The log file is opened by the first ERROR line: open it now, not during a sweep.
    EXPECT_NE(aclrtFree(nullptr), kOk);
    (void)aclGetRecentErrMsg();
  }
  // Restarts the runtime (device 0 current): state that lives until aclFinalize goes.
  static void restart() {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    EXPECT_EQ(aclInit(nullptr), kOk);
    EXPECT_EQ(aclrtSetDevice(0), kOk);
  }
};

}  // namespace rollback_sweep
