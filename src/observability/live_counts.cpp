#include "observability/live_counts.h"

namespace aclvmm {
namespace {

// The published segment's counters. Acquire/release: a publisher that sees the pointer sees the
// segment it points into.
std::atomic<std::atomic<uint64_t>*> g_target{nullptr};

}  // namespace

void publish_live_count(LiveCount kind, uint64_t value) noexcept {
  const auto index = static_cast<uint32_t>(kind);
  if (index >= static_cast<uint32_t>(smi::kLiveCounts)) return;
  if (std::atomic<uint64_t>* counters = g_target.load(std::memory_order_acquire)) {
    counters[index].store(value, std::memory_order_relaxed);
  }
}

void set_live_count_target(std::atomic<uint64_t>* counters) noexcept {
  g_target.store(counters, std::memory_order_release);
}

}  // namespace aclvmm
