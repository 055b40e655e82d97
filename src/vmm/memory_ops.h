// Data movement executed by a device: memcpy and memset, executed by the device backend's copy
// engine (drivers/copy_engine.h), which translates the addresses through its own page table
// when the copy runs (docs/device-interface.md D4).
//
// The core only classifies each side (its pointer index: managed window, memory it knows behind
// the device MMU, or plain process memory) and, on a failed outcome only, asks its own
// bookkeeping (AddressSpace::translate, ManagedMemory's ranges) why, for today's messages and
// codes (507899; 107002 for device memory without a current context; 207001 for a managed page
// that found its device full). The managed window's side is a kManaged endpoint: the backend's
// UnifiedMemory migrates its pages for the executing device when the copy runs (step 6).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "drivers/copy_engine.h"
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

  // Copies n bytes as device `who` executes it: each side is reached with the executing device's
  // rights (device memory through the mapping tables, host memory through its HOST rights,
  // process memory as it is). Bad addresses and missing rights give 507899.
  Status copy(void* dst, const void* src, size_t n, const Accessor& who);
  Status fill(void* dst, uint8_t value, size_t n, const Accessor& who);

  // Queued copies and fills (Stream::enqueue_copy / enqueue_fill): the request a kCopy / kFill
  // command carries (translated by the backend when it runs, D4).
  dev::CopyRequest copy_request(void* dst, const void* src, size_t n, const Accessor& who) const {
    return dev::CopyRequest{endpoint(reinterpret_cast<uint64_t>(dst)),
                            endpoint(reinterpret_cast<uint64_t>(src)), n, executor(who)};
  }
  dev::FillRequest fill_request(void* dst, uint8_t value, size_t n, const Accessor& who) const {
    return dev::FillRequest{endpoint(reinterpret_cast<uint64_t>(dst)), value, n, executor(who)};
  }

  // The endpoint the copy engine gets for va (kManaged in the managed window, else kHostMemory
  // or kMapped).
  dev::CopyEndpoint endpoint(uint64_t va) const;
  // Whether va is plain process memory (what the core's records do not know).
  bool process_memory(uint64_t va) const {
    return endpoint(va).kind == dev::EndpointKind::kHostMemory;
  }
  static dev::Executor executor(const Accessor& who);
  // Before a copy from src to dst (src == 0 for a fill) is handed to a backend whose engine
  // checks no rights (Capabilities::copies_check_access false: hal), the core's records check
  // both sides as refused() would explain a failure; Ok for the other backends. Queued copies
  // are checked when they are queued.
  Status checked_first(const dev::DeviceBackend& device, uint64_t dst, uint64_t src, uint64_t n,
                       const Accessor& who) const;
  // The Status of a failed outcome of a copy from src to dst (src == 0 for a fill): the core's
  // own reason when its bookkeeping refuses the range, else what the engine reported.
  Status refused(const dev::CopyOutcome& out, uint64_t dst, uint64_t src, uint64_t n,
                 const Accessor& who) const;

 private:
  // The core's records' reason to refuse one side, if they have one.
  Status side_refused(uint64_t va, uint64_t n, bool write, const Accessor& who) const;

  RuntimeServices& rt_;
  AddressSpace& space_;
  ManagedMemory& managed_;
};

}  // namespace aclvmm::memops
