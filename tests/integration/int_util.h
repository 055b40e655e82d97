// Helpers of the integration tests only (client patterns, scale, products, dlopen); everything
// the API tests use too comes from the API tests' headers.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_itest {

using namespace aclvmm_test;

// Resident set size from /proc/self/statm (bytes).
inline size_t rss_statm() {
  FILE* f = std::fopen("/proc/self/statm", "re");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// VmRSS from /proc/self/status (bytes).
inline size_t rss_status() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return 0;
  char line[256];
  size_t kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) {
      kib = std::strtoull(line + 6, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace aclvmm_itest
