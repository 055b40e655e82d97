#include "drivers/emu/os/host_copy.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "drivers/emu/os/guarded_copy.h"
#include "drivers/emu/os/pattern.h"

// Copies run as a guarded memcpy (guarded_copy.h) when the fault handler is ours; otherwise
// process_vm_readv/writev on our own pid: the kernel copies with its user-access checks, so an
// unmapped or protected byte on either side is EFAULT rather than SIGSEGV in the caller.
namespace aclvmm::dev::emu::os {
namespace {

enum VmMode : int { kUnknown = 0, kAvailable = 1, kUnavailable = 2 };

// Seccomp profiles and old kernels may forbid the calls; then we copy directly and lose only the
// crash protection. Decided once: the answer does not change while the process runs.
std::atomic<int> g_vm_mode{kUnknown};

// Bounds one call so that a huge bogus length fails at the first bad page, not after pinning GiBs.
constexpr size_t kMaxChunk = size_t{1} << 30;
// Local entries that repeat the pattern buffer, so one fill call covers this many MiB.
constexpr int kFillIov = 64;

bool use_fallback(int err) {
  if ((err == ENOSYS || err == EPERM) && g_vm_mode.load(std::memory_order_relaxed) != kAvailable) {
    g_vm_mode.store(kUnavailable, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void mark_available() {
  if (g_vm_mode.load(std::memory_order_relaxed) == kUnknown)
    g_vm_mode.store(kAvailable, std::memory_order_relaxed);
}

bool unavailable() { return g_vm_mode.load(std::memory_order_relaxed) == kUnavailable; }

}  // namespace

int host_copy(void* dst, const void* src, size_t n) {
  if (n == 0) return 0;
  if (!dst || !src) return -EFAULT;
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  // A range that wraps around the address space cannot be valid (and would confuse memmove).
  if (reinterpret_cast<uintptr_t>(d) + n < reinterpret_cast<uintptr_t>(d) ||
      reinterpret_cast<uintptr_t>(s) + n < reinterpret_cast<uintptr_t>(s)) {
    return -EFAULT;
  }
  if (guard_available()) return guarded_copy(d, s, n);
  if (unavailable()) {
    std::memmove(d, s, n);
    return 0;
  }
  const pid_t self = ::getpid();
  while (n > 0) {
    const size_t chunk = std::min(n, kMaxChunk);
    struct iovec local = {d, chunk};
    struct iovec remote = {const_cast<uint8_t*>(s), chunk};
    ssize_t r = ::process_vm_readv(self, &local, 1, &remote, 1, 0);
    if (r < 0) {
      const int e = errno;
      if (e == EINTR) continue;
      if (use_fallback(e)) {
        std::memmove(d, s, n);
        return 0;
      }
      return -e;
    }
    if (r == 0) return -EFAULT;  // nothing movable at the first byte
    mark_available();
    d += r;
    s += r;
    n -= static_cast<size_t>(r);
  }
  return 0;
}

int host_fill(void* dst, uint8_t value, size_t n) {
  if (n == 0) return 0;
  if (!dst) return -EFAULT;
  auto* d = static_cast<uint8_t*>(dst);
  if (unavailable()) {
    std::memset(d, value, n);
    return 0;
  }
  const uint8_t* pattern = pattern_buffer(value, std::min(n, kPatternBytes));
  if (!pattern) return -ENOMEM;
  const pid_t self = ::getpid();
  struct iovec local[kFillIov];
  while (n > 0) {
    size_t total = 0;
    int count = 0;
    for (; count < kFillIov && total < n; ++count) {
      const size_t len = std::min(kPatternBytes, n - total);
      local[count] = {const_cast<uint8_t*>(pattern), len};
      total += len;
    }
    struct iovec remote = {d, total};
    ssize_t r = ::process_vm_writev(self, local, static_cast<unsigned long>(count), &remote, 1, 0);
    if (r < 0) {
      const int e = errno;
      if (e == EINTR) continue;
      if (use_fallback(e)) {
        std::memset(d, value, n);
        return 0;
      }
      return -e;
    }
    if (r == 0) return -EFAULT;
    mark_available();
    d += r;
    n -= static_cast<size_t>(r);
  }
  return 0;
}

}  // namespace aclvmm::dev::emu::os
