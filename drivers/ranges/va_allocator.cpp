#include "drivers/ranges/va_allocator.h"

#include <iterator>

namespace aclvmm::dev {

void VaAllocator::reset(uint64_t base, uint64_t end) {
  base_ = base;
  end_ = end;
  free_.clear();
  if (end > base) free_[base] = end;
}

bool VaAllocator::allocate(uint64_t size, uint64_t align, uint64_t* out) {
  if (size == 0) return false;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uint64_t start = (it->first + align - 1) & ~(align - 1);
    if (start < it->first || start >= it->second || it->second - start < size) continue;
    *out = start;
    return allocate_at(start, size);
  }
  return false;
}

bool VaAllocator::allocate_at(uint64_t addr, uint64_t size) {
  if (size == 0 || addr < base_ || addr > end_ || size > end_ - addr) return false;
  auto it = free_.upper_bound(addr);
  if (it == free_.begin()) return false;
  --it;
  uint64_t fstart = it->first, fend = it->second;
  if (addr + size > fend) return false;
  free_.erase(it);
  if (fstart < addr) free_[fstart] = addr;
  if (addr + size < fend) free_[addr + size] = fend;
  return true;
}

void VaAllocator::free(uint64_t addr, uint64_t size) {
  uint64_t start = addr, end = addr + size;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == end) {
    end = next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  free_[start] = end;
}

}  // namespace aclvmm::dev
