#include "drivers/emu/os/memfd_memory.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

#include "drivers/emu/os/descriptor_room.h"
#include "drivers/emu/os/host_copy.h"
#include "drivers/emu/os/memory_recycler.h"
#include "drivers/emu/os/pattern.h"
#include "drivers/emu/os/util.h"
#include "drivers/emu/sanitizers.h"

namespace aclvmm::dev::emu::os {
namespace {

constexpr uint64_t kMaxFileSize = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1; older libc headers lack it
#endif

// The seals of every physical memory: nobody, the owner included, can change its size (a shorter
// file turns accesses past the new end into SIGBUS in every process that maps it), and nobody can
// add seals (F_SEAL_WRITE / FUTURE_WRITE would deny the other processes their writes).
constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
constexpr int kWriteSeals = F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;

// The device of the kernel's internal shmem mount, where every memfd but a hugetlbfs one lives:
// learnt from the first memory that passed every check (only memfds take size seals), so that
// later ones with the same device need no fstatfs (one system call less per import).
std::atomic<uint64_t> g_shmem_dev{0};
std::atomic<bool> g_shmem_dev_known{false};

// 0 when `fd` is memory as create() makes it, holding exactly `size` bytes; else the adopt errno.
int check_received(int fd, uint64_t size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return -EMEDIUMTYPE;
  const bool shmem_dev = g_shmem_dev_known.load(std::memory_order_acquire) &&
                         g_shmem_dev.load(std::memory_order_relaxed) == st.st_dev;
  struct statfs fs;
  // shmem only: a hugetlbfs memfd could fault with SIGBUS when the huge page pool runs dry.
  if (!shmem_dev && (::fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC)) return -EMEDIUMTYPE;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) return -EACCES;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) return -EMEDIUMTYPE;  // not a memfd
  if ((seals & kSizeSeals) != kSizeSeals || (seals & kWriteSeals) != 0) return -EPERM;
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) != size) return -EINVAL;
  if (!shmem_dev) {
    // A tmpfs file that takes size seals is a memfd, on the internal mount (a file made by open()
    // starts with F_SEAL_SEAL and can never take them).
    g_shmem_dev.store(st.st_dev, std::memory_order_relaxed);
    g_shmem_dev_known.store(true, std::memory_order_release);
  }
  return 0;
}

// Below this a read goes straight to pread: the view's fixed cost (mincore, then the guard's
// handler check) is ~1 us, which pread's slower copy only makes up for from ~32 KiB on.
constexpr size_t kViewMinRead = 32 << 10;
// The same for writes (pwrite): the guard's handler check alone is two sigaction calls per copy,
// which made a 4 KiB H2D copy cost 0.7 us more than the D2H one (issue 19, perf: 32% of the time
// in sigaction).
constexpr size_t kViewMinWrite = kViewMinRead;

}  // namespace

