// VaAllocator: hands out virtual ranges of one address window (first fit, coalescing frees).
// The window itself is claimed by the backend (emu: from the kernel, once per process; fake:
// numbers); this only does the bookkeeping, shared by the software backends' AddressWindows and
// blocks (drivers/emu/device/windows.*, drivers/fake/fake_windows.*).
//
// Threading: none of its own; its users serialise (address_windows.h: the core calls reserve and
// release under its region-tree writer lock).
#pragma once

#include <cstdint>
#include <map>

namespace aclvmm::dev {

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

}  // namespace aclvmm::dev
