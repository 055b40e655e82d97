// DeviceMemory: the device backend's physical object behind a PhysicalAllocation (its
// PhysicalId, drivers/physical_allocator.h), held for as long as the allocation lives and
// released exactly once when it goes: the vendor runtime's one halMemRelease per handle after its
// last reference (behavior.md §6). It keeps the backend alive until then, so memory that outlives
// a runtime teardown (a restart) is still released into the backend that made it.
// Imports arrive from the backend's Sharing unit as PhysicalIds (take()).
#pragma once

#include <memory>

#include "base/status.h"
#include "drivers/device_backend.h"

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
  // checked and rounded by the caller) and holds it in phys.device_memory. Nothing is held on
  // failure. `refused` (if given) gets the backend's reason when it refused (kOutOfMemory: its
  // ledger, the capacity authority, is full: D8).
  static Status create(const std::shared_ptr<dev::DeviceBackend>& backend,
                       PhysicalAllocation& phys, dev::Condition* refused = nullptr);
  // Takes over `id`, an object of `backend` the caller got otherwise (an import from
  // Sharing): released with this like any other. Any object held before is released first.
  void take(const std::shared_ptr<dev::DeviceBackend>& backend, dev::PhysicalId id);

 private:
  std::shared_ptr<dev::DeviceBackend> backend_;
  dev::PhysicalId id_;
};

}  // namespace aclvmm
