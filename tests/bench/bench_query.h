#pragma once

namespace bench {
// Unmaps and frees the mapping sets the query benchmarks built (before aclFinalize).
void release_mapped_sets();
}  // namespace bench
