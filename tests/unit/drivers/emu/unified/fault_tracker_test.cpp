// Tests of the emu fault tracker against the real kernel: revoked pages block the CPU, faults are
// reported, resolve lets the CPU in with the bytes the "device" wrote meanwhile.
#include "drivers/emu/unified/fault_tracker.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "drivers/emu/os/host_copy.h"
#include "drivers/emu/os/memfd_memory.h"

namespace aclvmm::dev::emu {
namespace {

using os::MemfdMemory;
using os::PhysicalMemory;
using std::chrono::milliseconds;

constexpr uint64_t kHuge = 2 * kMiB;
constexpr uint64_t kSize = 4 * kMiB;

uint64_t page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }
uint8_t* ptr(uint64_t v) { return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(v)); }
uint8_t pattern(uint64_t i) { return static_cast<uint8_t>(i * 7 + 3); }

// Waits up to `limit` for `flag`; a blocked CPU access shows up as a flag that stays false.
bool wait_for(const std::atomic<bool>& flag, milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// A CPU thread touching one byte, through a volatile pointer so the access really happens.
struct Access {
  std::atomic<bool> done{false};
  std::atomic<int> value{-1};
};

// Owns the CPU threads of a test and releases them however the test ends: a failed assertion
// must not leave a thread blocked in a fault (the test binary would hang at exit). Unwatching
// first means no thread can block again after the wake-up.
class Releaser {
 public:
  Releaser(UffdFaultTracker& tracker, uint64_t va, uint64_t size)
      : tracker_(tracker), va_(va), size_(size) {}
  ~Releaser() {
    tracker_.unwatch(va_, size_);
    tracker_.resolve(va_, size_);
    for (auto& t : threads_) t.join();
  }
  void read(uint64_t va, Access* a) {
    threads_.emplace_back([va, a] {
      a->value = *reinterpret_cast<volatile uint8_t*>(ptr(va));
      a->done = true;
    });
  }
  void write(uint64_t va, uint8_t v, Access* a) {
    threads_.emplace_back([va, v, a] {
      *reinterpret_cast<volatile uint8_t*>(ptr(va)) = v;
      a->done = true;
    });
  }

 private:
  UffdFaultTracker& tracker_;
  uint64_t va_;
  uint64_t size_;
  std::vector<std::thread> threads_;
};

class EmuFaultTracker : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(tracker_.start(), 0);
    ASSERT_EQ(MemfdMemory::create(kSize, &mem_), 0);
    // Over-allocate so a 2 MiB-aligned piece fits, as the core's windows are.
    reservation_ = mmap(nullptr, kSize + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(reservation_, MAP_FAILED);
    base_ = (reinterpret_cast<uintptr_t>(reservation_) + kHuge - 1) & ~(kHuge - 1);
    ASSERT_EQ(
        mmap(ptr(base_), kSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem_->fd(), 0),
        ptr(base_));
    for (uint64_t i = 0; i < kSize; ++i) ptr(base_)[i] = pattern(i);
    ASSERT_EQ(tracker_.watch(base_, kSize), 0);
  }
  void TearDown() override {
    if (reservation_ != MAP_FAILED) munmap(reservation_, kSize + kHuge);
  }

  // The "device" writing behind the CPU's back, straight into the physical memory.
  void device_write(uint64_t offset, const char* text) {
    ASSERT_EQ(pwrite(mem_->fd(), text, strlen(text), static_cast<off_t>(offset)),
              static_cast<ssize_t>(strlen(text)));
  }

  // Expects exactly one fault for the page holding `va` within a second.
  void expect_fault(uint64_t va, bool write) {
    CpuFault f;
    ASSERT_EQ(tracker_.next_fault(1000, &f), 0);
    EXPECT_EQ(f.address & ~(page() - 1), va & ~(page() - 1));
    EXPECT_EQ(f.write, write);
  }

  UffdFaultTracker tracker_;
  std::shared_ptr<PhysicalMemory> mem_;
  void* reservation_ = MAP_FAILED;
  uint64_t base_ = 0;
};

