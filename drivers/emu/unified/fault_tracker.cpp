#include "drivers/emu/unified/fault_tracker.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "drivers/emu/os/util.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {
namespace {

// EAGAIN without progress means the address space is being changed under the call (only
// non-cooperative events do that, and none is requested); waiting a little is enough, and the
// bound only guarantees that a waiter gets woken instead of resolve() spinning forever.
constexpr int kMaxTries = 1000;

int open_uffd(bool* user_mode_only) {
  // Full mode first: then the kernel's own accesses to a revoked page (read(2) into managed
  // memory, say) wait for the fault thread like CPU accesses do, instead of failing with EFAULT.
  int fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd >= 0) return fd;
  const int syscall_err = errno;
  // Seccomp profiles often forbid the system call; the device node (Linux 6.1+) is governed by its file
  // permissions instead.
  int dev = ::open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
  if (dev >= 0) {
    fd = ::ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    ::close(dev);
    if (fd >= 0) return fd;
  }
  // User-mode-only is what an unprivileged process may create (vm.unprivileged_userfaultfd = 0);
  // kernels before 5.11 reject the flag. System calls touching a revoked page then fail.
  fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (fd >= 0) {
    *user_mode_only = true;
    return fd;
  }
  return -syscall_err;
}

// Sets (mode WP) or clears (mode 0) write-protection; EAGAIN means the address space changed
// under the call, as for CONTINUE.
int write_protect(int fd, uint64_t va, uint64_t size, uint64_t mode) {
  struct uffdio_writeprotect wp = {};
  wp.range.start = va;
  wp.range.len = size;
  wp.mode = mode;
  for (int tries = 0;; ++tries) {
    if (::ioctl(fd, UFFDIO_WRITEPROTECT, &wp) == 0) return 0;
    if ((errno != EAGAIN && errno != EINTR) || tries >= kMaxTries) return -errno;
    ::sched_yield();
  }
}

int wake(int fd, uint64_t start, uint64_t len) {
  struct uffdio_range range = {start, len};
  return ::ioctl(fd, UFFDIO_WAKE, &range) == 0 ? 0 : -errno;
}

// Maps [*cur, end) from the page cache. On failure *cur is the first page left unmapped; the kernel
// has already woken the waiters below it.
int continue_range(int fd, uint64_t* cur, uint64_t end, uint64_t mode) {
  int tries = 0;
  while (*cur < end) {
    struct uffdio_continue c = {};
    c.range.start = *cur;
    c.range.len = end - *cur;
    c.mode = mode;
    if (::ioctl(fd, UFFDIO_CONTINUE, &c) == 0) {
      *cur = end;
      return 0;
    }
    const int e = errno;
    if (c.mapped > 0) {  // partial progress is reported as EAGAIN
      *cur += static_cast<uint64_t>(c.mapped);
      tries = 0;
      continue;
    }
    if ((e == EAGAIN || e == EINTR) && ++tries < kMaxTries) {
      ::sched_yield();
      continue;
    }
    return -e;
  }
  return 0;
}

}  // namespace

UffdFaultTracker::~UffdFaultTracker() {
  const int fd = fd_.exchange(-1);
  if (fd >= 0) ::close(fd);
}

void UffdFaultTracker::stop() {
  std::lock_guard<std::mutex> lock(start_mu_);
  const int fd = fd_.exchange(-1);
  if (fd >= 0) ::close(fd);
}

void UffdFaultTracker::abandon() {
  // No start_mu_: a thread of the parent may have held it at fork. Closing the child's copy of the
  // descriptor neither unregisters nor wakes anything while the parent holds its own (and once the
  // parent has closed it, releasing what is left is what the parent asked for).
  const int fd = fd_.exchange(-1);
  if (fd >= 0) ::close(fd);
}

