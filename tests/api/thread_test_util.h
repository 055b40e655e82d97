// Helpers of the tests that run several threads: which sanitizer the binary was built with (so
// that load tests can shrink), and a collector for failures seen on worker threads (gtest
// assertions stay on the main thread).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace aclvmm_test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kTsan = true;
#else
inline constexpr bool kTsan = false;
#endif
#else
inline constexpr bool kTsan = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

inline constexpr bool kSanitized = kTsan || kAsan;

// Counts every failure and keeps the text of the first ten.
class Failures {
 public:
  void add(const std::string& what) {
    if (count_.fetch_add(1) >= 10) return;
    std::lock_guard<std::mutex> lock(mu_);
    first_.push_back(what);
  }
  int count() const { return count_.load(); }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (const auto& f : first_) s += f + "\n";
    return s;
  }

 private:
  std::atomic<int> count_{0};
  mutable std::mutex mu_;
  std::vector<std::string> first_;
};

}  // namespace aclvmm_test
