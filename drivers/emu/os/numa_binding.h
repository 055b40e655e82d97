// NUMA placement of mapped host memory (HOST_NUMA physical memory): the emulated device MMU's
// part of a host mapping; the host's NUMA facts are drivers/host/host_facts.h.
#pragma once

#include <cstdint>

namespace aclvmm::dev::emu::os {

// Binds [va, va+size) to `node` and moves the pages already there; node -1 restores the default
// policy. -EOPNOTSUPP without NUMA, -EINVAL for a node that does not exist or a bad range.
int bind_numa(uint64_t va, uint64_t size, int node);

}  // namespace aclvmm::dev::emu::os
