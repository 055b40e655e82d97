// The emulated NPU's windows (drivers/emu/device/windows.h), what only emu does: one claim per
// process shared by every backend (a second open claims nothing; two backends never hand out
// one range), a forked child that gives its inherited windows back and claims them where its
// parent had them, not at the vendor's addresses (moved from the core's AddressSpace tests when
// the windows left it), and a refused claim that gives back the windows claimed before it.
#include "drivers/emu/device/windows.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace aclvmm::dev::emu {
namespace {

// Bytes of /proc/self/maps inside `range`.
uint64_t mapped_in(VaRange range) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uint64_t n = 0;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    const uint64_t lo = start > range.base ? start : range.base;
    const uint64_t hi = end < range.base + range.size ? end : range.base + range.size;
    if (lo < hi) n += hi - lo;
  }
  return n;
}

bool same_places(const WindowLayout& a, const WindowLayout& b) {
  return a.host_pinned.base == b.host_pinned.base && a.managed.base == b.managed.base &&
         a.device.base == b.device.base && a.host_pinned.size == b.host_pinned.size &&
         a.managed.size == b.managed.size && a.device.size == b.device.size;
}

bool any_place_shared(const WindowLayout& a, const WindowLayout& b) {
  return a.host_pinned.base == b.host_pinned.base || a.managed.base == b.managed.base ||
         a.device.base == b.device.base;
}

// Runs `body` in a forked child; its exit status (0: passed).
template <typename Body>
int in_child(Body body) {
  EmuWindows::prepare_fork();
  const pid_t child = ::fork();
  if (child == 0) {
    EmuWindows::after_fork_child();
    ::_exit(body());
  }
  EmuWindows::after_fork_parent();
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 100;
  return WEXITSTATUS(status);
}

// The process's windows, as a backend opened now sees them.
WindowLayout process_layout() {
  testing::RecordingListener listener;
  EmuWindows windows(listener);
  EXPECT_TRUE(windows.open().ok());
  return windows.layout();
}

// in_child, where the child first gives back the windows it inherited (as the runtime has a
// forked child's abandoned backend do before its new one opens).
template <typename Body>
int in_child_without_windows(Body body) {
  return in_child([&] {
    EmuWindows::release_inherited();
    return body();
  });
}

TEST(EmuWindows, EveryBackendOfAProcessSharesOneClaim) {
  testing::RecordingListener listener;
  EmuWindows first(listener);
  ASSERT_TRUE(first.open().ok());
  const WindowLayout layout = first.layout();
  const uint64_t before = mapped_in(layout.device);
  EXPECT_EQ(before, layout.device.size) << "the device window is one placeholder";
  EmuWindows second(listener);
  ASSERT_TRUE(second.open().ok());
  EXPECT_TRUE(same_places(second.layout(), layout));
  EXPECT_EQ(mapped_in(layout.device), before) << "a second open claimed again";

  ReserveRequest r;
  r.size = 2 * kMiB;
  r.alignment = 2 * kMiB;
  uint64_t at = 0;
  ASSERT_TRUE(first.reserve(r, &at).ok());
  r.fixed_address = at;
  uint64_t again = 0;
  EXPECT_EQ(second.reserve(r, &again).condition(), Condition::kBusy)
      << "two backends of one process handed out one range";
  ASSERT_TRUE(first.release(at, 2 * kMiB).ok());
  ASSERT_TRUE(second.reserve(r, &again).ok());
  EXPECT_EQ(again, at);
  ASSERT_TRUE(second.release(at, 2 * kMiB).ok());
}

