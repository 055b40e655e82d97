// The sharing statistics of docs/sharing.md §11 (group "ipc" of aclvmmStatsJson): process
// totals, so a restart's new backend goes on counting where the last one stopped.
#pragma once

#include <atomic>
#include <cstdint>

namespace aclvmm::dev::emu::share {

struct Counters {
  std::atomic<uint64_t> denied{0};             // imports refused: not whitelisted
  std::atomic<uint64_t> wakeups{0};            // listener polls returned
  std::atomic<uint64_t> poll_timeouts{0};      // ... of them, on a deadline
  std::atomic<uint64_t> dropped{0};            // connections closed unanswered
  std::atomic<uint64_t> impostors{0};          // endpoints held by a process not the exporter
  std::atomic<uint64_t> bad_replies{0};        // replies or memory no exporter of emu sends
  // Kept connections (docs/sharing.md §5): an importer's idle ones to exporters now, a listener's
  // to importers now (gauges, two descriptors each), and the requests sent on an importer's.
  std::atomic<uint64_t> importer_links{0};
  std::atomic<uint64_t> exporter_links{0};
  std::atomic<uint64_t> reused{0};
  // Other servers (docs/fabric.md): holders of this process's exports now (a gauge), imports
  // answered for them, and imports of other servers' exports made here.
  std::atomic<uint64_t> fabric_holders{0};
  std::atomic<uint64_t> fabric_served{0};
  std::atomic<uint64_t> fabric_imports{0};
};

inline Counters& counters() {
  static Counters c;
  return c;
}

}  // namespace aclvmm::dev::emu::share
