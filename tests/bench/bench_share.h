#pragma once

namespace bench {
// The sharing benchmarks re-execute this binary as the exporting process.
bool is_exporter(int argc, char** argv);
int run_exporter();
}  // namespace bench
