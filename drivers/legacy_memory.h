// LegacyMemory: the transitional bridge between a backend's physical objects and today's
// drv::PhysicalMemory (issue 14, migration steps 2–5; removed with drivers/driver.h in step 9).
//
// From step 2 the core creates physical memory through PhysicalAllocator and maps it through
// DeviceMmu, but parts of it (exports, imports) still work on drv::PhysicalMemory. This bridge gives the core the very object behind a PhysicalId
// (emu: the EmuPhysical's sealed memfd), and turns memory the core got the old way (an import's
// adopted descriptor) into a PhysicalId it can map, without a second charge: that memory is
// charged where it was created, by the exporter.
//
// Contract
// - memory(): for a live id of this backend, the object's bytes; nullptr for an id it does not
//   know (a backend that validates ids).
// - adopt(): a new PhysicalId over `memory` with `properties` (imported = true); charged to
//   nobody; PhysicalAllocator::release ends it like any other id. *out only on success.
// - DeviceBackend::legacy_memory() is nullptr on a backend without drv objects (fake, hal): the
//   core then has no old path to feed, and needs none once the migration is done.
//
// Threading: any thread, concurrently.
#pragma once

#include <cerrno>
#include <memory>

#include "drivers/device_result.h"
#include "drivers/device_types.h"
#include "drivers/driver.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev {

class LegacyMemory {
 public:
  virtual ~LegacyMemory() = default;
  virtual std::shared_ptr<drv::PhysicalMemory> memory(PhysicalId id) const = 0;
  virtual Result adopt(const PhysicalProperties& properties,
                       std::shared_ptr<drv::PhysicalMemory> memory, PhysicalId* out) = 0;
};

}  // namespace aclvmm::dev
