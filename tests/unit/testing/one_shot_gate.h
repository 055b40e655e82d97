// OneShotGate: a gate threads of a test wait at until another opens it once (C++17 has no
// std::latch). wait_for gives up after `timeout`, so that a broken implementation fails a case
// instead of stalling the suite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace aclvmm::testing {

class OneShotGate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  template <typename Duration>
  bool wait_for(Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace aclvmm::testing
