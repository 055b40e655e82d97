// Helpers shared by the integration tests (client patterns, scale, products, dlopen).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/test_util.h"

namespace aclvmm_itest {

using namespace aclvmm_test;

// A counter of the "live" section of aclvmmStatsJson (-1 if absent).
inline long live_count(const char* key) {
  std::string json = aclvmmStatsJson();
  size_t live = json.find("\"live\"");
  if (live == std::string::npos) return -1;
  std::string k = std::string("\"") + key + "\"";
  size_t p = json.find(k, live);
  if (p == std::string::npos) return -1;
  p = json.find(':', p);
  if (p == std::string::npos) return -1;
  return std::strtol(json.c_str() + p + 1, nullptr, 10);
}

// Free and total bytes as aclrtGetMemInfo reports them for `attr` (free = ~0 on error).
struct MemInfo {
  size_t free = ~size_t(0);
  size_t total = 0;
};
inline MemInfo mem_info(aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  MemInfo m;
  EXPECT_EQ(aclrtGetMemInfo(attr, &m.free, &m.total), ACL_SUCCESS);
  return m;
}

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

// Writes `bytes` at device address `dst` and reads them back from `src` (default: dst).
inline std::string d2h(const void* src, size_t n) {
  std::string out(n, '\x5a');
  EXPECT_EQ(aclrtMemcpy(&out[0], n, src, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return out;
}
inline void h2d(void* dst, const std::string& bytes) {
  EXPECT_EQ(aclrtMemcpy(dst, bytes.size(), bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
}

inline bool all_bytes(const std::string& s, char v) {
  for (char c : s) {
    if (c != v) return false;
  }
  return true;
}

inline void* at(void* base, size_t off) { return static_cast<char*>(base) + off; }
inline uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace aclvmm_itest
