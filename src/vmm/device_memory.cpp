#include "vmm/device_memory.h"


#include "observability/log.h"
#include "vmm/device_error.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

dev::Location location_of(const PhysicalAllocation& phys) {
  switch (phys.side) {
    case Side::kDevice: return dev::Location::device(phys.device);
    case Side::kHostNuma: return dev::Location::host_numa(phys.device);
    default: return dev::Location::host();
  }
}

// What the backend is told the memory is: the handle's location and types, its rounded size.
dev::PhysicalProperties properties_of(const PhysicalAllocation& phys) {
  dev::PhysicalProperties props;
  props.location = location_of(phys);
  props.page_type = static_cast<dev::PageType>(phys.page_type);
  props.mem_type = static_cast<dev::MemType>(phys.mem_type);
  props.size = phys.size;
  return props;
}

}  // namespace

void DeviceMemory::reset() {
  if (!id_) return;
  const dev::Result r = backend_->physical().release(id_);
  if (!r.ok()) {
    // Only an injected dev.phys.release gets here: the object stays the backend's (leaked).
    ACLVMM_LOG_WARN("DRV", "the device backend did not release physical memory: {}",
                    backend_->describe(r));
  }
  id_ = dev::PhysicalId{};
  backend_.reset();
}

Status DeviceMemory::create(const std::shared_ptr<dev::DeviceBackend>& backend,
                            PhysicalAllocation& phys, dev::Condition* refused) {
  const dev::PhysicalProperties props = properties_of(phys);
  const dev::PhysicalSpec spec{props.location, props.page_type, props.mem_type, props.size};
  dev::PhysicalId id;
  const dev::Result r = backend->physical().create(spec, &id);
  if (!r.ok()) {
    if (refused != nullptr) *refused = r.condition();
    return Error(device_code(r), "the backend could not create " + std::to_string(phys.size) +
                                 " bytes of physical memory: " + backend->describe(r));
  }
  phys.device_memory.backend_ = backend;
  phys.device_memory.id_ = id;
  return Status::Ok();
}

void DeviceMemory::take(const std::shared_ptr<dev::DeviceBackend>& backend, dev::PhysicalId id) {
  reset();
  backend_ = backend;
  id_ = id;
}

}  // namespace aclvmm