int MemfdMemory::wrap(int fd, uint64_t size, bool budgeted, std::shared_ptr<PhysicalMemory>* out) {
  MemfdMemory* mem = new (std::nothrow) MemfdMemory(fd, size, budgeted);
  if (!mem) {
    ::close(fd);
    if (budgeted) release_budgeted();
    return -ENOMEM;
  }
  try {
    // release() deletes `mem` (closing fd) if the control block cannot be allocated.
    out->reset(mem, &MemfdMemory::release);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  return 0;
}

void MemfdMemory::release(MemfdMemory* m) {
  if (m->recyclable_ && !m->shared_.load(std::memory_order_acquire) && recycler::offer(m)) return;
  delete m;
}

int MemfdMemory::create(uint64_t size, std::shared_ptr<PhysicalMemory>* out, bool recyclable) {
  if (!out || size == 0 || size > kMaxFileSize) return -EINVAL;
  if (recyclable) {
    if (MemfdMemory* m = recycler::take(size)) {
      // Its bytes are the previous allocation's until written or zeroed.
      m->make_stale();
      try {
        out->reset(m, &MemfdMemory::release);
      } catch (const std::bad_alloc&) {
        return -ENOMEM;  // release() gave it back
      }
      return 0;
    }
  }
  // Every live allocation holds its descriptor, and applications keep thousands of handles:
  // they live above the application's soft limit (descriptor_room.h).
  bool budgeted = false;
  const int fd = open_held(
      [] {
        const int made = ::memfd_create("aclvmm-phys", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        return made >= 0 ? made : -errno;
      },
      &budgeted);
  if (fd < 0) return fd;
  // Only sets the length: shmem allocates pages on first touch, so the memory is sparse and
  // reads as zeros until written. Then the length is sealed for good.
  int rc;
  do {
    rc = ::ftruncate(fd, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) rc = ::fcntl(fd, F_ADD_SEALS, kSizeSeals);
  if (rc != 0) {
    int e = errno;
    ::close(fd);
    if (budgeted) release_budgeted();
    return -e;
  }
  if (int rc = wrap(fd, size, budgeted, out)) return rc;
  static_cast<MemfdMemory*>(out->get())->recyclable_ = recyclable;
  return 0;
}

int MemfdMemory::adopt(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out) {
  if (fd < 0) return -EBADF;
  if (!out || size == 0 || size > kMaxFileSize) {
    ::close(fd);
    return -EINVAL;
  }
  // The sender may be hostile: what it sends must not let it, or anyone, make this process's
  // accesses fault later.
  if (int rc = check_received(fd, size)) {
    ::close(fd);
    return rc;
  }
  // Held as long as the import lives: out of the application's range, as created memory is.
  bool budgeted = false;
  const int held = place_held(fd, &budgeted);
  return wrap(held, size, budgeted, out);
}

MemfdMemory::~MemfdMemory() {
  if (uint8_t* v = view_.load()) ::munmap(v, size_);
  if (fd_ >= 0) ::close(fd_);
  if (budgeted_) release_budgeted();
}

uint8_t* MemfdMemory::view() const {
#if defined(ACLVMM_TSAN)
  // Device memory is not process memory: two streams writing one buffer is the application's
  // race on the device, which ThreadSanitizer must not see as ours. pread/pwrite copy inside
  // the kernel, out of its sight.
  return nullptr;
#endif
  uint8_t* v = view_.load(std::memory_order_acquire);
  if (v || view_failed_.load(std::memory_order_relaxed)) return v;
  std::lock_guard<std::mutex> lock(view_mu_);
  v = view_.load(std::memory_order_relaxed);
  if (v || view_failed_.load(std::memory_order_relaxed)) return v;
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    view_failed_.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  v = static_cast<uint8_t*>(p);
  view_.store(v, std::memory_order_release);
  return v;
}

bool MemfdMemory::dense(const uint8_t* view, uint64_t offset, size_t n) const {
  if (n == 0) return true;
  // mincore on a shared file mapping reports the file's page cache, mapped here or not; a hole
  // (or a swapped-out page) reads as absent and sends the copy to pread. A page that vanishes
  // between this check and the copy (fill(0) from another thread) is allocated again by the
  // read; that is the only cost of the race.
  const uint64_t page = page_size();
  const uint64_t first = align_down(offset, page);
  const uint64_t end = align_up(offset + n, page);
  unsigned char vec[1024];
  for (uint64_t at = first; at < end;) {
    const uint64_t len = std::min<uint64_t>(end - at, sizeof vec * page);
    if (::mincore(const_cast<uint8_t*>(view) + at, len, vec) != 0) return false;
    for (uint64_t i = 0; i < len / page; ++i) {
      if (!(vec[i] & 1)) return false;
    }
    at += len;
  }
  return true;
}

int MemfdMemory::copy_to(uint64_t offset, PhysicalMemory& dst, uint64_t dst_offset,
                         size_t n) const {
  if (int rc = check_range(offset, n)) return rc;
  if (int rc = make_clean(offset + n)) return rc;
  uint8_t* v = n >= kViewMinRead ? view() : nullptr;
  if (v && dense(v, offset, n)) return dst.write(dst_offset, v + offset, n);
  // Small, sparse or no view: through a bounce buffer, one pread and one write per piece.
  uint8_t small[kViewMinRead];
  std::unique_ptr<uint8_t[]> large;
  uint8_t* buf = small;
  size_t piece = sizeof small;
  if (n > piece) {
    piece = 1 << 20;
    large.reset(new (std::nothrow) uint8_t[std::min<size_t>(n, piece)]);
    if (!large) return -ENOMEM;
    buf = large.get();
  }
  for (size_t done = 0; done < n;) {
    const size_t len = std::min(n - done, piece);
    if (int rc = read(offset + done, buf, len)) return rc;
    if (int rc = dst.write(dst_offset + done, buf, len)) return rc;
    done += len;
  }
  return 0;
}

int MemfdMemory::check_range(uint64_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset) return -EINVAL;
  return 0;
}

// Through the view with host_copy (a guarded memcpy), else pread/pwrite: either way the copy is
// checked, so a bad host buffer becomes EFAULT instead of a fault in this process.
int MemfdMemory::fd() const {
  (void)make_clean(size_);  // zeroing through the view or pwrite cannot fail on memory we hold
  return fd_;
}

int MemfdMemory::make_clean(uint64_t end) const {
  if (clean_until_.load(std::memory_order_acquire) >= end) return 0;
  std::lock_guard<std::mutex> lock(stale_mu_);
  const uint64_t clean = clean_until_.load(std::memory_order_relaxed);
  if (clean >= end) return 0;
  if (int rc = zero(clean, end - clean)) return rc;
  clean_until_.store(end, std::memory_order_release);
  return 0;
}

int MemfdMemory::zero(uint64_t offset, uint64_t n) const {
  if (n == 0) return 0;
  // Recycled memory keeps its view: zeroing through it writes pages that are already mapped,
  // at memset speed.
  if (uint8_t* v = view_.load(std::memory_order_acquire)) {
    std::memset(v + offset, 0, n);
    return 0;
  }
  const uint64_t page = page_size();
  const uint64_t hole_begin = align_up(offset, page);
  const uint64_t hole_end = align_down(offset + n, page);
  uint64_t edges[2][2] = {{offset, offset + n}, {offset + n, offset + n}};
  if (hole_begin < hole_end &&
      ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(hole_begin),
                  static_cast<off_t>(hole_end - hole_begin)) == 0) {
    edges[0][1] = hole_begin;
    edges[1][0] = hole_end;
  }
  static const uint8_t kZeros[64 << 10] = {};
  for (const auto& e : edges) {
    for (uint64_t at = e[0]; at < e[1];) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(e[1] - at, sizeof kZeros));
      const ssize_t r = ::pwrite(fd_, kZeros, len, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r < 0 ? -errno : -EIO;
      at += static_cast<uint64_t>(r);
    }
  }
  return 0;
}

