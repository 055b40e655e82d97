// The statistics snapshot of emulation.md section 8 (aclvmmStatsJson, ACLVMM_STATS_FILE): the
// runtime's devices, live objects, managed memory and sharing, and the process counters of
// observability/stats.h.
#pragma once

#include <string>

namespace aclvmm {

class Runtime;

// `start`: start the runtime first if needed (the API call); at exit the snapshot is taken as is.
std::string stats_json(Runtime& rt, bool start = true);
// Writes the snapshot to $ACLVMM_STATS_FILE, if set (called once at process exit).
void write_stats_file_at_exit(Runtime& rt);

}  // namespace aclvmm
