#include "core/stats.h"

#include <atomic>
#include <cstdio>

#include "core/log.h"
#include "core/runtime.h"

namespace aclvmm {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Process totals, like the managed counters: aclFinalize does not reset them.
std::atomic<uint64_t> g_link_mappings[kLinkTypes];

std::string links_json() {
  static const char* const kNames[kLinkTypes] = {"sio", "hccs", "ub_one_port", "ub_multi_port"};
  std::string out = "{";
  for (uint32_t i = 0; i < kLinkTypes; ++i) {
    out += fmt::format("{}\"{}\": {}", i ? ", " : "", kNames[i], g_link_mappings[i].load());
  }
  return out + "}";
}

}  // namespace

void count_link_mapping(uint32_t link) {
  if (link < kLinkTypes) g_link_mappings[link].fetch_add(1, std::memory_order_relaxed);
}

void uncount_link_mapping(uint32_t link) {
  if (link < kLinkTypes) g_link_mappings[link].fetch_sub(1, std::memory_order_relaxed);
}

std::string stats_json(bool start) {
  Runtime& rt = Runtime::get();
  if (start) (void)rt.start();
  const Config& cfg = rt.config();
  std::string devices;
  for (int i = 0; i < cfg.device_count; ++i) {
    auto pool = rt.pool(i);
    if (!pool) continue;
    devices += fmt::format("{}{{\"id\": {}, \"memory_total\": {}, \"memory_used\": {}}}",
                           devices.empty() ? "" : ", ", i, pool->total(), pool->used());
  }
  AddressSpace& space = rt.space();
  return fmt::format(
      "{{\"soc\": {}, \"family\": {}, \"driver\": {}, \"interconnect\": {}, \"links\": {}, "
      "\"devices\": [{}], "
      "\"live\": {{\"physical_handles\": {}, \"reservations\": {}, \"mappings\": {}, "
      "\"exports\": {}, \"imports\": {}, \"managed_allocations\": {}, \"device_allocations\": {}, "
      "\"host_allocations\": {}}}, "
      "\"managed\": {}, "
      "\"ipc\": {{\"imports_denied\": {}, \"listener_wakeups\": {}, \"listener_timeouts\": {}, "
      "\"connections_dropped\": {}, \"impostors_refused\": {}, \"replies_refused\": {}}}}}",
      quoted(cfg.product.soc), quoted(cfg.product.family_name()), quoted(cfg.driver),
      quoted(interconnect_name(cfg.interconnect)), links_json(), devices,
      rt.physical().size(),
      space.region_count(RegionKind::kReservation) + space.region_count(RegionKind::kNoUcReservation),
      space.mapping_count(), rt.sharing().live_exports(), rt.sharing().live_imports(),
      rt.managed().live(), space.region_count(RegionKind::kDeviceMalloc),
      space.region_count(RegionKind::kHostPinned), rt.managed().stats_json(), rt.sharing().denied(),
      rt.sharing().listener_wakeups(), rt.sharing().listener_timeouts(),
      rt.sharing().connections_dropped(), rt.sharing().impostors_refused(),
      rt.sharing().replies_refused());
}

void write_stats_file_at_exit() {
  const std::string& path = Runtime::get().config().stats_file;
  if (path.empty()) return;
  std::string json = stats_json(false);
  FILE* f = fopen(path.c_str(), "w");
  if (!f) {
    ACLVMM_LOG_ERROR("RUNTIME", "cannot write the statistics file {}", path);
    return;
  }
  fputs(json.c_str(), f);
  fputc('\n', f);
  fclose(f);
}

}  // namespace aclvmm
