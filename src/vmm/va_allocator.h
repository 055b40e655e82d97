// VaAllocator: hands out virtual ranges of one address window (first fit, coalescing frees).
// The window itself is claimed from the kernel once; this only does the bookkeeping.
#pragma once

#include <cstdint>
#include <map>

namespace aclvmm {

class VaAllocator {
 public:
  void reset(uint64_t base, uint64_t end);
  bool contains(uint64_t addr) const { return addr >= base_ && addr < end_; }
  uint64_t base() const { return base_; }
  uint64_t end() const { return end_; }
  // Aligned first fit; false when no free range is large enough.
  bool allocate(uint64_t size, uint64_t align, uint64_t* out);
  // Takes exactly [addr, addr+size); false when any part is outside the window or in use.
  bool allocate_at(uint64_t addr, uint64_t size);
  void free(uint64_t addr, uint64_t size);

 private:
  uint64_t base_ = 0, end_ = 0;
  std::map<uint64_t, uint64_t> free_;  // start -> end of each free range
};

}  // namespace aclvmm
