#include "drivers/emu/os/numa_binding.h"

#include <numa.h>
#include <numaif.h>

#include <cerrno>
#include <cstdint>

#include "drivers/emu/os/util.h"

namespace aclvmm::dev::emu::os {
namespace {

// Bits the kernel's node mask can hold (MAX_NUMNODES is at most 1024 on x86_64 and arm64).
constexpr int kMaskBits = 1024;
constexpr int kBitsPerWord = 8 * sizeof(unsigned long);

}  // namespace

int bind_numa(uint64_t va, uint64_t size, int node) {
  if (::numa_available() < 0) return -EOPNOTSUPP;
  if (node < -1 || node > ::numa_max_node() || node >= kMaskBits) return -EINVAL;
  if (!valid_page_range(va, size)) return -EINVAL;
  if (node == -1) {
    return ::mbind(reinterpret_cast<void*>(static_cast<uintptr_t>(va)), size, MPOL_DEFAULT,
                   nullptr, 0, 0) == 0
               ? 0
               : -errno;
  }
  // A mask on the stack: libnuma's bitmask allocator exits the process when out of memory.
  unsigned long mask[kMaskBits / kBitsPerWord] = {};
  mask[node / kBitsPerWord] = 1ul << (node % kBitsPerWord);
  // On a shared memfd mapping the policy lands on the file itself, so every later mapping and
  // fault of it follows; MOVE migrates pages that were touched before the binding.
  if (::mbind(reinterpret_cast<void*>(static_cast<uintptr_t>(va)), size, MPOL_BIND, mask,
              kMaskBits + 1, MPOL_MF_MOVE) != 0)
    return -errno;
  return 0;
}

}  // namespace aclvmm::dev::emu::os
