// The names of the failure-injection steps below the core (ACLVMM_FAULTS, aclvmmInjectFault):
// docs/device-interface.md, "Failure injection".
//
// Two levels:
// - "dev.<group>.<operation>": one per operation of the device interface that changes state
//   (queries have none). Checked by the injecting decorator (drivers/injection/, wrapped around
//   every backend by open_device_backend), so the core's rollback of every multi-step call is
//   testable the same way on emu, fake and hal. The rule's code is an errno; the operation
//   returns it as Result::from_errno without running. The decorator learns the rules from the
//   BackendListener (InjectionGate), never from the core's headers. One exception:
//   dev.queue.execute is checked where the command runs (below).
// - "<backend>.<unit>.<step>": a step inside one backend, checked by that backend through
//   BackendListener/InjectionGate where it makes the system call (or driver call) that can
//   fail. Only the backend can reach these: they run inside an interface operation (a CPU
//   mapping inside DeviceMmu::map) or on the backend's own threads (the share listener, the
//   fault thread).
// The words are the domain's: "fault" is a page fault here (emu.cpu_fault.*), "injection" the
// testing device.
//
// The names of the operating-system seam before issue 14 ("drv.*", which tests and users' rules
// spell) stay accepted: kLegacyStepNames maps each to the step that does the same work now, and the core's rule registry stores a rule under the
// new name, so a rule armed either way fires once and aclvmmFaultRemaining answers for both.
#pragma once

#include <cstddef>

