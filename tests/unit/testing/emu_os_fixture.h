// What the tests of emu's operating-system primitives (tests/unit/drivers/emu/os/) share: a
// fixture (EmuDriver) that makes memfd memory and claims windows, given back when the test ends;
// a child process that may die of a fault; a free address range.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "drivers/device_types.h"
#include "drivers/emu/os/host_copy.h"
#include "drivers/emu/os/memfd_memory.h"
#include "drivers/emu/os/numa_binding.h"
#include "drivers/emu/os/placeholders.h"
#include "drivers/emu/os/util.h"
#include "drivers/host/host_facts.h"
#include "unit/testing/fault_signals.h"

namespace aclvmm::dev::emu::os::fixture {

void* const kBadPtr = reinterpret_cast<void*>(0x10);

// A memfd-backed PhysicalMemory of `size` bytes (a failure is the test's).
inline std::shared_ptr<PhysicalMemory> make_memfd(uint64_t size) {
  std::shared_ptr<PhysicalMemory> m;
  EXPECT_EQ(MemfdMemory::create(size, &m), 0) << size;
  return m;
}

inline uint64_t page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }
inline uint8_t* ptr(uint64_t v) { return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(v)); }

// Runs fn in a forked child; returns the signal that killed it, or 0 when it exited.
inline int child_signal(const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    aclvmm::testing::reset_fault_signals_for_child();
    fn();
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

// A free, `align`-aligned address range of `size` bytes (free at the time of the call).
inline uint64_t free_range(uint64_t size, uint64_t align) {
  void* p = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return 0;
  munmap(p, size + align);
  uint64_t v = reinterpret_cast<uintptr_t>(p);
  return (v + align - 1) & ~(align - 1);
}

class EmuDriver : public ::testing::Test {
 protected:
  std::shared_ptr<PhysicalMemory> alloc(uint64_t size) {
    std::shared_ptr<PhysicalMemory> mem;
    EXPECT_EQ(MemfdMemory::create(size, &mem), 0);
    return mem;
  }
  // A claimed window, released when the test ends.
  uint64_t window(uint64_t size) {
    uint64_t base = 0;
    EXPECT_EQ(claim_window(0, size, 2 * kMiB, &base), 0);
    windows_.push_back({base, size});
    return base;
  }
  void TearDown() override {
    for (auto& w : windows_) EXPECT_EQ(release_window(w.first, w.second), 0);
  }
  std::vector<std::pair<uint64_t, uint64_t>> windows_;
};

}  // namespace aclvmm::dev::emu::os::fixture
