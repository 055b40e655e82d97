// Process-wide counters of the statistics snapshot (emulation.md section 8) that the layers below
// the runtime count into; the snapshot itself is composed by runtime/stats_snapshot.h.
#pragma once

#include <cstdint>
#include <string>

namespace aclvmm {

// "links": mappings made over each map route (aclrtMemLinkType: SIO, HCCS, UB one-port, UB
// multi-port) since the process started. A mapping counts under the route its handle carried
// when it was mapped; handles without a route are not counted.
inline constexpr uint32_t kLinkTypes = 4;
void count_link_mapping(uint32_t link);
// Takes a count back for a mapping that a failing call undid, so the failure leaves no trace.
void uncount_link_mapping(uint32_t link);
// The "links" object of the snapshot.
std::string links_json();

}  // namespace aclvmm
