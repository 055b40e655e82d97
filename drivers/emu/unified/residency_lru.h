// ResidencyLru (EmuUnified): for each device, its managed pages in the order they were last used, so
// that an oversubscribed device finds its eviction victim in O(log n) instead of scanning every page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>

namespace aclvmm::dev::emu {

struct ManagedRange;

struct PageRef {
  ManagedRange* range = nullptr;
  size_t index = 0;
};

class ResidencyLru {
 public:
  // Lists `ref` as the most recently used page of `device` and returns its stamp (never 0);
  // `old_stamp` is the stamp the page had on that device, 0 when it was not listed.
  uint64_t touch(int device, uint64_t old_stamp, PageRef ref) {
    auto& pages = by_device_[device];
    if (old_stamp != 0) pages.erase(old_stamp);
    pages.emplace(++clock_, ref);
    return clock_;
  }
  void remove(int device, uint64_t stamp) {
    auto it = by_device_.find(device);
    if (it != by_device_.end()) it->second.erase(stamp);
  }
  bool oldest(int device, PageRef* out) const {
    auto it = by_device_.find(device);
    if (it == by_device_.end() || it->second.empty()) return false;
    *out = it->second.begin()->second;
    return true;
  }
  size_t size(int device) const {
    auto it = by_device_.find(device);
    return it == by_device_.end() ? 0 : it->second.size();
  }

 private:
  uint64_t clock_ = 0;
  std::unordered_map<int, std::map<uint64_t, PageRef>> by_device_;
};

}  // namespace aclvmm::dev::emu
