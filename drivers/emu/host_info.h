// Facts about the host and NUMA placement of mapped memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::drv::emu {

uint64_t host_memory_total();
uint64_t host_memory_free();
int numa_node_count();
int current_numa_node();
int bind_numa(uint64_t va, uint64_t size, int node);

}  // namespace aclvmm::drv::emu
