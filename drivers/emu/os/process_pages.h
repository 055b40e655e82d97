// The process's own pages as the emulated device's host registrations see them
// (DeviceMmu::register_host): whether a range is mapped, and keeping it resident.
#pragma once

#include <cstdint>

namespace aclvmm::dev::emu::os {

// 0 when every page of [addr, addr+size) (whole pages) is mapped in the process; -ENOMEM when
// one is not, -EINVAL for a range that is not whole pages.
int probe_mapped(uint64_t addr, uint64_t size);
// Keeps the pages resident (mlock); 0 or -errno. The caller decides what a refusal under
// RLIMIT_MEMLOCK means.
int pin(uint64_t addr, uint64_t size);
// Undoes pin(); 0 or -errno.
int unpin(uint64_t addr, uint64_t size);

}  // namespace aclvmm::dev::emu::os
