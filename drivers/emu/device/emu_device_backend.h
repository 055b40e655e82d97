// EmuDeviceBackend: the emulated NPU behind the device interface (docs/device-interface.md,
// migration steps 1–2b). It has its devices (devices.h), the host services shared with hal
// (drivers/host/), physical memory (physical_allocator.h) over today's emu modules, the
// device MMU with its page table and CPU views (device_mmu.h, step 2), blocks (blocks.h,
// step 2b), sharing (sharing/, step 5: share ids, endpoints, listener, whitelist), the copy
// engine's synchronous form (copy_engine.h, step 3), the address windows (windows.h, step 7:
// claimed once per process, shared by its backends), unified memory (unified/, step 6: the
// managed residency model, its fault thread and the kManaged copy endpoints); every
// other unit answers kNotSupported until its migration step gives it one (unsupported_units.h),
// and the capabilities claim nothing of those.
//
// Options: EmulationOptions; device_count 1..kMaxDevices and device_memory > 0 (the core
// resolves the SoC's size), else kInvalidArgument. The host's capacity is its MemTotal.
//
// Threading and fork: every unit but sharing, unified memory and the windows' free lists is
// lock-free; the fork hooks hold sharing's lock and the windows' across fork (in that order),
// the parent's endpoints and listener are dropped in the child, and so is the parent's fault
// tracking descriptor (unified memory; the child never uses the parent's ranges); release_inherited() gives back the windows and no-UC
// ranges the child inherited (windows.h), so that the child's new backend claims them afresh
// where the parent had them.
#pragma once

#include <memory>
#include <string>

#include "drivers/device_backend.h"
#include "drivers/emu/device/blocks.h"
#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/copy_engine.h"
#include "drivers/emu/device/device_mmu.h"
#include "drivers/emu/device/devices.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/windows.h"
#include "drivers/emu/sharing/transport.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/emu/unified/emu_unified.h"
#include "drivers/host/posix_host_services.h"
#include "drivers/unsupported_units.h"

namespace aclvmm::dev::emu {

class EmuDeviceBackend final : public PartialBackend {
 public:
  // The bare backend, without the injection decorator (open_device_backend adds it).
  static Result open(const BackendOptions& options, BackendListener& listener,
                     std::unique_ptr<DeviceBackend>* out);

  const char* name() const override { return "emu"; }
  const Capabilities& capabilities() const override { return capabilities_; }

  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  DeviceMmu& mmu() override { return mmu_; }
  Sharing& sharing() override { return sharing_; }
  BlockAllocator& blocks() override { return blocks_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }

  std::string describe(Result result) const override;
  void visit_statistics(StatisticsVisitor& visitor) const override;
  // The windows are process-wide: dev::prepare_fork_process() holds them across fork.
  void prepare_fork() override { sharing_.prepare_fork(); }
  void after_fork_parent() override { sharing_.after_fork_parent(); }
  void after_fork_child() override {
    sharing_.after_fork_child();
    unified_.after_fork_child();
  }
  void release_inherited() override { EmuWindows::release_inherited(); }

  // Test hooks: mappings in the page table, live exports.
  size_t live_mappings() const { return mmu_.live_mappings(); }
  size_t live_exports() const { return sharing_.live_exports(); }

 private:
  EmuDeviceBackend(const EmulationOptions& options, BackendListener& listener);

  host::PosixHostServices host_;  // first: the ledger and the capabilities ask it
  CapacityLedger ledger_;
  Capabilities capabilities_;
  EmuDevices devices_;
  EmuWindows windows_;  // before the units that place ranges in them
  EmuPhysicalAllocator physical_;
  share::UnixShareTransport share_transport_;
  EmuSharing sharing_;  // before the MMU: a mapped object's release may still end its export
  EmuDeviceMmu mmu_;  // its destructor drops the objects still mapped or allocated as blocks
  EmuBlocks blocks_;  // over physical_ and mmu_; holds nothing of its own
  EmuUnified unified_;  // over the ledger and the managed window; frees what is left first
  EmuCopyEngine copy_engine_;  // over mmu_'s page table and unified_; a running copy holds its
                               // own references
};

}  // namespace aclvmm::dev::emu
