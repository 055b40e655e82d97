// DeviceMmu: the device page tables: which virtual range shows which physical memory, and what
// every location may do there (halMemMap / halMemUnmap / halMemMapNoAccess, halMemSetAccess /
// halMemGetAccess, drvMemPrefetchToDevice for aclrtMemP2PMap, drvMemGetAttribute).
//
// On hardware this is what aclrtMapMem and aclrtMemSetAccess program; today's emu seam never
// saw device mappings at all. Every backend now keeps its page table fed by these calls: emu
// holds one word per 2 MiB of the device window (like the core's pointer index, lock-free) and
// decides there when the CPU needs a real kernel mapping (host memory mapped with access, a HOST
// grant on device memory, ACLVMM_HOST_ACCESS=open) and where host pages must be bound
// (HOST_NUMA).
//
// What stays in the core: the mapping bookkeeping (which handle is mapped where, the reference
// counts, the reservation a mapping belongs to, the pointer index), every check of behavior.md
// §3 and §8 and its code, and the product rules (ACLVMM_QUIRKS=vendor filters grants before
// they get here). The backend trusts the core's checks; the fake verifies them (kInvalidArgument
// on a violated precondition) so that core unit tests catch a missing check.
//
// Contract
// - map(): [va, va+size) lies inside one reservation of this backend, is a multiple of the
//   memory's page granule (2 MiB; 1 GiB for kGiant) or ends exactly at the memory's end (an
//   aclrtMalloc block of 4 KiB pages imported by IPC key is smaller than a granule), is not
//   mapped, and offset (a multiple of the granule) + size is within the memory. kOwnerReadWrite
//   gives the owner (the memory's device, or the host for host memory) read-write access and nobody
//   else anything; kNone gives nobody anything (Capabilities::map_without_access). On failure
//   nothing is mapped (emu: a failed CPU mapping leaves the placeholder, never a hole).
// - unmap(): exactly a range map() made. Afterwards no location reaches it; the CPU faults there.
//   kBusy when queued work still uses the range (hardware); the core then keeps the mapping.
// - set_access(): grants for locations on exactly one mapping [va, va+size). Applied in order;
//   *applied tells how many took effect, also on failure (the HAL applies descriptors one by one
//   and does not roll back, hal.md §3.4): the core restores the earlier flags of those, which it
//   keeps, to give the application all or nothing. A HOST grant on device memory changes the CPU
//   mapping (Capabilities::cpu_visible_device_memory; kNotSupported without).
// - access(): the flags of one location on the mapping containing va (kInvalidArgument outside
//   any mapping). The core answers from its bookkeeping except with authoritative_queries.
// - grant_peer(): aclrtMemP2PMap: `device` gets read-write access to the device memory mapped in
//   [va, va+size) (the core has found at least one such mapping).
// - query(): what is at va, for pointer queries under authoritative_queries and for the
//   conformance suite; kNotFound when nothing is mapped or allocated there.
// - register_host() (halHostRegister, aclrtHostRegister[V2]): the process's own pages of
//   [va, va+size) (whole host pages, outside the device's windows: the core checked both) become
//   reachable by `device`'s kernels at the same address; `pin` keeps them resident where the
//   host allows (emu: mlock, best effort under RLIMIT_MEMLOCK). kBadAddress when a page of the
//   range is not mapped in the process; nothing is registered then. unregister_host() undoes
//   exactly one successful register_host() with the same arguments. The core keeps the
//   registrations (which device, MAPPED or PINNED, overlaps), as the vendor's runtime does.
//
// Threading: map, unmap and set_access of different mappings run concurrently (the core holds
// only the reservation's lock: mapping threads must not serialize in the backend, or the map
// scaling rows of docs/performance.md regress); calls on one range are serialized by the core.
// Copies translate through the page table when they execute (copy_engine.h): a copy racing an
// unmap of its range sees each 2 MiB piece either mapped or not, never half-updated, and keeps
// the physical memory it found alive until it is done.
// May block: only where a CPU mapping is made or removed (mmap), never on another thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

enum class InitialAccess : uint8_t { kOwnerReadWrite, kNone };

struct AccessGrant {
  Location location;  // kHost (id 0) or kDevice
  Access flags = Access::kNone;
};

struct AddressInfo {
  enum class Kind : uint8_t { kUnmapped, kMapping, kDeviceBlock, kHostBlock, kManaged } kind =
      Kind::kUnmapped;
  VaRange range;             // the mapping, block or managed allocation containing va
  PhysicalId memory;         // kMapping / blocks: what is mapped there
  uint64_t offset = 0;       // of va's mapping into `memory`
  Location owner;            // where the memory lives
  uint32_t page_size = 0;    // what pointer queries report
};

class DeviceMmu {
 public:
  virtual ~DeviceMmu() = default;
  virtual Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
                     InitialAccess initial) = 0;
  virtual Result unmap(uint64_t va, uint64_t size) = 0;
  virtual Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                            size_t* applied) = 0;
  virtual Result access(uint64_t va, Location location, Access* out) const = 0;
  virtual Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) = 0;
  virtual Result query(uint64_t va, AddressInfo* out) const = 0;
  virtual Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) = 0;
  virtual Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) = 0;
};

}  // namespace aclvmm::dev
