#include "drivers/emu/os/placeholders.h"

#include <sys/mman.h>

#include <cerrno>

#include "drivers/emu/os/util.h"

// Older libc headers lack it; older kernels ignore it and treat the address as a hint, which the
// address checks below handle.
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace aclvmm::dev::emu::os {
namespace {

// Inaccessible and unbacked: reserves address space without charging memory or swap.
constexpr int kPlaceholderFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

void* as_ptr(uint64_t v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); }
uint64_t as_u64(void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Maps a placeholder exactly at addr without replacing anything. 0, -EEXIST or -errno.
int place_exactly(uint64_t addr, uint64_t size) {
  void* p = ::mmap(as_ptr(addr), size, PROT_NONE, kPlaceholderFlags | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return -errno;
  if (as_u64(p) != addr) {
    // A kernel without MAP_FIXED_NOREPLACE moved us because the range is taken.
    ::munmap(p, size);
    return -EEXIST;
  }
  return 0;
}

}  // namespace

int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) {
  if (!base || size == 0 || !page_aligned(size)) return -EINVAL;
  if (align == 0) align = page_size();
  if ((align & (align - 1)) != 0) return -EINVAL;
  if (align < page_size()) align = page_size();

  if (preferred != 0 && valid_page_range(preferred, size) && place_exactly(preferred, size) == 0) {
    *base = preferred;
    return 0;
  }

  // Anywhere: over-reserve by the alignment slack, then give back the unaligned head and tail.
  const uint64_t slack = align - page_size();
  if (size > UINT64_MAX - slack) return -ENOMEM;
  const uint64_t total = size + slack;
  void* p = ::mmap(nullptr, total, PROT_NONE, kPlaceholderFlags, -1, 0);
  if (p == MAP_FAILED) return -errno;
  const uint64_t start = as_u64(p);
  const uint64_t aligned = align_up(start, align);
  const uint64_t head = aligned - start;
  const uint64_t tail = total - head - size;
  if (head != 0) ::munmap(p, head);
  if (tail != 0) ::munmap(as_ptr(aligned + size), tail);
  *base = aligned;
  return 0;
}

int claim_fixed(uint64_t addr, uint64_t size) {
  if (!valid_page_range(addr, size)) return -EINVAL;
  return place_exactly(addr, size);
}

int release_window(uint64_t base, uint64_t size) {
  if (!valid_page_range(base, size)) return -EINVAL;
  if (::munmap(as_ptr(base), size) != 0) return -errno;
  return 0;
}

int map_cpu(uint64_t va, uint64_t size, PhysicalMemory& mem, uint64_t offset, CpuAccess access) {
  int prot;
  switch (access) {
    case CpuAccess::kNone:
      return unmap_cpu(va, size);
    case CpuAccess::kRead:
      prot = PROT_READ;
      break;
    case CpuAccess::kReadWrite:
      prot = PROT_READ | PROT_WRITE;
      break;
    default:
      return -EINVAL;
  }
  if (!valid_page_range(va, size) || !page_aligned(offset)) return -EINVAL;
  // Pages past the end of the file would raise SIGBUS on touch; the last partial page is fine.
  const uint64_t mapped_size = align_up(mem.size(), page_size());
  if (offset > mapped_size || size > mapped_size - offset) return -EINVAL;
  const int fd = mem.fd();
  if (fd < 0) return -EBADF;
  void* p = ::mmap(as_ptr(va), size, prot, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    int e = errno;
    // A failed MAP_FIXED may already have removed the old mapping; never leave a hole where a
    // foreign mapping could land.
    (void)unmap_cpu(va, size);
    return -e;
  }
  return 0;
}

int unmap_cpu(uint64_t va, uint64_t size) {
  if (!valid_page_range(va, size)) return -EINVAL;
  // Replacing instead of munmap keeps the range reserved for the window.
  void* p = ::mmap(as_ptr(va), size, PROT_NONE, kPlaceholderFlags | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return -errno;
  return 0;
}

}  // namespace aclvmm::dev::emu::os
