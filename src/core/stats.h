// The statistics snapshot of emulation.md section 8 (aclvmmStatsJson, ACLVMM_STATS_FILE).
#pragma once

#include <cstdint>
#include <string>

namespace aclvmm {

// `start`: start the runtime first if needed (the API call); at exit the snapshot is taken as is.
std::string stats_json(bool start = true);
// "links": mappings made over each map route (aclrtMemLinkType: SIO, HCCS, UB one-port, UB
// multi-port) since the process started. A mapping counts under the route its handle carried
// when it was mapped; handles without a route are not counted.
inline constexpr uint32_t kLinkTypes = 4;
void count_link_mapping(uint32_t link);
// Takes a count back for a mapping that a failing call undid, so the failure leaves no trace.
void uncount_link_mapping(uint32_t link);

// Writes the snapshot to $ACLVMM_STATS_FILE, if set (called once at process exit).
void write_stats_file_at_exit();

}  // namespace aclvmm
