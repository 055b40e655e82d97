#include "drivers/unsupported_units.h"

#include <cerrno>

namespace aclvmm::dev {

Result not_supported() { return Result::from_errno(EOPNOTSUPP); }

Result UnsupportedWindows::reserve(const ReserveRequest&, uint64_t*) { return not_supported(); }
Result UnsupportedWindows::release(uint64_t, uint64_t) { return not_supported(); }

Result UnsupportedBlocks::allocate(const BlockRequest&, Block*) { return not_supported(); }
Result UnsupportedBlocks::free(uint64_t) { return not_supported(); }

Result UnsupportedMmu::map(uint64_t, uint64_t, PhysicalId, uint64_t, InitialAccess) {
  return not_supported();
}
Result UnsupportedMmu::unmap(uint64_t, uint64_t) { return not_supported(); }
Result UnsupportedMmu::set_access(uint64_t, uint64_t, const AccessGrant*, size_t,
                                  size_t* applied) {
  if (applied != nullptr) *applied = 0;
  return not_supported();
}
Result UnsupportedMmu::access(uint64_t, Location, Access*) const { return not_supported(); }
Result UnsupportedMmu::grant_peer(uint64_t, uint64_t, DeviceIndex) { return not_supported(); }
Result UnsupportedMmu::query(uint64_t, AddressInfo*) const { return not_supported(); }
Result UnsupportedMmu::register_host(uint64_t, uint64_t, DeviceIndex, bool) {
  return not_supported();
}
Result UnsupportedMmu::unregister_host(uint64_t, uint64_t, DeviceIndex, bool) {
  return not_supported();
}

CopyOutcome UnsupportedCopyEngine::copy(const CopyRequest&) {
  return CopyOutcome{not_supported(), CopyOutcome::Side::kNone, 0};
}
CopyOutcome UnsupportedCopyEngine::fill(const FillRequest&) {
  return CopyOutcome{not_supported(), CopyOutcome::Side::kNone, 0};
}
Result UnsupportedCopyEngine::create_queue(const QueueConfig&, QueueId*) {
  return not_supported();
}
void UnsupportedCopyEngine::destroy_queue(QueueId) {}
void UnsupportedCopyEngine::cancel(QueueId) {}
Result UnsupportedCopyEngine::submit(QueueId, const Command&, Fence*) { return not_supported(); }
Result UnsupportedCopyEngine::wait(QueueId, Fence, int) { return not_supported(); }
Fence UnsupportedCopyEngine::completed(QueueId) const { return 0; }

Result UnsupportedSharing::export_memory(PhysicalId, ShareToken*) { return not_supported(); }
Result UnsupportedSharing::export_fabric(PhysicalId, FabricToken*) { return not_supported(); }
Result UnsupportedSharing::disable_validation(ShareToken) { return not_supported(); }
Result UnsupportedSharing::set_pids(ShareToken, const int32_t*, uint32_t) {
  return not_supported();
}
Result UnsupportedSharing::token_of_fabric(const FabricToken&, ShareToken*) {
  return not_supported();
}
Result UnsupportedSharing::import_memory(ShareToken, DeviceIndex, ImportedMemory*) {
  return not_supported();
}
Result UnsupportedSharing::import_fabric(const FabricToken&, DeviceIndex, ImportedMemory*) {
  return not_supported();
}

Result UnsupportedUnified::allocate(uint64_t, uint64_t*) { return not_supported(); }
Result UnsupportedUnified::free(uint64_t, FreeMode) { return not_supported(); }
Result UnsupportedUnified::advise(uint64_t, uint64_t, ManagedAdvice, Location) {
  return not_supported();
}
Result UnsupportedUnified::prefetch(uint64_t, uint64_t, Location) { return not_supported(); }
Result UnsupportedUnified::attribute(ManagedAttribute, uint64_t, uint64_t, int32_t*, size_t) {
  return not_supported();
}

void visit_unsupported_managed_statistics(StatisticsVisitor& visitor) {
  visitor.flag("managed", "fault_tracking", false);
  visitor.flag("managed", "cpu_write_tracking", false);
  for (const char* name : {"host_faults", "device_faults", "bytes_to_device", "bytes_to_host",
                           "evictions", "prefetch_bytes", "read_copy_invalidations"}) {
    visitor.counter("managed", name, 0);
  }
}

void visit_unsupported_sharing_statistics(StatisticsVisitor& visitor) {
  visitor.counter("ipc", "imports_denied", 0);
}

}  // namespace aclvmm::dev
