// Facts about the host: its memory, its NUMA nodes and the current thread's node (HostServices'
// POSIX answers).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev::host {

uint64_t memory_total();
uint64_t memory_free();
int numa_node_count();  // 0 when NUMA is not available
int current_numa_node();  // of the calling thread's CPU; 0 without NUMA

}  // namespace aclvmm::dev::host
