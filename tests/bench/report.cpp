#include "report.h"

#include <cmath>
#include <cstdio>

namespace bench {

void CollectingReporter::ReportRuns(const std::vector<Run>& runs) {
  ConsoleReporter::ReportRuns(runs);
  for (const Run& run : runs) {
    if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
    Measured m;
    m.ns_per_iter = run.GetAdjustedRealTime() *
                    (1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit));
    for (const auto& [name, counter] : run.counters) m.counters[name] = counter.value;
    auto ips = run.counters.find("items_per_second");
    if (ips != run.counters.end()) m.items_per_second = ips->second.value;
    results_[run.benchmark_name()] = m;
  }
}

namespace {

std::string time_text(double ns) {
  char buf[32];
  if (ns < 1e3) {
    snprintf(buf, sizeof buf, "%.0f ns", ns);
  } else if (ns < 1e6) {
    snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  } else {
    snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  }
  return buf;
}

std::string number(const char* fmt, double v) {
  char buf[32];
  snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

struct Cells {
  std::string a, b, ratio, target, result;
};

bool sum_time(const std::map<std::string, Measured>& r, const std::vector<std::string>& names,
              double* out) {
  *out = 0;
  for (const std::string& n : names) {
    auto it = r.find(n);
    if (it == r.end()) return false;
    *out += it->second.ns_per_iter;
  }
  return !names.empty();
}

bool ips(const std::map<std::string, Measured>& r, const std::string& name, double* out) {
  auto it = r.find(name);
  if (it == r.end() || it->second.items_per_second <= 0) return false;
  *out = it->second.items_per_second;
  return true;
}

// Fills the cells of one row; false when a benchmark it needs did not run.
bool evaluate(const std::map<std::string, Measured>& r, const Row& row, Cells* c, bool* pass) {
  double va = 0, vb = 0, value = 0;
  switch (row.check) {
    case Check::kRatioAtMost:
    case Check::kInfo:
    case Check::kGrowthAtMost:
      if (!sum_time(r, row.a, &va) || !sum_time(r, row.b, &vb) || vb <= 0) return false;
      value = va / vb;
      c->a = time_text(va);
      c->b = time_text(vb);
      c->ratio = number("%.2f", value);
      break;
    case Check::kScalingAtLeast:
    case Check::kScalingInfo: {
      double a1, an, b1, bn;
      if (row.a.size() != 2 || row.b.size() != 2 || !ips(r, row.a[0], &a1) ||
          !ips(r, row.a[1], &an) || !ips(r, row.b[0], &b1) || !ips(r, row.b[1], &bn)) {
        return false;
      }
      va = an / a1;
      vb = bn / b1;
      value = va / vb;
      c->a = number("%.2fx", va);
      c->b = number("%.2fx", vb);
      c->ratio = number("%.2f", value);
      break;
    }
    case Check::kSpeedupAtLeast: {
      double a1, an;
      if (row.a.size() != 2 || !ips(r, row.a[0], &a1) || !ips(r, row.a[1], &an)) return false;
      value = an / a1;
      c->a = number("%.3g/s", an);
      c->b = number("%.3g/s", a1);
      c->ratio = number("%.2fx", value);
      break;
    }
    case Check::kCounterAtMost:
    case Check::kCounterInfo: {
      auto it = row.a.empty() ? r.end() : r.find(row.a[0]);
      if (it == r.end()) return false;
      auto ct = it->second.counters.find(row.counter);
      if (ct == it->second.counters.end()) return false;
      value = ct->second;
      c->a = number("%.4g", value) + (row.unit.empty() ? "" : " " + row.unit);
      c->b = "-";
      c->ratio = "-";
      break;
    }
  }
  switch (row.check) {
    case Check::kRatioAtMost:
    case Check::kGrowthAtMost:
    case Check::kCounterAtMost:
      *pass = value <= row.target;
      c->target = number("<= %.4g", row.target);
      break;
    case Check::kScalingAtLeast:
    case Check::kSpeedupAtLeast:
      *pass = value >= row.target;
      c->target = number(">= %.4g", row.target);
      break;
    case Check::kInfo:
    case Check::kScalingInfo:
    case Check::kCounterInfo:
      *pass = true;
      c->target = "-";
      break;
  }
  const bool info = row.check == Check::kInfo || row.check == Check::kScalingInfo ||
                    row.check == Check::kCounterInfo;
  c->result = info ? "info" : (*pass ? "pass" : "FAIL");
  return true;
}

}  // namespace

int print_table(const std::map<std::string, Measured>& results, const std::vector<Row>& rows) {
  const char* fmt = "%-50s %12s %12s %8s %9s  %s\n";
  printf("\n");
  printf(fmt, "operation", "aclvmm", "baseline", "ratio", "target", "result");
  printf("%s\n", std::string(102, '-').c_str());
  int misses = 0;
  for (const Row& row : rows) {
    Cells c;
    bool pass = true;
    if (!evaluate(results, row, &c, &pass)) {
      printf(fmt, row.operation.c_str(), "-", "-", "-", "-", "not run");
      continue;
    }
    if (!pass) ++misses;
    printf(fmt, row.operation.c_str(), c.a.c_str(), c.b.c_str(), c.ratio.c_str(), c.target.c_str(),
           c.result.c_str());
  }
  printf("\n%d target(s) missed\n", misses);
  fflush(stdout);
  return misses;
}

}  // namespace bench