TEST_F(EmuFaultTracker, ReadOfRevokedPageBlocksUntilResolved) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  const uint64_t off = 3 * page() + 17;
  device_write(off, "Z");
  Access a;
  rel.read(base_ + off, &a);
  expect_fault(base_ + off, false);
  EXPECT_FALSE(wait_for(a.done, milliseconds(50))) << "the reader was not blocked";
  ASSERT_EQ(tracker_.resolve(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), 'Z');
  // The rest of the page and of the revoked range kept their bytes.
  EXPECT_EQ(ptr(base_)[off - 1], pattern(off - 1));
  EXPECT_EQ(ptr(base_)[kHuge - 1], pattern(kHuge - 1));
  CpuFault f;
  EXPECT_EQ(tracker_.next_fault(50, &f), -ETIMEDOUT);
}

TEST_F(EmuFaultTracker, WriteToRevokedPageReportsWrite) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  const uint64_t off = kHuge - 5;
  Access a;
  rel.write(base_ + off, 0xA5, &a);
  expect_fault(base_ + off, true);
  EXPECT_FALSE(wait_for(a.done, milliseconds(50)));
  ASSERT_EQ(tracker_.resolve(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  uint8_t b = 0;
  ASSERT_EQ(mem_->read(off, &b, 1), 0);
  EXPECT_EQ(b, 0xA5);
}

TEST_F(EmuFaultTracker, SeveralThreadsOnOnePageAreReleasedByOneResolve) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  Access a, b;
  rel.read(base_ + 100, &a);
  rel.read(base_ + 200, &b);
  expect_fault(base_, false);
  expect_fault(base_, false);
  ASSERT_EQ(tracker_.resolve(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  ASSERT_TRUE(wait_for(b.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), pattern(100));
  EXPECT_EQ(b.value.load(), pattern(200));
}

TEST_F(EmuFaultTracker, RangeNotRevokedDoesNotFault) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  Access r, w;
  rel.read(base_ + kHuge + 4096 + 1, &r);
  rel.write(base_ + kSize - 1, 0x5A, &w);
  EXPECT_TRUE(wait_for(r.done, milliseconds(5000)));
  EXPECT_TRUE(wait_for(w.done, milliseconds(5000)));
  EXPECT_EQ(r.value.load(), pattern(kHuge + 4096 + 1));
  CpuFault f;
  EXPECT_EQ(tracker_.next_fault(100, &f), -ETIMEDOUT);
}

TEST_F(EmuFaultTracker, ResolveOfMappedOrUnbackedRangeSucceeds) {
  Releaser rel(tracker_, base_, kSize);
  // Every page mapped: each CONTINUE reports EEXIST.
  EXPECT_EQ(tracker_.resolve(base_, kSize), 0);
  // Half revoked, half mapped.
  ASSERT_EQ(tracker_.revoke(base_ + kMiB, kHuge), 0);
  EXPECT_EQ(tracker_.resolve(base_, kSize), 0);
  Access a;
  rel.read(base_ + 2 * kMiB + 1, &a);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), pattern(2 * kMiB + 1));
  CpuFault f;
  EXPECT_EQ(tracker_.next_fault(0, &f), -ETIMEDOUT);
  // Pages that are not in the page cache at all: each CONTINUE fails (EFAULT).
  ASSERT_EQ(mem_->fill(0, 0, kHuge), 0);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  EXPECT_EQ(tracker_.resolve(base_, kHuge), 0);
  Access z;
  rel.read(base_ + 5, &z);
  ASSERT_TRUE(wait_for(z.done, milliseconds(5000)));
  EXPECT_EQ(z.value.load(), 0);
  EXPECT_EQ(tracker_.next_fault(0, &f), -ETIMEDOUT);
}

TEST_F(EmuFaultTracker, WaiterOnPageThatLeftThePageCacheIsWoken) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  Access a;
  rel.read(base_ + page() + 9, &a);
  expect_fault(base_ + page(), false);
  // The device zeroes the page by punching a hole: there is nothing left to map.
  ASSERT_EQ(mem_->fill(page(), 0, page()), 0);
  EXPECT_EQ(tracker_.resolve(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), 0);
  EXPECT_EQ(ptr(base_)[0], pattern(0));
}

