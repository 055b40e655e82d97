// The statistics snapshot of emulation.md section 8 (aclvmmStatsJson, ACLVMM_STATS_FILE).
#pragma once

#include <string>

namespace aclvmm {

std::string stats_json();
// Writes the snapshot to $ACLVMM_STATS_FILE, if set (called once at process exit).
void write_stats_file_at_exit();

}  // namespace aclvmm
