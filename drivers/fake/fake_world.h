// FakeWorld: the "processes" several fake backends play, in one real process
// (docs/device-interface.md §8): each backend is one process with its pid and a logical start
// time; the world holds what the vendor's kernel module holds for all of them: share ids (from
// one counter, in the vendor's token layout), the live exports with their whitelists, and which
// processes live. Destroying a backend is its process exiting: its exports vanish, the bytes
// others imported stay with them.
//
// Determinism: the clock is a counter that rises by one at every event that needs a time (a
// process starting, a set_pids), so "listed before it started" is decided exactly.
//
// Threading: mutex() for everything. Lock order: a backend's machine lock, then the world's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "drivers/device_types.h"
#include "drivers/fake/byte_store.h"
#include "drivers/physical_allocator.h"
#include "drivers/sharing.h"

namespace aclvmm::dev::fake {

class FakeWorld {
 public:
  struct Export {
    int32_t exporter = 0;            // the exporting process's pid
    PhysicalProperties properties;   // the exporter's object's
    std::shared_ptr<ByteStore> bytes;
    bool validate_pids = true;
    std::map<int32_t, uint64_t> whitelist;  // pid -> clock of its last set_pids
  };

  // An IPC key (drivers/sharing.h, "IPC memory by key"): the same rules as an export, over a range.
  struct Key {
    int32_t exporter = 0;
    IpcRange range;
    PhysicalProperties properties;
    std::shared_ptr<ByteStore> bytes;  // null once the exporter freed the memory
    bool validate_pids = true;
    std::map<int32_t, uint64_t> whitelist;
    std::map<int32_t, bool> importers;  // of a no-whitelist key
    uint64_t served = 0;
    uint32_t link = 0;
  };

  std::mutex& mutex() { return mu_; }

  // Under mutex().
  uint64_t tick() { return ++clock_; }
  uint32_t next_share_id() { return next_share_id_++; }
  void started(int32_t pid, uint64_t start_time) { processes_[pid] = start_time; }
  // 0 when no process of that pid lives.
  uint64_t start_time(int32_t pid) const {
    auto it = processes_.find(pid);
    return it == processes_.end() ? 0 : it->second;
  }
  // The process ends: its exports and keys go with it.
  void exited(int32_t pid) {
    processes_.erase(pid);
    for (auto it = exports.begin(); it != exports.end();) {
      it = it->second.exporter == pid ? exports.erase(it) : std::next(it);
    }
    for (auto it = keys.begin(); it != keys.end();) {
      it = it->second.exporter == pid ? keys.erase(it) : std::next(it);
    }
  }

  std::map<uint64_t, Export> exports;  // by token
  std::map<IpcKey, Key> keys;
  std::map<IpcKey, int32_t> closed_served;   // key -> its exporter: closed after serving imports
  std::map<int32_t, uint64_t> key_counters;  // pid -> its last key's counter

 private:
  std::mutex mu_;
  uint64_t clock_ = 0;
  uint32_t next_share_id_ = 0x51;  // fixed start: the same calls give the same tokens
  std::map<int32_t, uint64_t> processes_;  // pid -> start time
};

}  // namespace aclvmm::dev::fake
