// Conformance of AddressWindows (docs/device-interface.md §9, C5-C8, C47): the layout, device
// reservations (first fit and fixed addresses), exhaustion, no-UC reservations, and a forked
// child's release of the windows it inherited (emu: the only backend with processes).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "unit/testing/fork_settle.h"
#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::kGiB;
using dev::kMiB;
using dev::ReserveKind;
using dev::ReserveRequest;
using dev::Result;
using dev::VaRange;

constexpr uint64_t kTiB = uint64_t{1} << 40;

ReserveRequest device(uint64_t size, uint64_t fixed = 0) {
  ReserveRequest r;
  r.size = size;
  r.alignment = size > 512 * kMiB ? kGiB : 2 * kMiB;
  r.fixed_address = fixed;
  return r;
}

ReserveRequest no_uc(uint64_t at, uint64_t size) {
  ReserveRequest r;
  r.kind = ReserveKind::kNoUc;
  r.size = size;
  r.alignment = kGiB;
  r.fixed_address = at;
  return r;
}

bool overlap(VaRange a, VaRange b) { return a.base < b.base + b.size && b.base < a.base + a.size; }

class WindowsConformance : public BackendTest {
 protected:
  const dev::WindowLayout& layout() { return be().windows().layout(); }
  uint64_t reserve(const ReserveRequest& r) {
    uint64_t at = 0;
    const Result result = be().windows().reserve(r, &at);
    EXPECT_TRUE(result.ok()) << "reserve of " << r.size << ": errno " << result.errno_value();
    return result.ok() ? at : 0;
  }
  void release(uint64_t at, uint64_t size) {
    const Result result = be().windows().release(at, size);
    EXPECT_TRUE(result.ok()) << "release at 0x" << std::hex << at << ": errno " << std::dec
                             << result.errno_value();
  }
};

// C5: disjoint windows of whole GiB, the general part inside the device window, the no-UC range
// after it; at the vendor's addresses (behavior.md §4) unless the backend says they moved.
TEST_P(WindowsConformance, C5_LayoutIsDisjointWholeGibsAtTheVendorsAddresses) {
  const dev::WindowLayout& l = layout();
  const VaRange windows[] = {l.host_pinned, l.managed, l.device, l.no_uc};
  for (const VaRange& w : windows) {
    EXPECT_GT(w.size, 0u);
    EXPECT_EQ(w.base % kGiB, 0u) << std::hex << w.base;
    EXPECT_EQ(w.size % kGiB, 0u) << std::hex << w.size;
  }
  // A moved window (the kernel placed it: ASan) may lie in the no-UC range; a no-UC reservation
  // there is then refused as taken.
  const size_t checked = l.moved ? 3 : 4;
  for (size_t i = 0; i < checked; ++i) {
    for (size_t j = i + 1; j < checked; ++j) {
      EXPECT_FALSE(overlap(windows[i], windows[j])) << i << " " << j;
    }
  }
  EXPECT_GT(l.device_general.size, 0u);
  EXPECT_GE(l.device_general.base, l.device.base);
  EXPECT_EQ(l.device_general.base + l.device_general.size, l.device.base + l.device.size);
  EXPECT_EQ(l.device_general.base % kGiB, 0u);
  if (!l.moved) {
    EXPECT_EQ(l.host_pinned.base, 0x70000000000ull);
    EXPECT_EQ(l.host_pinned.size, 1 * kTiB);
    EXPECT_EQ(l.managed.base, 0x90000000000ull);
    EXPECT_EQ(l.managed.size, 3 * kTiB);
    EXPECT_EQ(l.device.base, 0x100000000000ull);
    EXPECT_EQ(l.device.size, 8 * kTiB);
    EXPECT_EQ(l.device_general.base, 0x12C000000000ull);
  }
  EXPECT_EQ(l.no_uc.base, 0x180000000000ull);
  EXPECT_EQ(l.no_uc.base + l.no_uc.size, 0x800000000000ull);
}

// C6: reservations of 2 MiB ... 1 GiB are aligned, inside the general part and never overlap;
// each can be released and reserved again at the same fixed address.
TEST_P(WindowsConformance, C6_ReservationsAreAlignedDisjointAndReusableAtTheirAddress) {
  const VaRange general = layout().device_general;
  std::vector<VaRange> taken;
  for (uint64_t size : {2 * kMiB, 4 * kMiB, 64 * kMiB, 512 * kMiB, 1 * kGiB, 2 * kMiB}) {
    SCOPED_TRACE(::testing::Message() << size << " bytes");
    const uint64_t at = reserve(device(size));
    ASSERT_NE(at, 0u);
    EXPECT_EQ(at % device(size).alignment, 0u) << std::hex << at;
    EXPECT_TRUE(general.contains(at) && general.contains(at + size - 1)) << std::hex << at;
    for (const VaRange& other : taken) EXPECT_FALSE(overlap(other, VaRange{at, size}));
    taken.push_back(VaRange{at, size});
  }
  for (const VaRange& r : taken) {
    SCOPED_TRACE(::testing::Message() << r.size << " bytes at 0x" << std::hex << r.base);
    release(r.base, r.size);
    EXPECT_EQ(reserve(device(r.size, r.base)), r.base);
  }
  for (const VaRange& r : taken) release(r.base, r.size);
}

