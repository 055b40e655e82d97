// HalBackend: the device interface over the vendor's driver library libascend_hal.so
// (hal.md; docs/hal.md): `ACLVMM_DRIVER=hal`. Real NPUs, or the fake driver library built on the
// emulator (drivers/hal/fake/) that CI tests it with.
//
// Two modes (hal.md §6), chosen at open:
// - standalone: no vendor runtime in the process. The backend is the driver's only user: it
//   opens and closes devices (hal.md §2), and the core answers queries from its own records.
// - coexisting: the vendor runtime (libruntime.so, or rtSetDevice) is loaded too and owns the
//   devices, contexts and streams. The backend never opens or closes a device, takes addresses
//   only from the driver, and answers queries from the driver (authoritative_queries): memory
//   may have been made by the vendor.
//
// Contract: device_backend.h. open() answers kNotSupported (207000) when no usable driver
// library is found (HalLibrary: none, the toolkit's stub, a required function missing, no
// device), after saying why once on stderr and in the log.
//
// Threading: the units are stateless apart from their usage books (hal_units.h); queues are
// host threads (CommandQueues). Fork: the driver's state is per process and a child starts with
// no device open (hal.md §1.4): the hooks have nothing to hold, and the child's new backend
// finds the library still loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "drivers/device_backend.h"
#include "drivers/hal/hal_library.h"
#include "drivers/hal/hal_units.h"
#include "drivers/host/posix_host_services.h"

namespace aclvmm::dev::hal {

class HalBackend final : public DeviceBackend {
 public:
  // The bare backend, without the injection decorator (open_device_backend adds it).
  static Result open(const BackendOptions& options, BackendListener& listener,
                     std::unique_ptr<DeviceBackend>* out);
  // Gives the driver back what this backend made and nobody released (device_backend.h,
  // "Destruction"): mappings, then handles, blocks and managed ranges. The core has released
  // everything first when it tears down; a conformance case or a failed start may not have.
  ~HalBackend() override;

  const char* name() const override { return "hal"; }
  const Capabilities& capabilities() const override { return capabilities_; }
  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  BlockAllocator& blocks() override { return blocks_; }
  DeviceMmu& mmu() override { return mmu_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  Sharing& sharing() override { return sharing_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }
  std::string describe(Result result) const override;
  void visit_statistics(StatisticsVisitor& visitor) const override;
  void prepare_fork() override {}
  void after_fork_parent() override {}
  void after_fork_child() override {}
  void release_inherited() override {}

  const HalLibrary& library() const { return *library_; }

 private:
  HalBackend(std::unique_ptr<HalLibrary> library, BackendListener& listener, bool standalone);

  // The fake driver library's counters are the process's; this backend reports what happened
  // since it opened (a second backend in the process starts from 0, as emu's does).
  void take_statistics_baseline();

  std::unique_ptr<HalLibrary> library_;
  HalContext ctx_;
  struct Baseline {
    std::string group, name;
    uint64_t value;
  };
  std::vector<Baseline> statistics_baseline_;  // the counters' values at open
  host::PosixHostServices host_;
  Capabilities capabilities_;
  HalDevices devices_;
  HalWindows windows_;
  HalPhysical physical_;
  HalBlocks blocks_;
  HalMmu mmu_;
  HalSharing sharing_;
  HalUnified unified_;
  HalCopyEngine copy_engine_;
};

// The vendor runtime is in the process (hal.md §6: libruntime.so loaded, or rtSetDevice
// resolvable).
bool vendor_runtime_present();

}  // namespace aclvmm::dev::hal
