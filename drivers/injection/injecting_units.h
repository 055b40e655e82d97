// The injecting decorators of the nine units (injecting_backend.h says why and how they are
// used). Each holds the wrapped unit and the listener's InjectionGate; an operation with a
// "dev.*" step (injection_steps.h) asks the gate first and, when the rule fires, returns its errno
// without calling the wrapped unit, so nothing changed below. Operations without a step (queries,
// layout, destroy_queue, wait) only forward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "drivers/backend_listener.h"
#include "drivers/device_backend.h"

namespace aclvmm::dev::injection {

class InjectingDevices final : public DeviceManager {
 public:
  InjectingDevices(DeviceManager& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  int32_t device_count() const override { return inner_.device_count(); }
  Result properties(DeviceIndex device, DeviceProperties* out) const override {
    return inner_.properties(device, out);
  }
  Result open(DeviceIndex device) override;
  Result close(DeviceIndex device) override;
  Result memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) override {
    return inner_.memory_info(device, kind, out);
  }
  Result enable_peer(DeviceIndex device, DeviceIndex peer) override;
  Result disable_peer(DeviceIndex device, DeviceIndex peer) override {
    return inner_.disable_peer(device, peer);
  }
  bool can_access_peer(DeviceIndex device, DeviceIndex peer) const override {
    return inner_.can_access_peer(device, peer);
  }
  int32_t bare_tgid() const override { return inner_.bare_tgid(); }

 private:
  DeviceManager& inner_;
  const InjectionGate gate_;
};

class InjectingWindows final : public AddressWindows {
 public:
  InjectingWindows(AddressWindows& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  const WindowLayout& layout() const override { return inner_.layout(); }
  Result reserve(const ReserveRequest& request, uint64_t* address) override;
  Result release(uint64_t address, uint64_t size) override;

 private:
  AddressWindows& inner_;
  const InjectionGate gate_;
};

class InjectingPhysical final : public PhysicalAllocator {
 public:
  InjectingPhysical(PhysicalAllocator& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  Result create(const PhysicalSpec& spec, PhysicalId* out) override;
  Result release(PhysicalId memory) override;
  Result properties(PhysicalId memory, PhysicalProperties* out) const override {
    return inner_.properties(memory, out);
  }
  Result granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const override {
    return inner_.granularity(spec, option, out);
  }
  Result set_map_route(PhysicalId memory, uint32_t route) override;
  Result map_route(PhysicalId memory, uint32_t* route) const override {
    return inner_.map_route(memory, route);
  }

 private:
  PhysicalAllocator& inner_;
  const InjectionGate gate_;
};

class InjectingBlocks final : public BlockAllocator {
 public:
  InjectingBlocks(BlockAllocator& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;

 private:
  BlockAllocator& inner_;
  const InjectionGate gate_;
};

class InjectingMmu final : public DeviceMmu {
 public:
  InjectingMmu(DeviceMmu& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
             InitialAccess initial) override;
  Result unmap(uint64_t va, uint64_t size) override;
  // An injected failure applied nothing: *applied = 0.
  Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                    size_t* applied) override;
  Result access(uint64_t va, Location location, Access* out) const override {
    return inner_.access(va, location, out);
  }
  Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) override;
  Result query(uint64_t va, AddressInfo* out) const override { return inner_.query(va, out); }
  Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  // Undoing has no step of its own (the core's rollback must be able to rely on it).
  Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override {
    return inner_.unregister_host(va, size, device, pin);
  }

 private:
  DeviceMmu& inner_;
  const InjectionGate gate_;
};

// dev.queue.execute is not checked here: a command runs on the backend's queue thread, where
// only the backend's executor can fail it (injection_steps.h).
class InjectingCopyEngine final : public CopyEngine {
 public:
  InjectingCopyEngine(CopyEngine& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  // An injected failure names no side and no address: nothing was tried.
  CopyOutcome copy(const CopyRequest& request) override;
  CopyOutcome fill(const FillRequest& request) override;
  Result create_queue(const QueueConfig& config, QueueId* out) override;
  void destroy_queue(QueueId queue) override { inner_.destroy_queue(queue); }
  void cancel(QueueId queue) override { inner_.cancel(queue); }
  // An injected failure queues nothing, so the completion never runs (copy_engine.h).
  Result submit(QueueId queue, const Command& command, Fence* fence) override;
  Result wait(QueueId queue, Fence fence, int timeout_ms) override {
    return inner_.wait(queue, fence, timeout_ms);
  }
  Fence completed(QueueId queue) const override { return inner_.completed(queue); }

 private:
  CopyEngine& inner_;
  const InjectionGate gate_;
};

class InjectingSharing final : public Sharing {
 public:
  InjectingSharing(Sharing& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  Result export_memory(PhysicalId memory, ShareToken* out) override;
  Result export_fabric(PhysicalId memory, FabricToken* inout) override;
  Result disable_validation(ShareToken token) override;
  Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) override;
  Result token_of_fabric(const FabricToken& fabric, ShareToken* out) override {
    return inner_.token_of_fabric(fabric, out);
  }
  Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) override;
  Result import_fabric(const FabricToken& fabric, DeviceIndex device,
                       ImportedMemory* out) override;
  Result ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) override;
  Result ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) override;
  Result ipc_set_link(const IpcKey& key, uint32_t link) override;
  Result ipc_close_export(const IpcKey& key) override;
  // Not a step: revoking cannot fail (the memory is already gone).
  void ipc_revoke(const IpcKey& key) override { inner_.ipc_revoke(key); }
  Result ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) override;

 private:
  Sharing& inner_;
  const InjectionGate gate_;
};

class InjectingUnified final : public UnifiedMemory {
 public:
  InjectingUnified(UnifiedMemory& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  Result allocate(uint64_t size, uint64_t* address) override;
  Result free(uint64_t address, FreeMode mode) override;
  Result advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) override;
  Result prefetch(uint64_t address, uint64_t size, Location target) override;
  Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size, int32_t* values,
                   size_t slots) override {
    return inner_.attribute(attribute, address, size, values, slots);
  }
  ManagedTracking tracking() const override { return inner_.tracking(); }

 private:
  UnifiedMemory& inner_;
  const InjectionGate gate_;
};

class InjectingHost final : public HostServices {
 public:
  InjectingHost(HostServices& inner, InjectionGate gate) : inner_(inner), gate_(gate) {}
  uint64_t page_size() const override { return inner_.page_size(); }
  uint64_t memory_total() override { return inner_.memory_total(); }
  uint64_t memory_free() override { return inner_.memory_free(); }
  int32_t numa_node_count() const override { return inner_.numa_node_count(); }
  int32_t current_numa_node() override { return inner_.current_numa_node(); }
  Result create_statistics_segment(const std::string& dir, const std::string& prefix, size_t size,
                                   std::shared_ptr<StatisticsSegment>* out) override;
  // An injected failure is "no table" (nullptr), as when the memory cannot be had.
  void* allocate_table(uint64_t bytes) override;

 private:
  HostServices& inner_;
  const InjectionGate gate_;
};

}  // namespace aclvmm::dev::injection
