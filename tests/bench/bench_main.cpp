// aclvmm_bench: every benchmark, then the table of ratios against the targets.
//
//   aclvmm_bench [google benchmark flags] [--fail-on-miss]
//
// With --fail-on-miss the exit status is 1 when a target was missed (tests/bench/run.sh);
// otherwise timings never fail the run (CI's smoke run only checks that everything still works).
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "bench_query.h"
#ifdef ACLVMM_BENCH_FABRIC
#include "bench_fabric.h"
#endif
#include "bench_share.h"
#include "report.h"

int main(int argc, char** argv) {
  if (bench::is_exporter(argc, argv)) return bench::run_exporter();
  if (bench::is_share_peer(argc, argv)) return bench::run_share_peer();
#ifdef ACLVMM_BENCH_FABRIC
  if (int status = 0; bench::fabric_role(argc, argv, &status)) return status;
#endif
  bool fail_on_miss = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fail-on-miss") == 0) {
      fail_on_miss = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
    fprintf(stderr, "aclvmm_bench: aclInit/aclrtSetDevice failed\n");
    return 1;
  }
  bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  bench::release_mapped_sets();
#ifdef ACLVMM_BENCH_FABRIC
  bench::release_fabric_rig();
#endif
  const int misses = bench::print_table(reporter.results(), bench::target_rows());
  aclrtResetDeviceForce(0);
  aclFinalize();
  return fail_on_miss && misses > 0 ? 1 : 0;
}
