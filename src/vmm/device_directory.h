// DeviceDirectory: what vmm's modules need to know about the devices the runtime set up, handed
// to them (at construction, or at attach for the process-wide sharing service) instead of their
// reaching for the process-wide Runtime (issue 14). The runtime implements it: it owns the
// devices' capacity pools, their peer access and the configuration that maps physical device
// ids to the ids the application sees.
//
// Threading: every method from any thread, under any vmm lock (pool() takes the runtime's
// device-pools lock, which ranks below every vmm lock: base/lock_rank.h).
#pragma once

#include <memory>

#include "drivers/device_backend.h"
#include "vmm/physical.h"

namespace aclvmm {

class DeviceDirectory {
 public:
  // The capacity pool of a physical device; nullptr when there is no such device (or the
  // runtime is stopped).
  virtual std::shared_ptr<MemoryPool> pool(int physical_id) const = 0;
  // The id the application knows a physical device by (ASCEND_RT_VISIBLE_DEVICES).
  virtual int user_device(int physical_id) const = 0;
  // False under ACLVMM_HOST_NUMA=off: the host is treated as one without NUMA.
  virtual bool host_numa() const = 0;
  // How many physical devices the current configuration has.
  virtual int device_count() const = 0;
  // The device backend of the current start (nullptr while stopped): the device MMU maps
  // backend objects, so an import gives its received bytes an id there.
  virtual const std::shared_ptr<dev::DeviceBackend>& device() const = 0;
  // The one change a module asks for: peer access between two devices in both directions (an
  // import onto another device than the exporter's, as the vendor's runtime opens it).
  virtual void enable_peer_pair(int a, int b) = 0;
  // This process's server of the pod (ACLVMM_SERVER_ID, docs/fabric.md).
  virtual int server_id() const { return 0; }

 protected:
  ~DeviceDirectory() = default;
};

}  // namespace aclvmm
