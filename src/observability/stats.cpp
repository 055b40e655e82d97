#include "observability/stats.h"

#include <atomic>

#include <spdlog/fmt/fmt.h>

namespace aclvmm {
namespace {

// Process totals, like the managed counters: aclFinalize does not reset them.
std::atomic<uint64_t> g_link_mappings[kLinkTypes];

}  // namespace

void count_link_mapping(uint32_t link) {
  if (link < kLinkTypes) g_link_mappings[link].fetch_add(1, std::memory_order_relaxed);
}

void uncount_link_mapping(uint32_t link) {
  if (link < kLinkTypes) g_link_mappings[link].fetch_sub(1, std::memory_order_relaxed);
}

std::string links_json() {
  static const char* const kNames[kLinkTypes] = {"sio", "hccs", "ub_one_port", "ub_multi_port"};
  std::string out = "{";
  for (uint32_t i = 0; i < kLinkTypes; ++i) {
    out += fmt::format("{}\"{}\": {}", i ? ", " : "", kNames[i], g_link_mappings[i].load());
  }
  return out + "}";
}

}  // namespace aclvmm
