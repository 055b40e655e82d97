// Data movement executed by a device: memcpy and memset through the emulated device MMU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "vmm/address_space.h"

namespace aclvmm::memops {

// Copies n bytes; each side is translated (device memory through the mapping tables with the
// executing device's rights, everything else as process memory). Bad addresses give 507899.
// Device-side view of [va, va+n): managed memory, device memory or process memory.
Status translate(uint64_t va, uint64_t n, bool write, const Accessor& who, Translation* out);
Status copy(void* dst, const void* src, size_t n, const Accessor& who);
Status fill(void* dst, uint8_t value, size_t n, const Accessor& who);

}  // namespace aclvmm::memops