namespace aclvmm::dev::steps {

// ---- interface level (every backend)
inline constexpr const char kDeviceOpen[] = "dev.device.open";
inline constexpr const char kDeviceClose[] = "dev.device.close";
inline constexpr const char kDevicePeer[] = "dev.device.enable_peer";
inline constexpr const char kWindowReserve[] = "dev.va.reserve";
inline constexpr const char kWindowRelease[] = "dev.va.release";
inline constexpr const char kPhysicalCreate[] = "dev.phys.create";
inline constexpr const char kPhysicalRelease[] = "dev.phys.release";
inline constexpr const char kPhysicalRoute[] = "dev.phys.set_map_route";
inline constexpr const char kBlockAllocate[] = "dev.block.allocate";
inline constexpr const char kBlockFree[] = "dev.block.free";
inline constexpr const char kMmuMap[] = "dev.mmu.map";
inline constexpr const char kMmuUnmap[] = "dev.mmu.unmap";
inline constexpr const char kMmuSetAccess[] = "dev.mmu.set_access";
inline constexpr const char kMmuGrantPeer[] = "dev.mmu.grant_peer";
inline constexpr const char kMmuRegisterHost[] = "dev.mmu.register_host";
inline constexpr const char kCopySync[] = "dev.copy.copy";
inline constexpr const char kFillSync[] = "dev.copy.fill";
inline constexpr const char kQueueCreate[] = "dev.queue.create";
inline constexpr const char kQueueSubmit[] = "dev.queue.submit";
// The command fails when it runs: checked by the backend's queue executor through
// InjectionGate on its own thread (the decorator sees only the submit).
inline constexpr const char kQueueExecute[] = "dev.queue.execute";
inline constexpr const char kShareExport[] = "dev.share.export";
inline constexpr const char kShareDisableValidation[] = "dev.share.disable_validation";
inline constexpr const char kShareSetPids[] = "dev.share.set_pids";
inline constexpr const char kShareImport[] = "dev.share.import";
inline constexpr const char kShareIpcExport[] = "dev.share.ipc_export";
inline constexpr const char kShareIpcSetPids[] = "dev.share.ipc_set_pids";
inline constexpr const char kShareIpcSetLink[] = "dev.share.ipc_set_link";
inline constexpr const char kShareIpcClose[] = "dev.share.ipc_close";
inline constexpr const char kShareIpcImport[] = "dev.share.ipc_import";
inline constexpr const char kManagedAllocate[] = "dev.managed.allocate";
inline constexpr const char kManagedFree[] = "dev.managed.free";
inline constexpr const char kManagedAdvise[] = "dev.managed.advise";
inline constexpr const char kManagedPrefetch[] = "dev.managed.prefetch";
inline constexpr const char kHostStatsSegment[] = "dev.host.stats_segment";
inline constexpr const char kHostTable[] = "dev.host.allocate_table";

// Every interface-level step, for sweeps and for the decorator's test of its coverage.
inline constexpr const char* kInterfaceSteps[] = {
    kDeviceOpen,     kDeviceClose,      kDevicePeer,      kWindowReserve,
    kWindowRelease,  kPhysicalCreate,   kPhysicalRelease, kPhysicalRoute,
    kBlockAllocate,  kBlockFree,        kMmuMap,          kMmuUnmap,
    kMmuSetAccess,   kMmuGrantPeer,     kMmuRegisterHost, kCopySync,        kFillSync,
    kQueueCreate,    kQueueSubmit,      kQueueExecute,    kShareExport,
    kShareDisableValidation,            kShareSetPids,    kShareImport,
    kManagedAllocate, kManagedFree,     kManagedAdvise,   kManagedPrefetch,
    kHostStatsSegment, kHostTable,
};

// ---- inside the emu backend
inline constexpr const char kEmuWindowClaim[] = "emu.window.claim";
inline constexpr const char kEmuWindowClaimFixed[] = "emu.window.claim_fixed";
inline constexpr const char kEmuWindowRelease[] = "emu.window.release";
inline constexpr const char kEmuMemfdCreate[] = "emu.memfd.create";
inline constexpr const char kEmuMemfdAdopt[] = "emu.memfd.adopt";
inline constexpr const char kEmuMemfdRead[] = "emu.memfd.read";
inline constexpr const char kEmuMemfdWrite[] = "emu.memfd.write";
inline constexpr const char kEmuMemfdFill[] = "emu.memfd.fill";
inline constexpr const char kEmuMemfdPopulate[] = "emu.memfd.populate";
inline constexpr const char kEmuCpuMap[] = "emu.cpu.map";
inline constexpr const char kEmuCpuUnmap[] = "emu.cpu.unmap";
inline constexpr const char kEmuNumaBind[] = "emu.numa.bind";
inline constexpr const char kEmuHostCopy[] = "emu.host.copy";
inline constexpr const char kEmuHostFill[] = "emu.host.fill";
inline constexpr const char kEmuShareListen[] = "emu.share.listen";
inline constexpr const char kEmuShareConnect[] = "emu.share.connect";
inline constexpr const char kEmuShareAccept[] = "emu.share.accept";
inline constexpr const char kEmuShareSend[] = "emu.share.send";
inline constexpr const char kEmuShareRecv[] = "emu.share.recv";
inline constexpr const char kEmuSharePoll[] = "emu.share.poll";
inline constexpr const char kEmuCpuFaultStart[] = "emu.cpu_fault.start";
inline constexpr const char kEmuCpuFaultWatch[] = "emu.cpu_fault.watch";
inline constexpr const char kEmuCpuFaultUnwatch[] = "emu.cpu_fault.unwatch";
inline constexpr const char kEmuCpuFaultRevoke[] = "emu.cpu_fault.revoke";
inline constexpr const char kEmuCpuFaultResolve[] = "emu.cpu_fault.resolve";
inline constexpr const char kEmuCpuFaultResolveReadOnly[] = "emu.cpu_fault.resolve_read_only";
inline constexpr const char kEmuCpuFaultProtectWrites[] = "emu.cpu_fault.protect_writes";
inline constexpr const char kEmuCpuFaultAllowWrites[] = "emu.cpu_fault.allow_writes";
inline constexpr const char kEmuCpuFaultNext[] = "emu.cpu_fault.next";
inline constexpr const char kEmuQueueThread[] = "emu.queue.thread";  // a queue's worker thread

// ---- the hal backend (drivers/hal/): its only own system resource is a queue's host thread
inline constexpr const char kHalQueueThread[] = "hal.queue.thread";

// ---- host services (drivers/host/, every backend that uses them)
inline constexpr const char kHostShmSegment[] = "host.shm.segment";
inline constexpr const char kHostTableMap[] = "host.table.map";

struct LegacyStepName {
  const char* legacy;
  const char* current;
};

// Every name the old seam's decorator accepted, and the step that does its work now. Whatever name a rule is armed with, it fires at the same system call.
inline constexpr LegacyStepName kLegacyStepNames[] = {
    {"drv.claim_window", kEmuWindowClaim},
    {"drv.claim_fixed", kEmuWindowClaimFixed},
    {"drv.release_window", kEmuWindowRelease},
    {"drv.create_physical", kEmuMemfdCreate},
    {"drv.adopt_physical", kEmuMemfdAdopt},
    {"drv.map_cpu", kEmuCpuMap},
    {"drv.unmap_cpu", kEmuCpuUnmap},
    {"drv.bind_numa", kEmuNumaBind},
    {"drv.host_copy", kEmuHostCopy},
    {"drv.host_fill", kEmuHostFill},
    {"drv.read", kEmuMemfdRead},
    {"drv.write", kEmuMemfdWrite},
    {"drv.fill", kEmuMemfdFill},
    {"drv.populate", kEmuMemfdPopulate},
    {"drv.share_listen", kEmuShareListen},
    {"drv.share_connect", kEmuShareConnect},
    {"drv.share_accept", kEmuShareAccept},
    {"drv.share_send", kEmuShareSend},
    {"drv.share_recv", kEmuShareRecv},
    {"drv.share_poll", kEmuSharePoll},
    {"drv.uffd_start", kEmuCpuFaultStart},
    {"drv.uffd_watch", kEmuCpuFaultWatch},
    {"drv.uffd_unwatch", kEmuCpuFaultUnwatch},
    {"drv.uffd_revoke", kEmuCpuFaultRevoke},
    {"drv.uffd_resolve", kEmuCpuFaultResolve},
    {"drv.uffd_resolve_read_only", kEmuCpuFaultResolveReadOnly},
    {"drv.uffd_protect_writes", kEmuCpuFaultProtectWrites},
    {"drv.uffd_allow_writes", kEmuCpuFaultAllowWrites},
    {"drv.uffd_next_fault", kEmuCpuFaultNext},
    {"drv.stats_segment", kHostShmSegment},
    {"drv.allocate_table", kHostTableMap},
};

// The current name for `name`: itself unless it is a legacy one. Compares bytes, no allocation.
inline const char* current_step_name(const char* name) {
  for (const LegacyStepName& alias : kLegacyStepNames) {
    const char* a = alias.legacy;
    const char* b = name;
    while (*a != '\0' && *a == *b) ++a, ++b;
    if (*a == '\0' && *b == '\0') return alias.current;
  }
  return name;
}

}  // namespace aclvmm::dev::steps
