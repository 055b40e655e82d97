// Data movement executed by a device: memcpy and memset through the emulated device MMU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "vmm/address_space.h"
#include "vmm/managed.h"
#include "vmm/runtime_services.h"

namespace aclvmm::memops {

// The copy and fill operations, given the runtime's pieces at construction (one object, owned by
// the Runtime). A stream task captures the object with its Accessor when it is queued.
class MemoryOps {
 public:
  MemoryOps(RuntimeServices& runtime, AddressSpace& space, ManagedMemory& managed)
      : rt_(runtime), space_(space), managed_(managed) {}
  MemoryOps(const MemoryOps&) = delete;
  MemoryOps& operator=(const MemoryOps&) = delete;

  // Device-side view of [va, va+n): managed memory, device memory or process memory.
  Status translate(uint64_t va, uint64_t n, bool write, const Accessor& who, Translation* out);
  // Copies n bytes; each side is translated (device memory through the mapping tables with the
  // executing device's rights, everything else as process memory). Bad addresses give 507899.
  Status copy(void* dst, const void* src, size_t n, const Accessor& who);
  Status fill(void* dst, uint8_t value, size_t n, const Accessor& who);

 private:
  RuntimeServices& rt_;
  AddressSpace& space_;
  ManagedMemory& managed_;
};

}  // namespace aclvmm::memops
