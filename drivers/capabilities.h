// Capabilities: what a backend supports, filled once when it is opened (in the spirit of
// mimalloc's mi_os_mem_config_t: plain data the portable layer reads instead of asking "which
// backend is this?").
//
// Contract
// - Filled by the backend before DeviceBackend::open returns; constant until the backend is
//   destroyed. The defaults are the conservative answer ("not supported"), so a backend that
//   forgets a field never claims a feature it lacks.
// - A capability says what the backend (with its driver and machine) can do. What a product
//   offers (behavior.md §12, products.md) is decided by the core's product rules on top: the core
//   answers 207000 when either says no. A call the capabilities rule out still answers
//   kNotSupported if made; the core asks first only to choose a path (e.g. whether a HOST
//   grant on device memory can be honoured), never as the only guard.
// - State that a backend learns later (whether userfaultfd works, found at the first managed
//   allocation) is not a capability: UnifiedMemory::tracking() reports it.
//
// Threading: read-only after open; any thread.
#pragma once

#include <cstdint>

#include "drivers/device_types.h"

namespace aclvmm::dev {

struct Capabilities {
  // ---- geometry
  uint64_t map_granule = 2 * kMiB;  // mapping and reservation granule of device memory
  uint64_t giant_page = 0;          // 1 GiB pages (PageType::kGiant); 0 when not offered

  // ---- device MMU (device_mmu.h)
  bool map_without_access = false;         // InitialAccess::kNone (aclrtMemMapNoAccess)
  bool access_none_and_read = false;       // grants of Access::kNone / kRead (hal: only kReadWrite)
  bool cpu_visible_device_memory = false;  // a HOST grant on device memory maps it for the CPU
  bool cpu_visible_host_memory = false;    // host physical memory, host blocks and managed memory
                                           // can be dereferenced by the CPU (fake: false)
  bool map_routes = false;                 // PhysicalAllocator::set_map_route (aclrtMemMapSetLink)

  // ---- copy engine (copy_engine.h)
  bool host_tasks = false;        // CommandKind::kHostTask (emulated kernels, host callbacks)
  // Copies and fills check the executing device's rights and the ranges' mappings themselves
  // when they run (D4: emu, fake). Without it (hal: drvMemcpy takes no executing device) the
  // core checks both against its own records before it hands the copy over.
  bool copies_check_access = false;

  // ---- physical memory (physical_allocator.h)
  bool host_numa = false;  // Location::Kind::kHostNuma (FEATURE_SVM_VMM_NORMAL_GRANULARITY)

  // ---- sharing (sharing.h)
  bool sharing = false;             // export / set-pid / import of DEFAULT tokens
  bool fabric_sharing = false;      // FABRIC blobs (needs a server id: DeviceProperties)
  bool disable_validation = false;  // Sharing::disable_validation (NO_WLIST attribute)
  // The driver tells a DEFAULT token's exporting device (halMemShareHandleInfoGet, halGetHostID):
  // a V2 DEFAULT import needs it, a V1 import goes on without it (hal.md §3.5).
  bool token_exporter_query = true;
  bool ipc_keys = false;            // Sharing::ipc_* (IPC memory by key, halShmem*)

  // ---- unified memory (unified_memory.h)
  bool managed_memory = false;       // the group works at all (hal: halMemManaged* present)
  bool managed_residency = false;    // device accesses migrate pages where the machine allows
  bool managed_write_tracking = false;  // READ_MOSTLY read copies die on a CPU write

  // ---- the process as a whole
  // The backend, not the core, is the authority for pointer and handle queries: memory may have
  // been made by someone else in the process (hal with the vendor runtime loaded, hal.md §6.2
  // rule 5). The core then answers queries through DeviceMmu::query instead of its index.
  bool authoritative_queries = false;
  // The driver reports the machine: the device count and SoC come from DeviceManager, and
  // ACLVMM_DEVICE_COUNT / ACLVMM_SOC do not apply (hal.md §1.5). Software backends are told.
  bool driver_reports_machine = false;
  // The vendor runtime shares the driver in this process and owns devices, contexts, streams and
  // kernels (hal.md §6): the core forwards those calls to it and opens no device itself.
  bool beside_vendor_runtime = false;
};

}  // namespace aclvmm::dev