TEST_F(EmuFaultTracker, UnwatchedRangeFaultsNormally) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.unwatch(base_, kSize), 0);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  device_write(10, "Q");
  Access a;
  rel.read(base_ + 10, &a);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), 'Q');
  EXPECT_EQ(ptr(base_)[11], pattern(11));
  CpuFault f;
  EXPECT_EQ(tracker_.next_fault(50, &f), -ETIMEDOUT);
}

TEST_F(EmuFaultTracker, UnwatchWakesBlockedThread) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  Access a;
  rel.read(base_ + 42, &a);
  expect_fault(base_, false);
  EXPECT_FALSE(wait_for(a.done, milliseconds(50)));
  ASSERT_EQ(tracker_.unwatch(base_, kSize), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), pattern(42));
}

TEST_F(EmuFaultTracker, ResolveWakesThreadAfterRangeWasRemapped) {
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  Access a;
  rel.read(base_ + 7, &a);
  expect_fault(base_, false);
  // A new mapping of the same bytes: not registered, and the kernel wakes nobody for it.
  ASSERT_EQ(mmap(ptr(base_), kHuge, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem_->fd(), 0),
            ptr(base_));
  EXPECT_EQ(tracker_.resolve(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), pattern(7));
}

TEST_F(EmuFaultTracker, ClosingTheTrackerReleasesBlockedThreads) {
  Releaser rel(tracker_, base_, kSize);  // declared first: joins after `own` is gone
  auto own = std::make_unique<UffdFaultTracker>();
  ASSERT_EQ(own->start(), 0);
  ASSERT_EQ(tracker_.unwatch(base_, kSize), 0);
  ASSERT_EQ(own->watch(base_, kSize), 0);
  ASSERT_EQ(own->revoke(base_, kHuge), 0);
  Access a;
  rel.read(base_ + 3, &a);
  CpuFault f;
  ASSERT_EQ(own->next_fault(1000, &f), 0);
  own.reset();
  ASSERT_TRUE(wait_for(a.done, milliseconds(5000)));
  EXPECT_EQ(a.value.load(), pattern(3));
}

// A user-mode-only descriptor does not stop the kernel's own accesses: they fail instead.
TEST_F(EmuFaultTracker, KernelAccessToRevokedPageFailsWhenUserModeOnly) {
  if (!tracker_.user_mode_only()) GTEST_SKIP() << "kernel accesses would block instead";
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  uint8_t buf[16] = {};
  EXPECT_EQ(os::host_copy(buf, ptr(base_), sizeof buf), -EFAULT);
  EXPECT_EQ(mem_->read(0, ptr(base_), 1), -EFAULT);
  CpuFault f;
  EXPECT_EQ(tracker_.next_fault(0, &f), -ETIMEDOUT);
  ASSERT_EQ(tracker_.resolve(base_, kHuge), 0);
  EXPECT_EQ(os::host_copy(buf, ptr(base_), sizeof buf), 0);
  EXPECT_EQ(buf[1], pattern(1));
}

TEST_F(EmuFaultTracker, NextFaultTimesOut) {
  CpuFault f;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(tracker_.next_fault(100, &f), -ETIMEDOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(100));
  EXPECT_EQ(tracker_.next_fault(0, &f), -ETIMEDOUT);
  EXPECT_EQ(tracker_.next_fault(0, nullptr), -EINVAL);
}

TEST_F(EmuFaultTracker, BadRangesAreRejected) {
  EXPECT_EQ(tracker_.watch(base_ + 1, page()), -EINVAL);
  EXPECT_EQ(tracker_.watch(base_, 0), -EINVAL);
  EXPECT_EQ(tracker_.revoke(base_, page() + 1), -EINVAL);
  EXPECT_EQ(tracker_.resolve(base_ + 1, page()), -EINVAL);
  EXPECT_EQ(tracker_.unwatch(base_, 0), -EINVAL);
  // Minor faults exist only for shared memory: the anonymous placeholder cannot be watched.
  const uint64_t head = reinterpret_cast<uintptr_t>(reservation_);
  const uint64_t anon = head != base_ ? head : base_ + kSize;
  EXPECT_EQ(tracker_.watch(anon, page()), -EINVAL);
}

