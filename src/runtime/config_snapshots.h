// ConfigSnapshots: the runtime's configuration as immutable snapshots.
//
// Each start of the runtime (the first call, or aclInit after aclFinalize) reads the environment
// into a new Config and publishes it here. Readers take the current snapshot with one acquire
// load and no lock; what they hold is never modified and never freed, so a restart on another
// thread can neither change it under them nor take it away (aclrtGetSocName even hands the
// snapshot's SoC name to the application, which may keep it). A start that reads the same
// configuration again publishes the snapshot it already has: the list grows with the distinct
// configurations a process runs with, never with the number of its restarts.
//
// Threading: current() from any thread, at any time (before the first publish it is the
// defaults); publish() from one thread at a time (Runtime's start, under Runtime::mu_).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "base/status.h"
#include "runtime/config.h"

namespace aclvmm {

class ConfigSnapshots {
 public:
  ConfigSnapshots();
  ConfigSnapshots(const ConfigSnapshots&) = delete;
  ConfigSnapshots& operator=(const ConfigSnapshots&) = delete;

  // The snapshot of the latest publish; valid for the process's lifetime.
  const Config& current() const { return *current_.load(std::memory_order_acquire); }

  // Makes cfg the current snapshot (an equal one published before, or a new one) and returns
  // it. 207001 when there is no memory for a new one; the current snapshot stays.
  StatusOr<const Config*> publish(Config cfg);

  // How many distinct snapshots exist (for the tests).
  size_t count() const { return snapshots_.size(); }

 private:
  std::atomic<const Config*> current_;
  std::vector<std::unique_ptr<const Config>> snapshots_;  // publish() only; never shrinks
};

// Field by field, for publish()'s reuse (config_snapshots.cpp keeps the list of fields).
bool same_config(const Config& a, const Config& b);

}  // namespace aclvmm