// C7: a taken fixed address is kBusy, more than the window holds is kOutOfMemory; neither leaves
// anything reserved (the same first fit and the same fixed address work afterwards).
TEST_P(WindowsConformance, C7_TakenIsBusyFullIsOutOfMemoryAndNothingStays) {
  const uint64_t first = reserve(device(2 * kMiB));
  ASSERT_NE(first, 0u);
  uint64_t at = 0;
  EXPECT_EQ(be().windows().reserve(device(2 * kMiB, first), &at).condition(), Condition::kBusy);
  EXPECT_EQ(be().windows().reserve(device(4 * kMiB, first), &at).condition(), Condition::kBusy)
      << "a range that begins on a reservation";
  const uint64_t too_much = (layout().device_general.size / kGiB + 1) * kGiB;
  EXPECT_EQ(be().windows().reserve(device(too_much), &at).condition(), Condition::kOutOfMemory);
  release(first, 2 * kMiB);
  EXPECT_EQ(reserve(device(2 * kMiB)), first) << "a refusal took part of the window";
  release(first, 2 * kMiB);
  EXPECT_EQ(reserve(device(2 * kMiB, first)), first);
  release(first, 2 * kMiB);
}

// C8: a no-UC reservation is exactly at its fixed address; taken (also in part) is kBusy; after
// its release the address can be had again.
TEST_P(WindowsConformance, C8_NoUcIsAtItsFixedAddressAndTakenIsBusy) {
  const uint64_t at = layout().no_uc.base + 64 * kGiB;
  EXPECT_EQ(reserve(no_uc(at, kGiB)), at);
  uint64_t out = 0;
  EXPECT_EQ(be().windows().reserve(no_uc(at, kGiB), &out).condition(), Condition::kBusy);
  EXPECT_EQ(be().windows().reserve(no_uc(at - kGiB, 2 * kGiB), &out).condition(),
            Condition::kBusy)
      << "a range that ends on the reservation";
  EXPECT_EQ(reserve(no_uc(at + kGiB, kGiB)), at + kGiB) << "its neighbour is free";
  release(at + kGiB, kGiB);
  release(at, kGiB);
  EXPECT_EQ(reserve(no_uc(at - kGiB, 2 * kGiB)), at - kGiB);
  release(at - kGiB, 2 * kGiB);
}

// The lines of /proc/self/maps that overlap `range`.
std::vector<std::string> maps_in(VaRange range) {
  std::vector<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    if (overlap(range, VaRange{start, end - start})) out.push_back(line);
  }
  return out;
}

// C47: a forked child's release_inherited gives back every window and no-UC range it inherited
// (nothing of the parent's is left in its address space), and its new backend claims the windows
// where the parent had them, with none of the parent's reservations.
TEST_P(WindowsConformance, C47_AForkedChildGivesTheParentsWindowsBack) {
  if (std::string(be().name()) != "emu") {
    GTEST_SKIP() << "only emu claims its windows itself (the fake is one object in one process; "
                    "hal's windows are the driver's, hal.md §6.1)";
  }
  const dev::WindowLayout parent = layout();
  const uint64_t reserved = reserve(device(2 * kMiB));
  // A GiB of the no-UC range outside every window (a moved window may lie in it).
  uint64_t fixed = parent.no_uc.base + 96 * kGiB;
  while (overlap(VaRange{fixed, kGiB}, parent.host_pinned) ||
         overlap(VaRange{fixed, kGiB}, parent.managed) || overlap(VaRange{fixed, kGiB}, parent.device)) {
    fixed += kGiB;
  }
  ASSERT_EQ(reserve(no_uc(fixed, kGiB)), fixed);
  ASSERT_FALSE(maps_in(VaRange{fixed, kGiB}).empty()) << "a no-UC range is a placeholder";
  aclvmm_test::settle_threads_before_fork();
  be().prepare_fork();
  const pid_t child = ::fork();
  if (child == 0) {
    be().after_fork_child();
    be().release_inherited();
    int failed = 0;
    for (const VaRange& w : {parent.host_pinned, parent.managed, parent.device, VaRange{fixed, kGiB}}) {
      if (!maps_in(w).empty()) failed |= 1;
    }
    std::unique_ptr<dev::DeviceBackend> fresh;
    testing::RecordingListener listener;
    if (!harness().open(setup(), &listener, &fresh).ok()) {
      failed |= 2;
    } else {
      const dev::WindowLayout& l = fresh->windows().layout();
      if (l.host_pinned.base != parent.host_pinned.base || l.managed.base != parent.managed.base ||
          l.device.base != parent.device.base || l.device.size != parent.device.size) {
        failed |= 4;
      }
      uint64_t at = 0;
      if (!fresh->windows().reserve(device(2 * kMiB, reserved), &at).ok()) failed |= 8;
      if (!fresh->windows().reserve(no_uc(fixed, kGiB), &at).ok()) failed |= 16;
    }
    ::_exit(failed);
  }
  be().after_fork_parent();
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: a window or no-UC range was left; 2: no new backend; 4: windows elsewhere; "
         "8: the parent's reservation was inherited; 16: its no-UC range was";
  EXPECT_FALSE(maps_in(VaRange{fixed, kGiB}).empty()) << "the parent keeps its own";
  release(fixed, kGiB);
  release(reserved, 2 * kMiB);
}

}  // namespace

ACLVMM_CONFORMANCE_SUITE(WindowsConformance);

}  // namespace aclvmm::conformance