// Write tracking: reads of a protected page go on, the first write blocks and is reported as a
// write-protect fault, and allow_writes lets it land.
TEST_F(EmuFaultTracker, ProtectedPageIsReadFreelyAndWritesBlock) {
  if (!tracker_.tracks_writes()) GTEST_SKIP() << "no write-protection on shmem here";
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.protect_writes(base_, kHuge), 0);
  const uint64_t off = 7 * page() + 3;
  Access r;
  rel.read(base_ + off, &r);
  ASSERT_TRUE(wait_for(r.done, milliseconds(5000))) << "a read of a protected page blocked";
  EXPECT_EQ(r.value.load(), pattern(off));
  Access w;
  rel.write(base_ + off, 0x5C, &w);
  CpuFault f;
  ASSERT_EQ(tracker_.next_fault(1000, &f), 0);
  EXPECT_EQ(f.address & ~(page() - 1), (base_ + off) & ~(page() - 1));
  EXPECT_TRUE(f.write);
  EXPECT_TRUE(f.write_protect);
  EXPECT_FALSE(wait_for(w.done, milliseconds(50))) << "the writer was not blocked";
  ASSERT_EQ(tracker_.allow_writes(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(w.done, milliseconds(5000)));
  EXPECT_EQ(ptr(base_)[off], 0x5C);
  // The second 2 MiB page was never protected.
  ptr(base_)[kHuge + 1] = 1;
  EXPECT_EQ(tracker_.next_fault(50, &f), -ETIMEDOUT);
}

// A revoked page handed back read-only: the reader gets the device's bytes and the next write
// is still caught.
TEST_F(EmuFaultTracker, ResolveReadOnlyKeepsWritesProtected) {
  if (!tracker_.tracks_writes()) GTEST_SKIP() << "no write-protection on shmem here";
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kHuge), 0);
  device_write(page(), "R");
  Access r;
  rel.read(base_ + page(), &r);
  expect_fault(base_ + page(), false);
  ASSERT_EQ(tracker_.resolve_read_only(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(r.done, milliseconds(5000)));
  EXPECT_EQ(r.value.load(), 'R');
  Access w;
  rel.write(base_ + 2 * page(), 0x11, &w);
  CpuFault f;
  ASSERT_EQ(tracker_.next_fault(1000, &f), 0);
  EXPECT_TRUE(f.write_protect);
  ASSERT_EQ(tracker_.allow_writes(base_, kHuge), 0);
  ASSERT_TRUE(wait_for(w.done, milliseconds(5000)));
  EXPECT_EQ(ptr(base_)[2 * page()], 0x11);
}

// Unwatching a protected range lets a blocked writer through (the protection goes with it).
TEST_F(EmuFaultTracker, UnwatchReleasesABlockedWriter) {
  if (!tracker_.tracks_writes()) GTEST_SKIP() << "no write-protection on shmem here";
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.protect_writes(base_, kHuge), 0);
  Access w;
  rel.write(base_ + 9, 0x77, &w);
  CpuFault f;
  ASSERT_EQ(tracker_.next_fault(1000, &f), 0);
  ASSERT_EQ(tracker_.unwatch(base_, kSize), 0);
  ASSERT_TRUE(wait_for(w.done, milliseconds(5000)));
  EXPECT_EQ(ptr(base_)[9], 0x77);
}

TEST(EmuFaultTrackerStart, IdempotentAndThreadSafe) {
  UffdFaultTracker t;
  EXPECT_FALSE(t.started());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (t.start() != 0) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(t.started());
  EXPECT_EQ(t.start(), 0);
}

