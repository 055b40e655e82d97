#pragma once

namespace bench {
// The sharing benchmarks re-execute this binary as the exporting process.
bool is_exporter(int argc, char** argv);
int run_exporter();
// The cold-path sharing benchmarks (bench_share_cold.cpp) re-execute it as the importing peer.
bool is_share_peer(int argc, char** argv);
int run_share_peer();
}  // namespace bench
