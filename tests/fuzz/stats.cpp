#include "stats.h"

#include <cstdlib>
#include <cstring>

#include "aclvmm/aclvmm.h"
#include "check.h"

namespace fuzz {

const char* const Snapshot::kLiveKeys[kLive] = {
    "physical_handles", "reservations", "mappings", "exports",
    "imports", "managed_allocations", "device_allocations", "host_allocations"};

namespace {

// The integer after `"key": ` searching from `from`; traps when absent (the JSON is a contract).
long long int_after(const char* json, const char* from, const char* key, const char** end) {
  std::string pattern = std::string("\"") + key + "\": ";
  const char* p = std::strstr(from, pattern.c_str());
  FUZZ_CHECK(p != nullptr, "aclvmmStatsJson has no \"%s\": %s", key, json);
  p += pattern.size();
  char* stop = nullptr;
  long long v = std::strtoll(p, &stop, 10);
  FUZZ_CHECK(stop != p, "aclvmmStatsJson: \"%s\" is not an integer", key);
  if (end) *end = stop;
  return v;
}

}  // namespace

bool Snapshot::same_counts(const Snapshot& o) const {
  return std::memcmp(live, o.live, sizeof live) == 0;
}

bool Snapshot::operator==(const Snapshot& o) const {
  return same_counts(o) && used[0] == o.used[0] && used[1] == o.used[1];
}

std::string Snapshot::describe() const {
  std::string s;
  for (int i = 0; i < kLive; ++i) s += std::string(kLiveKeys[i]) + "=" + std::to_string(live[i]) + " ";
  s += "used0=" + std::to_string(used[0]) + " used1=" + std::to_string(used[1]);
  return s;
}

Snapshot snapshot() {
  const char* json = aclvmmStatsJson();
  FUZZ_CHECK(json != nullptr, "aclvmmStatsJson returned NULL");
  Snapshot s;
  const char* devices = std::strstr(json, "\"devices\": [");
  FUZZ_CHECK(devices != nullptr, "aclvmmStatsJson has no devices: %s", json);
  const char* cur = devices;
  for (int d = 0; d < 2; ++d) {
    long long id = int_after(json, cur, "id", &cur);
    FUZZ_CHECK(id == d, "aclvmmStatsJson: device %d listed as %lld", d, id);
    s.used[d] = int_after(json, cur, "memory_used", &cur);
  }
  const char* live = std::strstr(json, "\"live\": {");
  FUZZ_CHECK(live != nullptr, "aclvmmStatsJson has no live object: %s", json);
  for (int i = 0; i < Snapshot::kLive; ++i) {
    s.live[i] = int_after(json, live, Snapshot::kLiveKeys[i], nullptr);
  }
  return s;
}

}  // namespace fuzz
