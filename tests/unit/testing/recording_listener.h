// RecordingListener: a BackendListener for tests of backends without the core: it records every
// usage_changed, and arms failure-injection rules directly, as the core's rule registry does
// (a rule for a step fires once, at its nth execution counted from when it was armed).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "drivers/backend_listener.h"

namespace aclvmm::testing {

class RecordingListener final : public dev::BackendListener {
 public:
  struct Usage {
    dev::DeviceIndex device;
    int64_t delta;
  };

  void log(dev::Severity, const char*, const char*) noexcept override {}
  void residency_event(const dev::ResidencyEvent& event) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);  // `what` is a string literal (backend_listener.h)
  }
  void usage_changed(dev::DeviceIndex device, int64_t delta) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    usage_.push_back(Usage{device, delta});
  }
  const std::atomic<bool>& injection_armed() const noexcept override { return armed_; }
  int injected(const char* step) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    ++asked_;
    auto it = rules_.find(step);
    if (it == rules_.end() || --it->second.first != 0) return 0;
    const int code = it->second.second;
    rules_.erase(it);
    armed_.store(!rules_.empty(), std::memory_order_relaxed);
    return code;
  }

  // The nth execution of `step` from now fails with errno `code`; nth 0 disarms the step.
  void arm(const std::string& step, uint32_t nth, int code) {
    std::lock_guard<std::mutex> lock(mu_);
    if (nth == 0) {
      rules_.erase(step);
    } else {
      rules_[step] = {nth, code};
    }
    armed_.store(!rules_.empty(), std::memory_order_relaxed);
  }
  bool armed(const std::string& step) const {
    std::lock_guard<std::mutex> lock(mu_);
    return rules_.count(step) != 0;
  }
  // How many times a backend asked about any step while something was armed.
  uint64_t asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

  std::vector<Usage> usage() const {
    std::lock_guard<std::mutex> lock(mu_);
    return usage_;
  }
  // The sum of the deltas reported for `device` (kNoDevice: the host).
  int64_t usage_sum(dev::DeviceIndex device) const {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t sum = 0;
    for (const Usage& u : usage_) sum += u.device == device ? u.delta : 0;
    return sum;
  }
  // The managed-memory trace events reported so far, oldest first.
  std::vector<dev::ResidencyEvent> residency_events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  void clear_usage() {
    std::lock_guard<std::mutex> lock(mu_);
    usage_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> armed_{false};
  std::map<std::string, std::pair<uint32_t, int>> rules_;  // step -> (executions left, code)
  std::vector<Usage> usage_;
  std::vector<dev::ResidencyEvent> events_;
  uint64_t asked_ = 0;
};

}  // namespace aclvmm::testing
