// The CPU's view of the virtual-address windows: placeholders and the mappings inside them.
#pragma once

#include <cstdint>

#include "drivers/emu/os/physical_memory.h"

namespace aclvmm::dev::emu::os {

int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base);
int claim_fixed(uint64_t addr, uint64_t size);
int release_window(uint64_t base, uint64_t size);

// The caller guarantees [va, va+size) lies in a window it claimed: MAP_FIXED replaces whatever is
// there, and only the core knows where its windows are.
int map_cpu(uint64_t va, uint64_t size, PhysicalMemory& mem, uint64_t offset, CpuAccess access);
int unmap_cpu(uint64_t va, uint64_t size);

}  // namespace aclvmm::dev::emu::os
