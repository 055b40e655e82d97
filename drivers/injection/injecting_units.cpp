#include "drivers/injection/injecting_units.h"

#include "drivers/injection_steps.h"

namespace aclvmm::dev::injection {
namespace {

// The operation `run`, unless the rule for `step` fires now: then its errno, and `run` never
// starts.
template <class Run>
Result unless_injected(const InjectionGate& gate, const char* step, Run&& run) {
  const Result injected = gate.check(step);
  return injected.ok() ? run() : injected;
}

CopyOutcome failed(Result result) { return CopyOutcome{result, CopyOutcome::Side::kNone, 0}; }

}  // namespace

Result InjectingDevices::open(DeviceIndex device) {
  return unless_injected(gate_, steps::kDeviceOpen, [&] { return inner_.open(device); });
}
Result InjectingDevices::close(DeviceIndex device) {
  return unless_injected(gate_, steps::kDeviceClose, [&] { return inner_.close(device); });
}
Result InjectingDevices::enable_peer(DeviceIndex device, DeviceIndex peer) {
  return unless_injected(gate_, steps::kDevicePeer,
                         [&] { return inner_.enable_peer(device, peer); });
}

Result InjectingWindows::reserve(const ReserveRequest& request, uint64_t* address) {
  return unless_injected(gate_, steps::kWindowReserve,
                         [&] { return inner_.reserve(request, address); });
}
Result InjectingWindows::release(uint64_t address, uint64_t size) {
  return unless_injected(gate_, steps::kWindowRelease,
                         [&] { return inner_.release(address, size); });
}

Result InjectingPhysical::create(const PhysicalSpec& spec, PhysicalId* out) {
  return unless_injected(gate_, steps::kPhysicalCreate, [&] { return inner_.create(spec, out); });
}
Result InjectingPhysical::release(PhysicalId memory) {
  return unless_injected(gate_, steps::kPhysicalRelease, [&] { return inner_.release(memory); });
}
Result InjectingPhysical::set_map_route(PhysicalId memory, uint32_t route) {
  return unless_injected(gate_, steps::kPhysicalRoute,
                         [&] { return inner_.set_map_route(memory, route); });
}

Result InjectingBlocks::allocate(const BlockRequest& request, Block* out) {
  return unless_injected(gate_, steps::kBlockAllocate,
                         [&] { return inner_.allocate(request, out); });
}
Result InjectingBlocks::free(uint64_t address) {
  return unless_injected(gate_, steps::kBlockFree, [&] { return inner_.free(address); });
}

Result InjectingMmu::map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
                         InitialAccess initial) {
  return unless_injected(gate_, steps::kMmuMap,
                         [&] { return inner_.map(va, size, memory, offset, initial); });
}
Result InjectingMmu::unmap(uint64_t va, uint64_t size) {
  return unless_injected(gate_, steps::kMmuUnmap, [&] { return inner_.unmap(va, size); });
}
Result InjectingMmu::set_access(uint64_t va, uint64_t size, const AccessGrant* grants,
                                size_t count, size_t* applied) {
  const Result injected = gate_.check(steps::kMmuSetAccess);
  if (injected.ok()) return inner_.set_access(va, size, grants, count, applied);
  if (applied != nullptr) *applied = 0;
  return injected;
}
Result InjectingMmu::register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) {
  return unless_injected(gate_, steps::kMmuRegisterHost,
                         [&] { return inner_.register_host(va, size, device, pin); });
}
Result InjectingMmu::grant_peer(uint64_t va, uint64_t size, DeviceIndex device) {
  return unless_injected(gate_, steps::kMmuGrantPeer,
                         [&] { return inner_.grant_peer(va, size, device); });
}

