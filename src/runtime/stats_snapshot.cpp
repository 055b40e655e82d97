#include "runtime/stats_snapshot.h"

#include <cstdio>

#include "base/handle_table.h"
#include "observability/log.h"
#include "observability/stats.h"
#include "runtime/config.h"
#include "runtime/runtime.h"
#include "vmm/address_space.h"
#include "vmm/device_directory.h"
#include "vmm/managed.h"
#include "vmm/physical.h"
#include "vmm/share.h"

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

}  // namespace

std::string stats_json(const StatsSources& sources) {
  const Config& cfg = sources.config;
  std::string devices;
  for (int i = 0; i < cfg.device_count; ++i) {
    auto pool = sources.devices.pool(i);
    if (!pool) continue;
    devices += fmt::format("{}{{\"id\": {}, \"memory_total\": {}, \"memory_used\": {}}}",
                           devices.empty() ? "" : ", ", i, pool->total(), pool->used());
  }
  const AddressSpace& space = sources.space;
  const ShareService& sharing = sources.sharing;
  return fmt::format(
      "{{\"soc\": {}, \"family\": {}, \"driver\": {}, \"interconnect\": {}, \"links\": {}, "
      "\"devices\": [{}], "
      "\"live\": {{\"physical_handles\": {}, \"reservations\": {}, \"mappings\": {}, "
      "\"exports\": {}, \"imports\": {}, \"managed_allocations\": {}, \"device_allocations\": {}, "
      "\"host_allocations\": {}, \"host_registrations\": {}, \"binaries\": {}, "
      "\"ipc_keys\": {}, \"ipc_imports\": {}}}, "
      "\"managed\": {}, "
      "\"ipc\": {{\"imports_denied\": {}, \"listener_wakeups\": {}, \"listener_timeouts\": {}, "
      "\"connections_dropped\": {}, \"impostors_refused\": {}, \"replies_refused\": {}, "
      "\"fabric_holders\": {}, \"fabric_served\": {}, \"fabric_imports\": {}, "
      "\"importer_links\": {}, \"exporter_links\": {}, \"links_reused\": {}}}}}",
      quoted(cfg.product.soc), quoted(cfg.product.family_name()), quoted(cfg.driver),
      quoted(interconnect_name(cfg.interconnect)), links_json(), devices, sources.physical.size(),
      space.region_count(RegionKind::kReservation) +
          space.region_count(RegionKind::kNoUcReservation),
      space.mapping_count(), sharing.live_exports(), sharing.live_imports(), sources.managed.live(),
      space.region_count(RegionKind::kDeviceMalloc), space.region_count(RegionKind::kHostPinned),
      sources.host_registrations, sources.binaries, sources.ipc_keys, sources.ipc_imports,
      sources.managed.stats_json(), sharing.denied(), sharing.listener_wakeups(),
      sharing.listener_timeouts(), sharing.connections_dropped(), sharing.impostors_refused(),
      sharing.replies_refused(), sharing.fabric_holders(), sharing.fabric_served(),
      sharing.fabric_imports(), sharing.importer_links(), sharing.exporter_links(),
      sharing.links_reused());
}

std::string stats_json(Runtime& rt, bool start) {
  if (start) (void)rt.start();
  return stats_json(StatsSources{rt.config(), rt, rt.space(), rt.physical(), rt.sharing(),
                                 rt.managed(), rt.kernels().live_binaries(),
                                 rt.host_registrations().size(), rt.ipc_keys().live_keys(),
                                 rt.ipc_keys().live_imports()});
}

void write_stats_file_at_exit(Runtime& rt) {
  const std::string& path = rt.config().stats_file;
  if (path.empty()) return;
  std::string json = stats_json(rt, false);
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
