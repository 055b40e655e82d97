#include "drivers/emu/emu_backend.h"

#include <cerrno>

#include "drivers/emu/address_space.h"
#include "drivers/emu/host_copy.h"
#include "drivers/emu/memfd_memory.h"
#include "drivers/emu/numa_binding.h"
#include "drivers/emu/util.h"
#include "drivers/host/host_facts.h"
#include "drivers/host/stats_segment.h"
#include "drivers/host/table_memory.h"

namespace aclvmm::drv::emu {

int EmuBackend::claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) {
  return emu::claim_window(preferred, size, align, base);
}

int EmuBackend::claim_fixed(uint64_t addr, uint64_t size) { return emu::claim_fixed(addr, size); }

int EmuBackend::release_window(uint64_t base, uint64_t size) {
  return emu::release_window(base, size);
}

// numa_node is not used here: a memfd has no placement until its pages are faulted through a
// mapping, which bind_numa governs. huge_1g is informational; shmem picks its own page size.
int EmuBackend::create_physical(const PhysicalRequest& req, std::shared_ptr<PhysicalMemory>* out) {
  return MemfdMemory::create(req.size, out);
}

int EmuBackend::adopt_physical(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out) {
  return MemfdMemory::adopt(fd, size, out);
}

int EmuBackend::create_stats_segment(const std::string& dir, const std::string& prefix,
                                     size_t size, std::shared_ptr<StatsSegment>* out) {
  return dev::host::ShmStatsSegment::create(dir, prefix, size, out);
}

int EmuBackend::map_cpu(uint64_t va, uint64_t size, PhysicalMemory& mem, uint64_t offset,
                        CpuAccess access) {
  return emu::map_cpu(va, size, mem, offset, access);
}

int EmuBackend::unmap_cpu(uint64_t va, uint64_t size) { return emu::unmap_cpu(va, size); }

int EmuBackend::bind_numa(uint64_t va, uint64_t size, int node) {
  return emu::bind_numa(va, size, node);
}

int EmuBackend::host_copy(void* dst, const void* src, size_t n) {
  return emu::host_copy(dst, src, n);
}

int EmuBackend::host_fill(void* dst, uint8_t value, size_t n) {
  return emu::host_fill(dst, value, n);
}

// Host facts, statistics segments and tables are the host's (drivers/host/), shared with the
// device interface's HostServices.
uint64_t EmuBackend::host_memory_total() { return dev::host::memory_total(); }
uint64_t EmuBackend::host_memory_free() { return dev::host::memory_free(); }
int EmuBackend::numa_node_count() { return dev::host::numa_node_count(); }
int EmuBackend::current_numa_node() { return dev::host::current_numa_node(); }
size_t EmuBackend::host_page_size() { return static_cast<size_t>(page_size()); }

void* EmuBackend::allocate_table(uint64_t bytes) { return dev::host::map_table(bytes); }

}  // namespace aclvmm::drv::emu
