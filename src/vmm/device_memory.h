// DeviceMemory: the device backend's physical object behind a PhysicalAllocation (its
// PhysicalId, drivers/physical_allocator.h), held for as long as the allocation lives and
// released exactly once when it goes: the vendor runtime's one halMemRelease per handle after its
// last reference (behavior.md §6). It keeps the backend alive until then, so memory that outlives
// a runtime teardown (a restart) is still released into the backend that made it.
//
// Transitional (issue 14 steps 2–5): the core's copies, exports and managed memory still work on
// drv::PhysicalMemory, which create() fetches through the backend's LegacyMemory bridge (the
// same bytes), and imports still arrive as drv::PhysicalMemory, which adopt() turns into a
// PhysicalId the device MMU can map.
#pragma once

#include <memory>

#include "base/status.h"
#include "drivers/device_backend.h"
#include "drivers/driver.h"

namespace aclvmm {

struct PhysicalAllocation;

class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { reset(); }

  dev::PhysicalId id() const { return id_; }
  // Releases the object (a no-op when none is held).
  void reset();

  // Creates the backend object for `phys` (side, device, page and memory type, size already
  // checked and rounded by the caller) and fills phys.device_memory and phys.memory (the same
  // bytes, through `old`'s instrumentation so that "drv.read"-style rules keep reaching them).
  // Rolls back on failure: nothing is held. `refused` (if given) gets the backend's reason when
  // it refused (kOutOfMemory: its ledger, the capacity authority, is full: D8).
  static Status create(const std::shared_ptr<dev::DeviceBackend>& backend, drv::Backend& old,
                       PhysicalAllocation& phys, dev::Condition* refused = nullptr);
  // phys.memory came the old way (an import): gives it an uncharged PhysicalId.
  static Status adopt(const std::shared_ptr<dev::DeviceBackend>& backend, PhysicalAllocation& phys);

 private:
  std::shared_ptr<dev::DeviceBackend> backend_;
  dev::PhysicalId id_;
};

}  // namespace aclvmm
