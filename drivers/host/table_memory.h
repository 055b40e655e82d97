// Memory for the core's lookup tables (HostServices::allocate_table): the pointer index is a
// large array read at random on every pointer query, so it lives on huge pages where the host
// allows, and costs nothing until touched.
#pragma once

#include <cstdint>

namespace aclvmm::dev::host {

// Zero-filled, lazily populated, never returned while the process runs. nullptr when the
// address space cannot hold it.
void* map_table(uint64_t bytes);

}  // namespace aclvmm::dev::host
