// The table tests/bench/run.sh prints: every aclvmm measurement next to its raw-syscall (or
// plain data structure) baseline from the same run, the ratio and the target.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace bench {

struct Measured {
  double ns_per_iter = 0;      // wall time per iteration
  double items_per_second = 0; // summed over threads (threaded runs count items)
  std::map<std::string, double> counters;
};

// Collects every run while still printing the usual console output.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override;
  const std::map<std::string, Measured>& results() const { return results_; }

 private:
  std::map<std::string, Measured> results_;
};

enum class Check {
  kRatioAtMost,     // time(a) / time(b) <= target
  kScalingAtLeast,  // (ips(a@N) / ips(a@1)) / (ips(b@N) / ips(b@1)) >= target
  kSpeedupAtLeast,  // ips(a@N) / ips(a@1) >= target
  kGrowthAtMost,    // time(a at large n) / time(a at small n) <= target
  kCounterAtMost,   // counter of a <= target
  kCounterInfo,     // counter of a, no target
  kInfo,            // time(a) / time(b), no target
  kScalingInfo,     // as kScalingAtLeast, no target
};

struct Row {
  std::string operation;
  Check check;
  std::vector<std::string> a;  // aclvmm benchmark names (times are summed)
  std::vector<std::string> b;  // baseline names; for scaling rows {a@1, a@N, b@1, b@N} in a/b
  double target = 0;
  std::string counter = {};  // kCounterAtMost, kCounterInfo
  std::string unit = {};     // printed after the counter's value
};

// The rows of the targets, in the order the table prints them.
std::vector<Row> target_rows();

// Prints the table; returns the number of rows whose target was missed. Rows whose benchmarks did
// not run (filtered out or skipped) print "not run" and do not count as misses.
int print_table(const std::map<std::string, Measured>& results, const std::vector<Row>& rows);

}  // namespace bench
