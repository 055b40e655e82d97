// The observable state of the process: aclvmmStatsJson's live counts and each device's
// memory_used.
#pragma once

#include <cstdint>
#include <string>

namespace fuzz {

struct Snapshot {
  static constexpr int kLive = 8;
  static const char* const kLiveKeys[kLive];
  long long live[kLive] = {};
  long long used[2] = {};
  bool operator==(const Snapshot& o) const;
  bool same_counts(const Snapshot& o) const;
  std::string describe() const;
};

Snapshot snapshot();

}  // namespace fuzz
