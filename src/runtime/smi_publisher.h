// SmiPublisher: this process's statistics segment for aclvmm-smi (docs/smi.md).
//
// The first runtime start creates <ACLVMM_SMI_DIR or /dev/shm>/aclvmm.<uid>.<pid>
// (observability/smi_layout.h) through the device backend's HostServices; every start hands each
// device's MemoryPool a UsageMirror, a counter inside the mapped segment that the pool adds to and
// subtracts from together with its own count, and marks the segment active. Since the device
// backend's ledger is the capacity authority (docs/device-interface.md D8), those changes are the
// ledger's usage_changed reports for that start's backend (runtime/core_listener.h, connect_pools).
// Teardown marks it inactive (the monitor stops listing the process); process exit removes the
// file. A process that dies without running its exit handlers leaves the file behind; monitors
// recognise it by the pid being gone or having another start time.
//
// Why the pools write through instead of a periodic snapshot: the update is one relaxed atomic
// add on a cache line only that device's charges touch, with no system call, while a snapshot
// needs a thread in every process and shows stale numbers in between.
//
// Why one segment for the whole process rather than one per runtime start: a pool that outlives
// teardown (memory still held by a late task) keeps adding to and subtracting from the same
// counters, so they keep meaning "what this process holds", and aclFinalize/aclInit cycles do not
// replace the file and its mapping each time. The counters are never reset: every charge is
// paired with its uncharge, reported by the backend that made it to the pools of its own start.
//
// Publishing is best effort: a failure logs one WARNING per process and the application goes on.
// The file is created so that no other user's file is ever adopted or replaced, and only in a
// directory nobody else can rearrange (drivers/host/stats_segment.h).
//
// The live counts (IPC keys and imports, host registrations, binaries: Segment::live) are not
// the pools': the modules that keep those objects publish each new count through
// observability/live_counts.h, into the counters this publisher installs when it creates the
// segment (and clears when a forked child drops its parent's).
//
// Fork: the child's copy of the mapping becomes private at the fork (the driver's atfork
// handler), so pools the child inherited never count into the parent's file; the child drops
// the inherited segment at its first use here (own_segment) and publishes its own at its next
// runtime start. Only the creating process deactivates or removes a file.
// Called only under the runtime's lifetime lock (and at exit).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "drivers/host_services.h"
#include "runtime/config.h"
#include "vmm/physical.h"

namespace aclvmm {

class SmiPublisher {
 public:
  static SmiPublisher& get();

  // At a runtime start: creates the segment the first time, (re)writes its header for `config` and
  // marks it active. Returns one mirror per device of `config` (empty ones when nothing is
  // published).
  std::vector<UsageMirror> publish(dev::HostServices& host, const Config& config);
  // At teardown: the process is no longer listed.
  void deactivate();
  // At process exit: removes the file.
  void remove();

 private:
  SmiPublisher() = default;
  void warn_once(const std::string& what);
  // The segment, unless it was inherited over fork (then it is the parent's and is dropped).
  bool own_segment();

  std::shared_ptr<dev::StatisticsSegment> segment_;
  bool tried_ = false;  // the directory is read at the first start only
  bool warned_ = false;
};

}  // namespace aclvmm
