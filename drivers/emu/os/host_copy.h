// Copies and fills of process memory that report bad pointers as -EFAULT instead of faulting.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev::emu::os {

int host_copy(void* dst, const void* src, size_t n);
int host_fill(void* dst, uint8_t value, size_t n);

}  // namespace aclvmm::dev::emu::os