int UffdFaultTracker::start() {
  if (started()) return 0;
  if (int e = injected(dev::steps::kEmuCpuFaultStart)) return e;
  std::lock_guard<std::mutex> lock(start_mu_);
  if (started()) return 0;
  // Minor faults are required; write-protection on shmem is asked for too and dropped when the
  // kernel does not know it (EINVAL), which needs a new descriptor: UFFDIO_API is one-shot.
  int last_error = -EOPNOTSUPP;
  for (const bool with_writes : {true, false}) {
    bool user_only = false;
    const int fd = open_uffd(&user_only);
    if (fd < 0) return fd;
    struct uffdio_api api = {};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_MINOR_SHMEM;
    if (with_writes) api.features |= UFFD_FEATURE_WP_HUGETLBFS_SHMEM | UFFD_FEATURE_PAGEFAULT_FLAG_WP;
    if (::ioctl(fd, UFFDIO_API, &api) != 0) {
      const int e = errno;
      ::close(fd);
      last_error = e == EINVAL ? -EOPNOTSUPP : -e;
      if (e == EINVAL) continue;
      return last_error;
    }
    if (!(api.features & UFFD_FEATURE_MINOR_SHMEM) ||
        !(api.ioctls & (1ull << _UFFDIO_REGISTER))) {
      ::close(fd);
      return -EOPNOTSUPP;
    }
    user_mode_only_.store(user_only, std::memory_order_release);
    tracks_writes_.store(with_writes && (api.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM),
                         std::memory_order_release);
    fd_.store(fd, std::memory_order_release);
    return 0;
  }
  return last_error;
}

int UffdFaultTracker::watch(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultWatch)) return e;
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  struct uffdio_register reg = {};
  reg.range.start = va;
  reg.range.len = size;
  reg.mode = UFFDIO_REGISTER_MODE_MINOR;
  if (tracks_writes()) reg.mode |= UFFDIO_REGISTER_MODE_WP;
  if (::ioctl(fd, UFFDIO_REGISTER, &reg) != 0) return -errno;
  // The kernel lists the ioctls the registered mappings support; without CONTINUE no revoked page
  // could ever be handed back.
  const bool wp_ok = !tracks_writes() || (reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT));
  if (!(reg.ioctls & (1ull << _UFFDIO_CONTINUE)) || !wp_ok) {
    struct uffdio_range range = {va, size};
    (void)::ioctl(fd, UFFDIO_UNREGISTER, &range);
    return -EOPNOTSUPP;
  }
  return 0;
}

int UffdFaultTracker::unwatch(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultUnwatch)) return e;
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  struct uffdio_range range = {va, size};
  const int rc = ::ioctl(fd, UFFDIO_UNREGISTER, &range) == 0 ? 0 : -errno;
  // After the wake the waiters fault again on an unregistered mapping and get the page normally.
  const int woke = wake(fd, va, size);
  return rc != 0 ? rc : woke;
}

int UffdFaultTracker::revoke(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultRevoke)) return e;
  if (fd() < 0) return -EBADF;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  // On a shared file mapping this drops only the page-table entries; the page cache keeps the
  // bytes, which is what makes the next access a minor fault.
  return ::madvise(reinterpret_cast<void*>(static_cast<uintptr_t>(va)), size, MADV_DONTNEED) == 0
             ? 0
             : -errno;
}

int UffdFaultTracker::resolve(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultResolve)) return e;
  return resolve_unchecked(va, size);
}

int UffdFaultTracker::resolve_unchecked(uint64_t va, uint64_t size) {
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  const uint64_t end = va + size;
  uint64_t cur = va;
  if (continue_range(fd, &cur, end, 0) == 0) return 0;
  return resolve_pages(fd, cur, end, 0);
}

int UffdFaultTracker::resolve_read_only(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultResolveReadOnly)) return e;
  if (!tracks_writes()) return resolve_unchecked(va, size);
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  uint64_t cur = va;
  int rc = 0;
  if (continue_range(fd, &cur, va + size, UFFDIO_CONTINUE_MODE_DONTWAKE) != 0) {
    rc = resolve_pages(fd, cur, va + size, UFFDIO_CONTINUE_MODE_DONTWAKE);
  }
  const int protect = protect_unchecked(va, size);
  const int woke = wake(fd, va, size);
  return rc != 0 ? rc : protect != 0 ? protect : woke;
}

