// The units a backend does not have (yet): every operation answers kNotSupported, and their
// statistics are the idle ones (device_backend.h: "a unit the backend lacks answers
// kNotSupported to everything and its capabilities say so").
//
// The migration of issue 14 gives each backend its units one step at a time (the device MMU in
// step 2, copies in 3, queues in 4, sharing in 5, managed memory in 6, windows in 7); until then
// a backend hands out these. A hal backend without managed memory keeps UnsupportedUnified.
//
// Threading: no state (the windows' layout is an empty constant).
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/address_windows.h"
#include "drivers/block_allocator.h"
#include "drivers/copy_engine.h"
#include "drivers/device_backend.h"
#include "drivers/device_mmu.h"
#include "drivers/sharing.h"
#include "drivers/unified_memory.h"

namespace aclvmm::dev {

// Every answer of these units.
Result not_supported();

// No windows: the layout is empty (every range size 0); reserve and release answer kNotSupported.
class UnsupportedWindows final : public AddressWindows {
 public:
  const WindowLayout& layout() const override { return layout_; }
  Result reserve(const ReserveRequest& request, uint64_t* address) override;
  Result release(uint64_t address, uint64_t size) override;

 private:
  const WindowLayout layout_{};
};

class UnsupportedBlocks final : public BlockAllocator {
 public:
  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;
};

class UnsupportedMmu final : public DeviceMmu {
 public:
  Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
             InitialAccess initial) override;
  Result unmap(uint64_t va, uint64_t size) override;
  Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                    size_t* applied) override;  // *applied = 0
  Result access(uint64_t va, Location location, Access* out) const override;
  Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) override;
  Result query(uint64_t va, AddressInfo* out) const override;
  Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
};

// Queues cannot be created, so no completion ever runs; completed() of any queue is 0.
class UnsupportedCopyEngine final : public CopyEngine {
 public:
  CopyOutcome copy(const CopyRequest& request) override;
  CopyOutcome fill(const FillRequest& request) override;
  Result create_queue(const QueueConfig& config, QueueId* out) override;
  void destroy_queue(QueueId queue) override;
  void cancel(QueueId queue) override;
  Result submit(QueueId queue, const Command& command, Fence* fence) override;
  Result wait(QueueId queue, Fence fence, int timeout_ms) override;
  Fence completed(QueueId queue) const override;
};

class UnsupportedSharing final : public Sharing {
 public:
  Result export_memory(PhysicalId memory, ShareToken* out) override;
  Result export_fabric(PhysicalId memory, FabricToken* inout) override;
  Result disable_validation(ShareToken token) override;
  Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) override;
  Result token_of_fabric(const FabricToken& fabric, ShareToken* out) override;
  Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) override;
  Result import_fabric(const FabricToken& fabric, DeviceIndex device,
                       ImportedMemory* out) override;
};

class UnsupportedUnified final : public UnifiedMemory {
 public:
  Result allocate(uint64_t size, uint64_t* address) override;
  Result free(uint64_t address, FreeMode mode) override;
  Result advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) override;
  Result prefetch(uint64_t address, uint64_t size, Location target) override;
  Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size, int32_t* values,
                   size_t slots) override;
  ManagedTracking tracking() const override { return {}; }  // nothing tracked
};

// The statistics DeviceBackend::visit_statistics requires, as a backend without the unit reports
// them: group "managed" (no tracking, every counter 0) and group "ipc" (imports_denied 0).
void visit_unsupported_managed_statistics(StatisticsVisitor& visitor);
void visit_unsupported_sharing_statistics(StatisticsVisitor& visitor);

// A backend part-way through the migration: the units no backend has yet (windows, blocks,
// MMU, copy engine, sharing, managed memory) come from here with their idle statistics, and the
// fork hooks do nothing (none of these units holds a lock or a thread). A backend overrides an
// accessor when its migration step gives it the unit, and drops this base when it has them all.
class PartialBackend : public DeviceBackend {
 public:
  AddressWindows& windows() override { return windows_; }
  BlockAllocator& blocks() override { return blocks_; }
  DeviceMmu& mmu() override { return mmu_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  Sharing& sharing() override { return sharing_; }
  UnifiedMemory& unified_memory() override { return unified_; }

  void visit_statistics(StatisticsVisitor& visitor) const override {
    visit_unsupported_managed_statistics(visitor);
    visit_unsupported_sharing_statistics(visitor);
  }

  void prepare_fork() override {}
  void after_fork_parent() override {}
  void after_fork_child() override {}
  void release_inherited() override {}

 private:
  UnsupportedWindows windows_;
  UnsupportedBlocks blocks_;
  UnsupportedMmu mmu_;
  UnsupportedCopyEngine copy_engine_;
  UnsupportedSharing sharing_;
  UnsupportedUnified unified_;
};

}  // namespace aclvmm::dev
