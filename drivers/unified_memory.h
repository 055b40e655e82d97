// UnifiedMemory: managed memory, one address for the CPU and every device, with the pages moved
// to whoever uses them (halMemAlloc(MEM_UVM), halMemManagedAdvise, halMemManagedPrefetch,
// halMemManagedRangeGetAttributes; behavior.md §10, docs/managed-memory.md).
//
// The residency model is the backend's, as it is the driver's on hardware: where each page lives,
// read copies, eviction when a device is full, the CPU faults that bring a page back. For emu
// that is today's model moved out of the core whole: memfd ranges, a residency per 2 MiB page,
// the LRU, userfaultfd revoke/resolve and the fault thread that serves CPU faults (and
// `populate()`, which only userfaultfd needed). Device accesses reach managed memory through the
// copy engine (EndpointKind::kManaged), where the backend applies its policy when the command
// runs. The core keeps the ACL checks, product gating, location conversion (user -> driver ids,
// HOST_NUMA_CURRENT -> HostServices::current_numa_node), its record of the live ranges (for
// pointer queries, aclrtFree dispatch and the leak report) and the statistics JSON.
//
// Contract
// - allocate(): a range of `size` bytes (a multiple of 2 MiB, the core rounds) in
//   WindowLayout::managed, CPU-accessible at once (Capabilities::cpu_visible_host_memory) and
//   resident on the host. kOutOfMemory when the window or the host cannot hold it.
// - free(): a range exactly as allocated. kNormal: if the CPU mapping cannot be removed the range
//   stays allocated and usable (kBusy or the error); kTeardown: the range goes whatever happens
//   (aclFinalize and exit; nothing could report it). Device charges of resident pages go back
//   without counting a migration.
// - advise(): advice 0..5 as ACL numbers them (READ_MOSTLY .. UNSET_ACCESSED_BY) over whole
//   2 MiB pages of [address, address+size); the range must lie in live allocations (kBadAddress
//   otherwise: 507899 as today); a location invalid for the advice is kInvalidArgument.
// - prefetch(): migrates the pages to `target` now, on the calling thread (the queued form is
//   CommandKind::kPrefetch, executed in queue order; the core only logs its failures, as the
//   vendor does).
// - attribute(): one range attribute (ACL's numbering 1..8) in the vendor's encoding (-1 host,
//   -2 mixed or unset; ACCESSED_BY packed from slot 0), written to `values[0..slots)`. Device ids
//   in the values are driver ids; the core converts them to user ids.
// - tracking(): whether residency is tracked at all (false when the machine refuses fault
//   tracking: every page then stays on the host and devices reach it in place) and whether CPU
//   writes to read copies are caught. It may change once, from unknown to its final value, at
//   the first allocation; it is false before.
// - Statistics (DeviceBackend::visit_statistics, group "managed"): fault_tracking,
//   cpu_write_tracking, host_faults, device_faults, bytes_to_device, bytes_to_host, evictions,
//   prefetch_bytes, read_copy_invalidations; each migration is also a
//   BackendListener::residency_event and its charge a usage_changed.
//
// Threading: every method from any thread, concurrently with each other and with copies that
// touch managed memory. CPU faults are served on the backend's own thread (emu: the fault
// thread), which calls only BackendListener; an application thread that touches a page resident
// on a device blocks until that thread has brought it back. Blocks: prefetch and copies (bytes
// move), free (waits for the fault thread to let go of the range).
// Lifetime: ranges live from allocate to free; the backend's destruction frees what is left.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

enum class FreeMode : uint8_t { kNormal, kTeardown };

// ACL's aclrtMemManagedAdviseType values (= the HAL's uvmMemAdviseType).
enum class ManagedAdvice : uint8_t {
  kReadMostly = 0, kUnsetReadMostly = 1, kPreferredLocation = 2, kUnsetPreferredLocation = 3,
  kAccessedBy = 4, kUnsetAccessedBy = 5,
};

// ACL's aclrtMemRangeAttribute values (= MEM_RANGE_ATTR_*).
enum class ManagedAttribute : uint8_t {
  kReadMostly = 1, kPreferredLocation = 2, kAccessedBy = 3, kPreferredLocationType = 4,
  kPreferredLocationId = 5, kLastPrefetchLocation = 6, kLastPrefetchLocationType = 7,
  kLastPrefetchLocationId = 8,
};

struct ManagedTracking {
  bool residency = false;   // pages migrate (userfaultfd works, for emu)
  bool cpu_writes = false;  // CPU writes to READ_MOSTLY pages invalidate read copies
};

class UnifiedMemory {
 public:
  virtual ~UnifiedMemory() = default;
  virtual Result allocate(uint64_t size, uint64_t* address) = 0;
  virtual Result free(uint64_t address, FreeMode mode) = 0;
  virtual Result advise(uint64_t address, uint64_t size, ManagedAdvice advice,
                        Location where) = 0;
  virtual Result prefetch(uint64_t address, uint64_t size, Location target) = 0;
  virtual Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size,
                           int32_t* values, size_t slots) = 0;
  virtual ManagedTracking tracking() const = 0;
};

}  // namespace aclvmm::dev
