#include "drivers/host/host_facts.h"

#include <numa.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <cstdio>
#include <cstring>

namespace aclvmm::dev::host {
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

}  // namespace

uint64_t memory_total() {
  if (uint64_t v = meminfo_bytes("MemTotal")) return v;
  struct sysinfo si;
  if (::sysinfo(&si) != 0) return 0;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

// MemAvailable rather than MemFree: page cache is reclaimable and counts as free for allocation.
uint64_t memory_free() {
  if (uint64_t v = meminfo_bytes("MemAvailable")) return v;
  struct sysinfo si;
  if (::sysinfo(&si) != 0) return 0;
  return (static_cast<uint64_t>(si.freeram) + si.bufferram) * si.mem_unit;
}

int numa_node_count() {
  if (::numa_available() < 0) return 0;
  return ::numa_num_configured_nodes();
}

int current_numa_node() {
  if (numa_available() < 0) return 0;
  int cpu = sched_getcpu();
  int node = cpu < 0 ? 0 : numa_node_of_cpu(cpu);
  return node < 0 ? 0 : node;
}

}  // namespace aclvmm::dev::host
