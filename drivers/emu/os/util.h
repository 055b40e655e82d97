// Small helpers shared by the emu backend's files.
#pragma once

#include <unistd.h>

#include <cstdint>

namespace aclvmm::dev::emu::os {

// Cached: sysconf is a libc call and the page size never changes while the process runs.
inline uint64_t page_size() {
  static const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return kPage;
}

inline bool page_aligned(uint64_t v) { return (v & (page_size() - 1)) == 0; }

// `align` must be a power of two.
inline uint64_t align_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }
inline uint64_t align_down(uint64_t v, uint64_t align) { return v & ~(align - 1); }

// A non-empty, page-aligned range that does not wrap around the address space.
inline bool valid_page_range(uint64_t addr, uint64_t size) {
  return size != 0 && page_aligned(addr) && page_aligned(size) && addr + size > addr;
}

}  // namespace aclvmm::dev::emu::os
