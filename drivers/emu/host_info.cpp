#include "drivers/emu/host_info.h"

#include <numa.h>
#include <sched.h>
#include <numaif.h>
#include <sys/sysinfo.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "drivers/emu/util.h"

namespace aclvmm::drv::emu {
namespace {

// Bytes of a /proc/meminfo field, or 0 when the file or the field is missing.
uint64_t meminfo_bytes(const char* key) {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (!f) return 0;
  const size_t key_len = std::strlen(key);
  char line[256];
  uint64_t result = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, key_len) != 0 || line[key_len] != ':') continue;
    unsigned long long kib = 0;
    if (std::sscanf(line + key_len + 1, "%llu", &kib) == 1) result = kib * 1024ull;
    break;
  }
  std::fclose(f);
  return result;
}

// Bits the kernel's node mask can hold (MAX_NUMNODES is at most 1024 on x86_64 and arm64).
constexpr int kMaskBits = 1024;
constexpr int kBitsPerWord = 8 * sizeof(unsigned long);

}  // namespace

uint64_t host_memory_total() {
  if (uint64_t v = meminfo_bytes("MemTotal")) return v;
  struct sysinfo si;
  if (::sysinfo(&si) != 0) return 0;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

// MemAvailable rather than MemFree: page cache is reclaimable and counts as free for allocation.
uint64_t host_memory_free() {
  if (uint64_t v = meminfo_bytes("MemAvailable")) return v;
  struct sysinfo si;
  if (::sysinfo(&si) != 0) return 0;
  return (static_cast<uint64_t>(si.freeram) + si.bufferram) * si.mem_unit;
}

int numa_node_count() {
  if (::numa_available() < 0) return 0;
  return ::numa_num_configured_nodes();
}

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

int current_numa_node() {
  if (numa_available() < 0) return 0;
  int cpu = sched_getcpu();
  int node = cpu < 0 ? 0 : numa_node_of_cpu(cpu);
  return node < 0 ? 0 : node;
}

}  // namespace aclvmm::drv::emu