CopyOutcome InjectingCopyEngine::copy(const CopyRequest& request) {
  const Result injected = gate_.check(steps::kCopySync);
  return injected.ok() ? inner_.copy(request) : failed(injected);
}
CopyOutcome InjectingCopyEngine::fill(const FillRequest& request) {
  const Result injected = gate_.check(steps::kFillSync);
  return injected.ok() ? inner_.fill(request) : failed(injected);
}
Result InjectingCopyEngine::create_queue(const QueueConfig& config, QueueId* out) {
  return unless_injected(gate_, steps::kQueueCreate,
                         [&] { return inner_.create_queue(config, out); });
}
Result InjectingCopyEngine::submit(QueueId queue, const Command& command, Fence* fence) {
  return unless_injected(gate_, steps::kQueueSubmit,
                         [&] { return inner_.submit(queue, command, fence); });
}

Result InjectingSharing::export_memory(PhysicalId memory, ShareToken* out) {
  return unless_injected(gate_, steps::kShareExport,
                         [&] { return inner_.export_memory(memory, out); });
}
Result InjectingSharing::export_fabric(PhysicalId memory, FabricToken* inout) {
  return unless_injected(gate_, steps::kShareExport,
                         [&] { return inner_.export_fabric(memory, inout); });
}
Result InjectingSharing::disable_validation(ShareToken token) {
  return unless_injected(gate_, steps::kShareDisableValidation,
                         [&] { return inner_.disable_validation(token); });
}
Result InjectingSharing::set_pids(ShareToken token, const int32_t* pids, uint32_t count) {
  return unless_injected(gate_, steps::kShareSetPids,
                         [&] { return inner_.set_pids(token, pids, count); });
}
Result InjectingSharing::import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) {
  return unless_injected(gate_, steps::kShareImport,
                         [&] { return inner_.import_memory(token, device, out); });
}
Result InjectingSharing::import_fabric(const FabricToken& fabric, DeviceIndex device,
                                       ImportedMemory* out) {
  return unless_injected(gate_, steps::kShareImport,
                         [&] { return inner_.import_fabric(fabric, device, out); });
}

Result InjectingSharing::ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) {
  return unless_injected(gate_, steps::kShareIpcExport,
                         [&] { return inner_.ipc_export(range, validate_pids, out); });
}
Result InjectingSharing::ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) {
  return unless_injected(gate_, steps::kShareIpcSetPids,
                         [&] { return inner_.ipc_set_pids(key, pids, count); });
}
Result InjectingSharing::ipc_set_link(const IpcKey& key, uint32_t link) {
  return unless_injected(gate_, steps::kShareIpcSetLink,
                         [&] { return inner_.ipc_set_link(key, link); });
}
Result InjectingSharing::ipc_close_export(const IpcKey& key) {
  return unless_injected(gate_, steps::kShareIpcClose,
                         [&] { return inner_.ipc_close_export(key); });
}
Result InjectingSharing::ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) {
  return unless_injected(gate_, steps::kShareIpcImport,
                         [&] { return inner_.ipc_import(key, device, out); });
}

Result InjectingUnified::allocate(uint64_t size, uint64_t* address) {
  return unless_injected(gate_, steps::kManagedAllocate,
                         [&] { return inner_.allocate(size, address); });
}
Result InjectingUnified::free(uint64_t address, FreeMode mode) {
  return unless_injected(gate_, steps::kManagedFree, [&] { return inner_.free(address, mode); });
}
Result InjectingUnified::advise(uint64_t address, uint64_t size, ManagedAdvice advice,
                                Location where) {
  return unless_injected(gate_, steps::kManagedAdvise,
                         [&] { return inner_.advise(address, size, advice, where); });
}
Result InjectingUnified::prefetch(uint64_t address, uint64_t size, Location target) {
  return unless_injected(gate_, steps::kManagedPrefetch,
                         [&] { return inner_.prefetch(address, size, target); });
}

Result InjectingHost::create_statistics_segment(const std::string& dir, const std::string& prefix,
                                                size_t size,
                                                std::shared_ptr<StatisticsSegment>* out) {
  return unless_injected(gate_, steps::kHostStatsSegment,
                         [&] { return inner_.create_statistics_segment(dir, prefix, size, out); });
}
void* InjectingHost::allocate_table(uint64_t bytes) {
  return gate_.check(steps::kHostTable).ok() ? inner_.allocate_table(bytes) : nullptr;
}

}  // namespace aclvmm::dev::injection
