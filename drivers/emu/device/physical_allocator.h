// EmuPhysicalAllocator: PhysicalAllocator of the emulated NPU: each object is an EmuPhysical over
// a sealed memfd (drivers/emu/os/memfd_memory.*), charged to the CapacityLedger.
//
// create(): checks what it must to stay safe (a location that names no device or NUMA node, a
// size that is not a whole number of granules: kInvalidArgument; kHostNuma on a host without
// NUMA: kNotSupported), charges the location (kOutOfMemory), then makes the memfd (the step
// emu.memfd.create, through the listener's gate); a failure after the charge gives it back, so a
// failed create leaves the capacity and the descriptors as they were. The memfd has no placement
// until it is mapped: HOST_NUMA binding is the device MMU's (step 2), as today's map_cpu does it.
//
// The allocator keeps the list of handles not yet released (its own objects, and imports, which
// the sharing unit hands to hold()), so that the backend's destruction releases what the core left
// (device_backend.h "Destruction", conformance C48). Objects are still found by their id (D3):
// the list is intrusive (two links in each object, no allocation) and only written by create,
// hold and release, never read on a copy's path.
//
// Threading: as PhysicalAllocator; the list under its own leaf lock.
#pragma once

#include <cstdint>
#include <mutex>

#include "drivers/backend_listener.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev::emu {

class CapacityLedger;
class EmuPhysical;
class EmuSharing;

class EmuPhysicalAllocator final : public PhysicalAllocator {
 public:
  // numa_nodes: 0 on a host without NUMA (or with ACLVMM_HOST_NUMA=off). giant: 1 GiB pages are
  // offered (Capabilities::giant_page).
  EmuPhysicalAllocator(CapacityLedger& ledger, BackendListener& listener, int32_t device_count,
                       int32_t numa_nodes, bool giant);
  // Releases every handle still held (their exports have ended with the sharing unit before).
  ~EmuPhysicalAllocator() override;

  // The sharing unit whose exports end with their memory (drivers/sharing.h); set once at open.
  void end_exports_through(EmuSharing* sharing) { sharing_ = sharing; }

  Result create(const PhysicalSpec& spec, PhysicalId* out) override;
  Result release(PhysicalId memory) override;
  Result properties(PhysicalId memory, PhysicalProperties* out) const override;
  Result granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const override;
  Result set_map_route(PhysicalId memory, uint32_t route) override;
  Result map_route(PhysicalId memory, uint32_t* route) const override;

  // create() without the granule rule, for blocks (blocks.h), whose sizes are whole host pages:
  // the same checks, charge and memfd, the object with its one reference in *out.
  Result make(const PhysicalSpec& spec, EmuPhysical** out);
  // Counts `object`'s handle (its one reference) among those the destruction releases: create()
  // does it for its own, the sharing unit for imports.
  void hold(EmuPhysical* object);

 private:
  Result check(const PhysicalSpec& spec) const;

  CapacityLedger& ledger_;
  InjectionGate gate_;
  const int32_t device_count_;
  const int32_t numa_nodes_;
  const bool giant_;
  EmuSharing* sharing_ = nullptr;
  std::mutex held_mu_;
  EmuPhysical* held_head_ = nullptr;
};

}  // namespace aclvmm::dev::emu
