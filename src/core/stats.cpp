#include "core/stats.h"

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

}  // namespace

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
  ManagedMemory& m = rt.managed();
  const ManagedStats& ms = m.stats();
  return fmt::format(
      "{{\"soc\": {}, \"family\": {}, \"driver\": {}, \"devices\": [{}], "
      "\"live\": {{\"physical_handles\": {}, \"reservations\": {}, \"mappings\": {}, "
      "\"exports\": {}, \"imports\": {}, \"managed_allocations\": {}, \"device_allocations\": {}, "
      "\"host_allocations\": {}}}, "
      "\"managed\": {{\"fault_tracking\": {}, \"host_faults\": {}, \"device_faults\": {}, "
      "\"bytes_to_device\": {}, \"bytes_to_host\": {}, \"evictions\": {}, \"prefetch_bytes\": {}}}, "
      "\"ipc\": {{\"imports_denied\": {}}}}}",
      quoted(cfg.product.soc), quoted(cfg.product.family_name()), quoted(cfg.driver), devices,
      rt.physical().size(),
      space.region_count(RegionKind::kReservation) + space.region_count(RegionKind::kNoUcReservation),
      space.mapping_count(), rt.sharing().live_exports(), rt.sharing().live_imports(),
      rt.managed().live(), space.region_count(RegionKind::kDeviceMalloc),
      space.region_count(RegionKind::kHostPinned), m.fault_tracking() ? "true" : "false",
      ms.host_faults.load(), ms.device_faults.load(), ms.bytes_to_device.load(),
      ms.bytes_to_host.load(), ms.evictions.load(), ms.prefetch_bytes.load(), rt.sharing().denied());
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