template <typename Write>
int MemfdMemory::writing(uint64_t offset, uint64_t n, Write write) {
  if (clean_until_.load(std::memory_order_acquire) >= size_) return write();
  std::lock_guard<std::mutex> lock(stale_mu_);
  uint64_t clean = clean_until_.load(std::memory_order_relaxed);
  if (clean >= size_) return write();
  if (offset > clean) {
    // A gap between the clean part and this write would be left stale: zeroed first.
    if (int rc = zero(clean, offset - clean)) return rc;
    clean = offset;
    clean_until_.store(clean, std::memory_order_release);
  }
  const int rc = write();
  // A failed write may have left part of its range stale: only a whole one moves the end.
  if (rc == 0 && offset + n > clean) clean_until_.store(offset + n, std::memory_order_release);
  return rc;
}

int MemfdMemory::read(uint64_t offset, void* dst, size_t n) const {
  if (int rc = check_range(offset, n)) return rc;
  if (int rc = make_clean(offset + n)) return rc;
  uint8_t* v = n >= kViewMinRead ? view() : nullptr;
  if (v && dense(v, offset, n)) return host_copy(dst, v + offset, n);
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;  // the file shrank under us (a peer truncated a shared descriptor)
    p += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return 0;
}

int MemfdMemory::write(uint64_t offset, const void* src, size_t n) {
  if (int rc = check_range(offset, n)) return rc;
  return writing(offset, n, [&] { return write_unchecked(offset, src, n); });
}

int MemfdMemory::write_unchecked(uint64_t offset, const void* src, size_t n) {
  if (uint8_t* v = n >= kViewMinWrite ? view() : nullptr) return host_copy(v + offset, src, n);
  auto* p = static_cast<const uint8_t*>(src);
  while (n > 0) {
    ssize_t r = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;
    p += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return 0;
}

int MemfdMemory::write_pattern(uint64_t offset, uint8_t value, uint64_t n) {
  if (n == 0) return 0;
  const size_t need = static_cast<size_t>(std::min<uint64_t>(n, kPatternBytes));
  const uint8_t* pattern = pattern_buffer(value, need);
  if (!pattern) return -ENOMEM;
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, kPatternBytes));
    if (int rc = write_unchecked(offset, pattern, chunk)) return rc;
    offset += chunk;
    n -= chunk;
  }
  return 0;
}

int MemfdMemory::fill(uint64_t offset, uint8_t value, size_t n) {
  if (int rc = check_range(offset, n)) return rc;
  if (n == 0) return 0;
  return writing(offset, n, [&] { return fill_unchecked(offset, value, n); });
}

int MemfdMemory::fill_unchecked(uint64_t offset, uint8_t value, size_t n) {
  if (value == 0) {
    const uint64_t page = page_size();
    const uint64_t end = offset + n;
    const uint64_t hole_begin = align_up(offset, page);
    const uint64_t hole_end = align_down(end, page);
    if (hole_begin < hole_end) {
      // Punching gives the pages back to the system, so zeroing a huge allocation costs nothing,
      // and every mapping of the file sees zeros at once.
      if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(hole_begin),
                      static_cast<off_t>(hole_end - hole_begin)) == 0) {
        if (int rc = write_pattern(offset, 0, hole_begin - offset)) return rc;
        return write_pattern(hole_end, 0, end - hole_end);
      }
      if (errno != EOPNOTSUPP && errno != ENOSYS) return -errno;
      // A descriptor on a file system without hole punching: write the zeros.
    }
  }
  return write_pattern(offset, value, n);
}

// Mode 0 allocates the missing pages without touching the ones already there, and cannot grow the
// file because the range lies inside it. Fault tracking needs the pages in the page cache: only a
// cached page can be handed back to the CPU after a revoke.
int MemfdMemory::populate(uint64_t offset, size_t n) {
  if (int rc = check_range(offset, n)) return rc;
  if (n == 0) return 0;
  if (int rc = make_clean(offset + n)) return rc;
  int rc;
  do {
    rc = ::fallocate(fd_, 0, static_cast<off_t>(offset), static_cast<off_t>(n));
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? 0 : -errno;
}

}  // namespace aclvmm::dev::emu::os