// A forked child's backend claims its windows where the parent's were (which, under a sanitizer,
// are wherever the kernel put them), not wherever the kernel puts them this time and not at the
// vendor's addresses. Two generations: the first gives its windows back and claims them again
// with their places taken (so they land elsewhere); its child must land there too, although the
// first places are free again.
TEST(EmuWindows, AForkedChildClaimsTheWindowsWhereItsParentHadThem) {
  const WindowLayout original = process_layout();
  const int status = in_child_without_windows([&] {
    const VaRange places[] = {original.host_pinned, original.managed, original.device};
    if (mapped_in(original.device) != 0) return 1;  // given back, with everything inside
    for (const VaRange& p : places) {
      void* hold = ::mmap(reinterpret_cast<void*>(p.base), p.size, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      if (hold != reinterpret_cast<void*>(p.base)) return 2;
    }
    testing::RecordingListener mine;
    EmuWindows moved(mine);
    // Its inherited places are taken: the kernel places it (and it says so).
    if (!moved.open().ok()) return 3;
    const WindowLayout elsewhere = moved.layout();
    if (any_place_shared(elsewhere, original) || !elsewhere.moved) return 4;
    return in_child_without_windows([&] {
      for (const VaRange& p : places) ::munmap(reinterpret_cast<void*>(p.base), p.size);
      testing::RecordingListener own;
      EmuWindows grandchild(own);
      if (!grandchild.open().ok()) return 5;
      return same_places(grandchild.layout(), elsewhere) ? 0 : 6;
    });
  });
  EXPECT_EQ(status, 0) << "1: not given back; 2: could not hold the places; 3/5: no claim; "
                          "4: not moved; 6: the grandchild claimed elsewhere";
  EXPECT_TRUE(same_places(process_layout(), original)) << "the parent's windows stay";
}

// A child forked while no backend was open (the runtime between aclFinalize and aclInit, or
// another thread inside its start's open) has no abandoned backend to call release_inherited on:
// its first open gives back the parent's windows itself, with the parent's reservations, and
// claims them again at their places. Before, it went on with the parent's record, every range
// the parent had taken still taken.
TEST(EmuWindows, AChildsFirstOpenGivesBackWhatNoBackendReleased) {
  testing::RecordingListener listener;
  EmuWindows parent(listener);
  ASSERT_TRUE(parent.open().ok());
  const WindowLayout original = parent.layout();
  ReserveRequest r;
  r.size = 2 * kMiB;
  r.alignment = 2 * kMiB;
  uint64_t taken = 0;
  ASSERT_TRUE(parent.reserve(r, &taken).ok());
  const int status = in_child([&] {
    testing::RecordingListener mine;
    EmuWindows fresh(mine);
    if (!fresh.open().ok()) return 1;
    if (!same_places(fresh.layout(), original)) return 2;
    ReserveRequest again = r;
    again.fixed_address = taken;
    uint64_t at = 0;
    if (!fresh.reserve(again, &at).ok() || at != taken) return 3;  // the parent's range is free
    return 0;
  });
  EXPECT_EQ(status, 0) << "1: no claim; 2: claimed elsewhere; 3: the parent's range still taken";
  ASSERT_TRUE(parent.release(taken, 2 * kMiB).ok());
}

// A claim refused by a rule (emu.window.claim, the legacy drv.claim_window) gives back the
// windows claimed before it: a later open claims them all at their places again.
TEST(EmuWindows, ARefusedClaimGivesBackTheWindowsBeforeIt) {
  const WindowLayout original = process_layout();
  const int status = in_child_without_windows([&] {
    testing::RecordingListener rules;
    rules.arm(steps::kEmuWindowClaim, 3, EPERM);  // the device window, after the other two
    EmuWindows refused(rules);
    if (!(refused.open() == Result::from_errno(EPERM))) return 1;
    if (mapped_in(original.host_pinned) != 0 || mapped_in(original.managed) != 0) return 2;
    rules.arm(steps::kEmuWindowClaim, 0, 0);
    EmuWindows again(rules);
    if (!again.open().ok()) return 3;
    return same_places(again.layout(), original) ? 0 : 4;
  });
  EXPECT_EQ(status, 0) << "1: not refused; 2: the first windows stayed; 3: no claim; "
                          "4: claimed elsewhere";
}

}  // namespace
}  // namespace aclvmm::dev::emu
