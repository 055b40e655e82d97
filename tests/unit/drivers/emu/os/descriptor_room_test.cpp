// Tests of os/descriptor_room.h against the real kernel: beyond a small budget, descriptors that
// device memory holds go at or above the soft RLIMIT_NOFILE, which is the application's again
// afterwards, so its own range stays free; without room above they stay where the kernel put
// them. (ctest runs each test in a process of its own: the budget starts unused.)
#include "drivers/emu/os/descriptor_room.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "drivers/emu/os/memfd_memory.h"

namespace aclvmm::dev::emu::os {
namespace {

// A small application range (above the budget), so that the test needs few descriptors.
constexpr rlim_t kSoft = 96;
constexpr int kHeld = 200;  // more than the whole range

int make_memfd() {
  const int fd = memfd_create("descriptor-room-test", MFD_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

// Runs with the soft limit lowered to kSoft (the hard limit kept) and restores it.
class DescriptorRoom : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < kSoft + kHeld + 64) {
      GTEST_SKIP() << "the hard RLIMIT_NOFILE leaves no room above " << kSoft;
    }
    rlimit low = saved_;
    low.rlim_cur = kSoft;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    lowered_ = true;
  }
  void TearDown() override {
    for (int fd : held_) close(fd);
    if (lowered_) {
      EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &saved_), 0);
    }
  }
  static rlim_t soft_now() {
    rlimit now{};
    EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
    return now.rlim_cur;
  }

  rlimit saved_{};
  bool lowered_ = false;
  std::vector<int> held_;
};

TEST_F(DescriptorRoom, HeldDescriptorsLeaveTheApplicationsRangeFree) {
  ASSERT_TRUE(placement_enabled());
  for (int i = 0; i < kHeld; ++i) {
    const int fd = open_held(make_memfd, nullptr);
    ASSERT_GE(fd, static_cast<int>(kSoft)) << "held descriptor " << i;
    EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC) << "moved descriptors stay close-on-exec";
    held_.push_back(fd);
  }
  EXPECT_EQ(soft_now(), kSoft) << "the window gave the soft limit back";
  // The application's own files: the range below the soft limit is as free as before.
  std::vector<int> own;
  for (;;) {
    const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      EXPECT_EQ(errno, EMFILE);
      break;
    }
    EXPECT_LT(fd, static_cast<int>(kSoft));
    own.push_back(fd);
  }
  EXPECT_GE(own.size() + 16, static_cast<size_t>(kSoft)) << "held descriptors took its room";
  // And a held descriptor can still be made with the application's range full.
  const int extra = open_held(make_memfd, nullptr);
  EXPECT_GE(extra, static_cast<int>(kSoft));
  if (extra >= 0) held_.push_back(extra);
  for (int fd : own) close(fd);
}

TEST_F(DescriptorRoom, PlacedDescriptorsMoveAndKeepTheirFile) {
  const int fd = make_memfd();
  ASSERT_GE(fd, 0);
  ASSERT_LT(fd, static_cast<int>(kSoft));
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(pwrite(fd, "held", 4, 0), 4);
  const int moved = place_held(fd, nullptr);
  ASSERT_GE(moved, static_cast<int>(kSoft));
  held_.push_back(moved);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the old number is closed";
  char got[4] = {};
  ASSERT_EQ(pread(moved, got, 4, 0), 4);
  EXPECT_EQ(std::string(got, 4), "held");
  EXPECT_EQ(place_held(moved, nullptr), moved) << "a descriptor above the soft limit stays";
  EXPECT_EQ(soft_now(), kSoft);
  EXPECT_EQ(place_held(-1, nullptr), -1);
  // open's failure comes back as it was, and takes no place of the budget.
  bool budgeted = true;
  EXPECT_EQ(open_held([] { return -EACCES; }, nullptr), -EACCES);
  EXPECT_EQ(open_held([] { return -EACCES; }, &budgeted), -EACCES);
  EXPECT_FALSE(budgeted);
}

// The budget: the first kLowBudget budgeted descriptors stay where the kernel put them, the next
// ones move; a released place is taken again without moving.
TEST_F(DescriptorRoom, TheFirstBudgetedDescriptorsStayLow) {
  ASSERT_LT(kLowBudget + 8, kHeld);
  std::vector<bool> counted;
  for (int i = 0; i < kLowBudget + 8; ++i) {
    bool budgeted = false;
    const int fd = open_held(make_memfd, &budgeted);
    ASSERT_GE(fd, 0);
    held_.push_back(fd);
    counted.push_back(budgeted);
    if (i < kLowBudget) {
      EXPECT_TRUE(budgeted) << i;
      EXPECT_LT(fd, static_cast<int>(kSoft)) << i;
    } else {
      EXPECT_FALSE(budgeted) << i;
      EXPECT_GE(fd, static_cast<int>(kSoft)) << i;
    }
  }
  close(held_.front());
  held_.erase(held_.begin());
  release_budgeted();
  bool budgeted = false;
  const int again = open_held(make_memfd, &budgeted);
  held_.push_back(again);
  EXPECT_TRUE(budgeted);
  EXPECT_LT(again, static_cast<int>(kSoft));
  for (bool c : counted) {
    if (c) release_budgeted();
  }
}

// Memory files: beyond the budget every one is held above the soft limit, and a freed one gives
// its place back.
TEST_F(DescriptorRoom, MemoryFilesBeyondTheBudgetAreHeldAboveTheSoftLimit) {
  std::vector<std::shared_ptr<PhysicalMemory>> mems(kHeld);
  int low = 0;
  for (auto& m : mems) {
    ASSERT_EQ(MemfdMemory::create(4096, &m), 0);
    low += m->fd() < static_cast<int>(kSoft);
  }
  EXPECT_EQ(low, kLowBudget);
  EXPECT_EQ(soft_now(), kSoft);
  mems.clear();  // every place back
  std::shared_ptr<PhysicalMemory> m;
  ASSERT_EQ(MemfdMemory::create(4096, &m), 0);
  EXPECT_LT(m->fd(), static_cast<int>(kSoft));
}

// Without room above the soft limit (hard == soft; in a child, since an unprivileged process
// cannot raise its hard limit again), descriptors stay where the kernel puts them and the
// limit is not touched.
TEST_F(DescriptorRoom, WithoutRoomDescriptorsStayLow) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit none{kSoft, kSoft};
    if (setrlimit(RLIMIT_NOFILE, &none) != 0) _exit(2);
    const int fd = open_held(make_memfd, nullptr);
    if (fd < 0 || fd >= static_cast<int>(kSoft)) _exit(3);
    rlimit now{};
    if (getrlimit(RLIMIT_NOFILE, &now) != 0 || now.rlim_cur != kSoft || now.rlim_max != kSoft) {
      _exit(4);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
