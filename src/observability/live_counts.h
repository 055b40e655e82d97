// Live counts: how many IPC keys, IPC imports, host registrations and kernel binaries this
// process holds, published into its aclvmm-smi segment (observability/smi_layout.h,
// Segment::live; docs/smi.md) whenever one changes.
//
// The modules that keep those objects (vmm/ipc_keys, vmm/host_registrations, runtime/kernels)
// call publish_live_count with the new count right after their records change, so that the last
// value written is the current one: under the lock that orders the changes (IpcKeys,
// HostRegistrations), or reading the count again after writing it (Kernels). The call is
// one atomic load and, when a segment is published, one relaxed store: no lock, no system call,
// never a failure. Without a segment (none created yet, ACLVMM_SMI_DIR=none, creation refused)
// it does nothing.
//
// The target is the SmiPublisher's (runtime/smi_publisher.h): it installs the counters of the
// segment it created, which stays mapped for the process's life, and clears them when a forked
// child drops its parent's segment. A new segment starts at zero, which is what every count is at
// the first start of a runtime (and after each teardown, which releases every such object and so
// publishes zeros).
#pragma once

#include <atomic>
#include <cstdint>

#include "observability/smi_layout.h"

namespace aclvmm {

using smi::LiveCount;

// Writes `value` as the current count of `kind` into the published segment, if any.
void publish_live_count(LiveCount kind, uint64_t value) noexcept;

// SmiPublisher only: the segment's smi::kLiveCounts counters (Segment::live), or nullptr.
void set_live_count_target(std::atomic<uint64_t>* counters) noexcept;

}  // namespace aclvmm
