// The statistics snapshot of emulation.md section 8 (aclvmmStatsJson, ACLVMM_STATS_FILE): the
// runtime's devices, live objects, managed memory and sharing, and the process counters of
// observability/stats.h.
#pragma once

#include <string>

namespace aclvmm {

// Only named here: the snapshot's .cpp includes what it reads.
class AddressSpace;
class DeviceDirectory;
class ManagedMemory;
class Runtime;
class ShareService;
struct Config;
struct PhysicalAllocation;
template <typename T>
class HandleTable;

// What a snapshot reads: one start's configuration, the devices' pools, and the objects the
// runtime holds. A Runtime gives its own (below); a unit test gives the pieces it built over
// the fake backend.
struct StatsSources {
  const Config& config;
  const DeviceDirectory& devices;
  const AddressSpace& space;
  const HandleTable<PhysicalAllocation>& physical;
  const ShareService& sharing;
  const ManagedMemory& managed;
  size_t binaries = 0;            // kernel binaries loaded (runtime-extra.md §11)
  size_t host_registrations = 0;  // aclrtHostRegister[V2] not undone
  size_t ipc_keys = 0;            // IPC keys exported and not closed (runtime-extra.md §11)
  size_t ipc_imports = 0;         // IPC imports not closed, each counted once
};

std::string stats_json(const StatsSources& sources);
// `start`: start the runtime first if needed (the API call); at exit the snapshot is taken as is.
std::string stats_json(Runtime& rt, bool start = true);
// Writes the snapshot to $ACLVMM_STATS_FILE, if set (called once at process exit).
void write_stats_file_at_exit(Runtime& rt);

}  // namespace aclvmm