TEST(EmuFaultTrackerStart, NotStartedRefusesEverything) {
  UffdFaultTracker t;
  CpuFault f;
  EXPECT_EQ(t.watch(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.unwatch(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.revoke(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.resolve(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.next_fault(0, &f), -EBADF);
  EXPECT_EQ(t.protect_writes(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.allow_writes(0x200000, 4096), -EBADF);
  EXPECT_EQ(t.resolve_read_only(0x200000, 4096), -EBADF);
}

TEST(EmuFaultTrackerPopulate, AllocatesAndKeepsBytes) {
  std::shared_ptr<PhysicalMemory> mem;
  ASSERT_EQ(MemfdMemory::create(kSize, &mem), 0);
  ASSERT_EQ(mem->write(page() + 5, "abc", 3), 0);
  struct stat before, after;
  ASSERT_EQ(fstat(mem->fd(), &before), 0);
  ASSERT_EQ(mem->populate(0, kHuge), 0);
  ASSERT_EQ(fstat(mem->fd(), &after), 0);
  EXPECT_GE(after.st_blocks - before.st_blocks, static_cast<blkcnt_t>((kHuge - page()) / 512));
  EXPECT_EQ(after.st_size, static_cast<off_t>(kSize));
  char got[3] = {};
  ASSERT_EQ(mem->read(page() + 5, got, 3), 0);
  EXPECT_EQ(memcmp(got, "abc", 3), 0);
  uint8_t z = 1;
  ASSERT_EQ(mem->read(kHuge - 1, &z, 1), 0);
  EXPECT_EQ(z, 0);
  EXPECT_EQ(mem->populate(0, 0), 0);
  EXPECT_EQ(mem->populate(kSize, 0), 0);
  EXPECT_EQ(mem->populate(kSize - page(), 2 * page()), -EINVAL);
  EXPECT_EQ(mem->populate(kSize + 1, 0), -EINVAL);
}

}  // namespace
}  // namespace aclvmm::dev::emu

namespace aclvmm::dev::emu {
namespace {

// Threads of this process other than the caller that are asleep ('S' or 'D' in their stat): a
// thread blocked in a fault sleeps, one on its way to the fault runs.
int sleeping_threads() {
  int n = 0;
  const std::string self = std::to_string(gettid());
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || self == e->d_name) continue;
    char stat[512] = {};
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/stat";
    FILE* f = std::fopen(path.c_str(), "re");
    if (f == nullptr) continue;
    const size_t got = std::fread(stat, 1, sizeof stat - 1, f);
    std::fclose(f);
    const char* state = std::strrchr(stat, ')');
    if (got > 0 && state != nullptr && (state[2] == 'S' || state[2] == 'D')) ++n;
  }
  closedir(d);
  return n;
}

// Faults pending together come out of one read (UVM's batches): eight threads blocked on eight
// revoked pages give one batch of eight; a smaller `max` takes that many and leaves the rest for
// the next read.
TEST_F(EmuFaultTracker, PendingFaultsComeOutOfOneRead) {
  constexpr int kThreads = 8;
  Releaser rel(tracker_, base_, kSize);
  ASSERT_EQ(tracker_.revoke(base_, kSize), 0);
  Access a[kThreads];
  for (int i = 0; i < kThreads; ++i)
    rel.read(base_ + static_cast<uint64_t>(i) * 64 * page(), &a[i]);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sleeping_threads() < kThreads && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_EQ(sleeping_threads(), kThreads) << "the threads did not all block in their faults";
  CpuFault f[16];
  ASSERT_EQ(tracker_.next_faults(1000, f, 3), 3);
  ASSERT_EQ(tracker_.next_faults(1000, f + 3, 16), kThreads - 3) << "the rest in one read";
  std::set<uint64_t> pages;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_FALSE(f[i].write);
    pages.insert(f[i].address & ~(page() - 1));
  }
  EXPECT_EQ(pages.size(), static_cast<size_t>(kThreads)) << "one fault per thread";
  EXPECT_EQ(tracker_.next_faults(50, f, 16), -ETIMEDOUT);
  EXPECT_EQ(tracker_.next_faults(0, f, 0), -EINVAL);
  ASSERT_EQ(tracker_.resolve(base_, kSize), 0);
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(wait_for(a[i].done, milliseconds(5000)));
    EXPECT_EQ(a[i].value.load(), pattern(static_cast<uint64_t>(i) * 64 * page()));
  }
}

}  // namespace
}  // namespace aclvmm::dev::emu
