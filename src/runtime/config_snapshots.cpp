#include "runtime/config_snapshots.h"

#include <new>
#include <utility>

namespace aclvmm {
namespace {

// Before the first start: what a default-constructed Config says (no allocation, so the
// runtime's construction cannot fail here).
const Config& defaults() {
  static const Config kDefaults;
  return kDefaults;
}

bool same_rules(const std::vector<InjectionRule>& a, const std::vector<InjectionRule>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].api != b[i].api || a[i].nth != b[i].nth || a[i].code != b[i].code) return false;
  }
  return true;
}

}  // namespace

// A field added to Config must be compared below, or a restart that changes only that field
// would keep the old snapshot. This trips when Config's layout changes (libstdc++, LP64).
static_assert(sizeof(Config) == 440, "Config changed: compare the new field in same_config()");

bool same_config(const Config& a, const Config& b) {
  return a.product.soc == b.product.soc && a.product.family == b.product.family &&
         a.product.memory_bytes == b.product.memory_bytes && a.device_count == b.device_count &&
         a.device_memory == b.device_memory && a.host_access_open == b.host_access_open &&
         a.quirks_vendor == b.quirks_vendor && a.interconnect == b.interconnect &&
         a.host_numa == b.host_numa && same_rules(a.injections, b.injections) &&
         a.stats_file == b.stats_file && a.trace_file == b.trace_file && a.driver == b.driver &&
         a.visible == b.visible && a.visible_error == b.visible_error &&
         a.visible_set == b.visible_set && a.kernel_libs == b.kernel_libs &&
         a.device_memory_set == b.device_memory_set && a.hal_library == b.hal_library &&
         a.hal_hide == b.hal_hide && a.physical_ids == b.physical_ids &&
         a.server_id == b.server_id && a.pod_file == b.pod_file && a.pod == b.pod;
}

ConfigSnapshots::ConfigSnapshots() : current_(&defaults()) {}

StatusOr<const Config*> ConfigSnapshots::publish(Config cfg) {
  const Config* chosen = nullptr;
  for (const auto& s : snapshots_) {
    if (same_config(*s, cfg)) chosen = s.get();
  }
  if (!chosen) {
    try {
      snapshots_.reserve(snapshots_.size() + 1);  // so that the push below cannot throw
      snapshots_.push_back(std::make_unique<const Config>(std::move(cfg)));
    } catch (const std::bad_alloc&) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                   "no memory for a snapshot of the configuration the runtime starts with");
    }
    chosen = snapshots_.back().get();
  }
  current_.store(chosen, std::memory_order_release);
  return chosen;
}

}  // namespace aclvmm