// One CONTINUE stops at the first page it cannot map: already mapped (EEXIST), outside a registered
// mapping or its range crossing into another mapping (ENOENT), not in the page cache (EFAULT: the
// kernel turns shmem's ENOENT into EFAULT there). Page by page, the rest still gets mapped, and
// every page that cannot be gets an explicit wake, since the kernel wakes only what it maps.
int UffdFaultTracker::resolve_pages(int fd, uint64_t va, uint64_t end, uint64_t mode) {
  const uint64_t page = os::page_size();
  int result = 0;
  uint64_t wake_begin = va;
  uint64_t wake_end = va;
  auto flush_wake = [&] {
    // DONTWAKE: the caller wakes the whole range itself once it is ready.
    if (wake_begin == wake_end || (mode & UFFDIO_CONTINUE_MODE_DONTWAKE)) return;
    const int rc = wake(fd, wake_begin, wake_end - wake_begin);
    if (rc != 0 && result == 0) result = rc;
  };
  for (uint64_t p = va; p < end; p += page) {
    uint64_t cur = p;
    const int rc = continue_range(fd, &cur, p + page, mode);
    if (rc == 0) continue;
    if (rc != -EEXIST && rc != -ENOENT && rc != -EFAULT && result == 0) result = rc;
    if (p != wake_end) {
      flush_wake();
      wake_begin = p;
    }
    wake_end = p + page;
  }
  flush_wake();
  return result;
}

int UffdFaultTracker::protect_writes(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultProtectWrites)) return e;
  return protect_unchecked(va, size);
}

int UffdFaultTracker::protect_unchecked(uint64_t va, uint64_t size) {
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!tracks_writes()) return -EOPNOTSUPP;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  return write_protect(fd, va, size, UFFDIO_WRITEPROTECT_MODE_WP);
}

int UffdFaultTracker::allow_writes(uint64_t va, uint64_t size) {
  if (int e = injected(dev::steps::kEmuCpuFaultAllowWrites)) return e;
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!tracks_writes()) return -EOPNOTSUPP;
  if (!os::valid_page_range(va, size)) return -EINVAL;
  const int rc = write_protect(fd, va, size, 0);  // mode 0 clears and wakes the writers
  // Unregistered or remapped meanwhile: nothing is protected any more, but a writer may still
  // be waiting.
  if (rc != 0) (void)wake(fd, va, size);
  return rc;
}

int UffdFaultTracker::next_fault(int timeout_ms, CpuFault* fault) {
  if (!fault) return -EINVAL;
  const int n = next_faults(timeout_ms, fault, 1);
  return n < 0 ? n : 0;
}

int UffdFaultTracker::next_faults(int timeout_ms, CpuFault* out, size_t max) {
  if (int e = injected(dev::steps::kEmuCpuFaultNext)) return e;
  const int fd = this->fd();
  if (fd < 0) return -EBADF;
  if (!out || max == 0) return -EINVAL;
  // One read takes as many pending messages as the buffer holds (the kernel waits only for the
  // first, and the descriptor is non-blocking anyway).
  constexpr size_t kMaxBatch = 64;
  if (max > kMaxBatch) max = kMaxBatch;
  struct uffd_msg msgs[kMaxBatch];
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  for (;;) {
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const auto left = deadline - Clock::now();
      // Rounded up: poll would otherwise return early and turn a short wait into a busy loop.
      const auto left_ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
      wait_ms = left_ms > 0 ? static_cast<int>(left_ms) : 0;
    }
    struct pollfd p = {fd, POLLIN, 0};
    const int n = ::poll(&p, 1, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) return -ETIMEDOUT;
    if (p.revents & POLLNVAL) return -EBADF;
    if (p.revents & POLLERR) return -EIO;
    const ssize_t got = ::read(fd, msgs, max * sizeof msgs[0]);
    if (got < 0) {
      // Another thread took the messages between poll and read.
      if (errno == EAGAIN || errno == EINTR) {
        if (timeout_ms >= 0 && Clock::now() >= deadline) return -ETIMEDOUT;
        continue;
      }
      return -errno;
    }
    if (got == 0 || got % static_cast<ssize_t>(sizeof msgs[0]) != 0) return -EIO;
    size_t faults = 0;
    for (size_t i = 0; i < static_cast<size_t>(got) / sizeof msgs[0]; ++i) {
      const struct uffd_msg& msg = msgs[i];
      if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
      CpuFault& f = out[faults++];
      f.address = msg.arg.pagefault.address;
      f.write = (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
      f.write_protect = (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) != 0;
    }
    if (faults > 0) return static_cast<int>(faults);
  }
}

}  // namespace aclvmm::dev::emu
