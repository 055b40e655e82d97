// The targets (docs/performance.md explains what bounds each one).
#include <string>

#include "report.h"

namespace bench {
namespace {

std::string n(const char* name, long arg) { return std::string(name) + "/" + std::to_string(arg); }

}  // namespace

std::vector<Row> target_rows() {
  const long k2M = 2l << 20, k1G = 1l << 30, k4K = 4096, k64M = 64l << 20;
  std::vector<Row> rows = {
      {"reserve + release 2 MiB", Check::kRatioAtMost, {n("Acl_ReserveRelease", k2M)},
       {n("Raw_ReserveRelease", k2M)}, 1.0},
      {"reserve + release 1 GiB", Check::kRatioAtMost, {n("Acl_ReserveRelease", k1G)},
       {n("Raw_ReserveRelease", k1G)}, 1.0},
      {"malloc physical + free 2 MiB", Check::kRatioAtMost, {"Acl_MallocPhysical"},
       {"Raw_MemfdCreate"}, 1.5},
      // The raw pair inside a 1 GiB placeholder, as a mapping inside a reservation is.
      {"map + unmap 2 MiB device memory", Check::kRatioAtMost, {n("Acl_MapUnmap", 0)},
       {n("Raw_MapUnmap", k1G)}, 1.5},
      {"map + unmap 2 MiB host memory (CPU-visible)", Check::kRatioAtMost, {n("Acl_MapUnmap", 1)},
       {n("Raw_MapUnmap", k1G)}, 1.5},
      {"  vs a placeholder of exactly 2 MiB", Check::kInfo, {n("Acl_MapUnmap", 1)},
       {n("Raw_MapUnmap", k2M)}, 0},
  };
  for (long count : {1000l, 100000l, 1000000l}) {
    const std::string label = " @ " + std::to_string(count) + " mappings";
    const Check check = count == 100000 ? Check::kRatioAtMost : Check::kInfo;
    rows.push_back({"pointer attributes" + label, check, {n("Acl_PointerGetAttributes", count)},
                    {n("Raw_MapLookup", count)}, 3.0});
    rows.push_back({"address range" + label, check, {n("Acl_MemGetAddressRange", count)},
                    {n("Raw_MapLookup", count)}, 3.0});
  }
  rows.push_back({"pointer attributes 1M vs 1k mappings", Check::kGrowthAtMost,
                  {n("Acl_PointerGetAttributes", 1000000)}, {n("Acl_PointerGetAttributes", 1000)}, 2.0});
  rows.push_back({"address range 1M vs 1k mappings", Check::kGrowthAtMost,
                  {n("Acl_MemGetAddressRange", 1000000)}, {n("Acl_MemGetAddressRange", 1000)}, 2.0});
  rows.push_back({"  std::map lookup 1M vs 1k (reference)", Check::kInfo,
                  {n("Raw_MapLookup", 1000000)}, {n("Raw_MapLookup", 1000)}, 0});
  rows.push_back({"  one dependent load, 1M vs 1k words (latency)", Check::kInfo,
                  {n("Raw_DependentLoad", 1000000)}, {n("Raw_DependentLoad", 1000)}, 0});
  const char* kinds[] = {"", "H2D", "D2H", "D2D"};
  for (long size : {k4K, k2M, k64M}) {
    for (int kind = 1; kind <= 3; ++kind) {
      const std::string label = std::string("memcpy ") + kinds[kind] + " " +
                                (size == k4K ? "4 KiB" : size == k2M ? "2 MiB" : "64 MiB");
      rows.push_back({label, size >= k2M ? Check::kRatioAtMost : Check::kInfo,
                      {n("Acl_Memcpy", size) + "/" + std::to_string(kind)}, {n("Raw_Memcpy", size)},
                      1.3});
    }
  }
  rows.push_back({"export + import round trip", Check::kRatioAtMost,
                  {"Acl_Export/manual_time", "Acl_Import"}, {n("Raw_ScmRightsRoundTrip", 0)}, 3.0});
  rows.push_back({"  vs connect + SCM_RIGHTS round trip", Check::kInfo,
                  {"Acl_Export/manual_time", "Acl_Import"}, {n("Raw_ScmRightsRoundTrip", 1)}, 0});
  // Issue 19: sharing on the cold paths (bench_share_cold.cpp), against a memfd passed with
  // SCM_RIGHTS plus a one-byte reply between the same two processes.
  const std::string among = "Acl_ImportAmongLiveExports/";
  const std::string it = "/iterations:2000/manual_time";
  rows.push_back({"fresh export -> import (other process)", Check::kRatioAtMost,
                  {"Acl_FreshExportImport/manual_time"}, {"Raw_FdPassReply"}, 3.0});
  rows.push_back({"import with 10 000 live exports", Check::kRatioAtMost, {among + "10000" + it},
                  {"Raw_FdPassReply"}, 3.0});
  rows.push_back({"  import with 1 / 1 000 live exports", Check::kInfo,
                  {among + "1" + it}, {among + "1000" + it}, 0});
  // The descriptors an export leaves in the application's range (below a soft limit of 1 024;
  // the library holds its own above it), and all it holds (its memory file, 1/256 endpoint).
  rows.push_back({"descriptors per export in app range (10 000)",
                  Check::kCounterAtMost,
                  {among + "10000" + it},
                  {},
                  0.01,
                  "fds_in_range_per_export"});
  rows.push_back({"  the same with 1 000 exports",
                  Check::kCounterInfo,
                  {among + "1000" + it},
                  {},
                  0,
                  "fds_in_range_per_export"});
  rows.push_back({"  all descriptors per export (10 000)",
                  Check::kCounterInfo,
                  {among + "10000" + it},
                  {},
                  0,
                  "fds_per_export"});
  rows.push_back({"idle exporter, 10 000 exports: wake-ups per second", Check::kCounterAtMost,
                  {"Acl_IdleExporterWakeups/10000/iterations:1"}, {}, 0, "wakeups_per_second"});
  rows.push_back({"  idle exporter, 1 000 exports", Check::kCounterAtMost,
                  {"Acl_IdleExporterWakeups/1000/iterations:1"}, {}, 0, "wakeups_per_second"});
  const std::string many = "Acl_ManyImporters/64/1000/iterations:1";
  rows.push_back({"64 importers x 1 000 exports: import p99", Check::kCounterAtMost, {many}, {},
                  1000, "p99_us", "us"});
  rows.push_back({"  import p50", Check::kCounterInfo, {many}, {}, 0, "p50_us", "us"});
  // What bounds it here (docs/performance.md): the raw calls alone, as many clients.
  const std::string raw_many = "Raw_ManyClients/64/1000/iterations:1";
  rows.push_back({"  raw descriptor pass + reply, 64 clients: p99",
                  Check::kCounterInfo,
                  {raw_many},
                  {},
                  0,
                  "p99_us",
                  "us"});
  rows.push_back({"  raw p50", Check::kCounterInfo, {raw_many}, {}, 0, "p50_us", "us"});
  // Sleep/wake, small copies, managed memory, accounting (bench_sleep_wake.cpp,
  // bench_cold_paths.cpp).
  rows.push_back({"sleep/wake of device memory vs memcpy out and back", Check::kRatioAtMost,
                  {"Acl_SleepWake/iterations:1"}, {"Raw_SleepWakeMemcpy/iterations:1"}, 1.25});
  rows.push_back({"  the same cycle on raw memfds (fresh pages)", Check::kInfo,
                  {"Raw_MemfdSleepWake/iterations:1"}, {"Raw_SleepWakeMemcpy/iterations:1"}, 0});
  rows.push_back({"  size of the cycle", Check::kCounterInfo, {"Acl_SleepWake/iterations:1"}, {}, 0,
                  "gib", "GiB"});
  rows.push_back({"4 KiB H2D copy vs memcpy + one system call", Check::kRatioAtMost,
                  {n("Acl_Memcpy", k4K) + "/1"}, {n("Raw_MemcpySyscall", k4K)}, 2.0});
  rows.push_back({"4 KiB D2H copy vs memcpy + one system call", Check::kRatioAtMost,
                  {n("Acl_Memcpy", k4K) + "/2"}, {n("Raw_MemcpySyscall", k4K)}, 2.0});
  rows.push_back({"managed: CPU fault on a device-resident 2 MiB page", Check::kRatioAtMost,
                  {"Acl_ManagedCpuFault/manual_time"}, {"Raw_UffdMinorFault/manual_time"}, 2.0});
  rows.push_back({"managed: prefetch 1 GiB there and back vs memcpy", Check::kRatioAtMost,
                  {"Acl_ManagedPrefetch1G"}, {"Raw_Memcpy1G"}, 1.25});
  rows.push_back({"aclrtGetMemInfo 2 threads vs 1", Check::kSpeedupAtLeast,
                  {"Acl_GetMemInfoThreads/real_time/threads:1",
                   "Acl_GetMemInfoThreads/real_time/threads:2"}, {}, 1.7});
  rows.push_back({"  map + unmap + aclrtGetMemInfo 2 threads vs 1", Check::kSpeedupAtLeast,
                  {"Acl_GetMemInfoWhileMapping/real_time/threads:1",
                   "Acl_GetMemInfoWhileMapping/real_time/threads:2"}, {}, 0});
  rows.push_back({"  map + unmap + aclrtGetMemInfo 8 threads vs 1", Check::kSpeedupAtLeast,
                  {"Acl_GetMemInfoWhileMapping/real_time/threads:1",
                   "Acl_GetMemInfoWhileMapping/real_time/threads:8"}, {}, 0});
  rows.push_back({"managed: CPU fault migration per 2 MiB page", Check::kInfo,
                  {"Acl_ManagedHostFaultPerPage/manual_time"}, {n("Raw_Memcpy", k2M)}, 0});
  rows.push_back({"managed: prefetch 64 MiB there and back", Check::kInfo,
                  {"Acl_ManagedPrefetchRoundTrip"}, {n("Raw_Memcpy", k64M), n("Raw_Memcpy", k64M)}, 0});
  const std::string raw = n("Raw_MapUnmap", k2M) + "/real_time/threads:";
  for (int host = 0; host <= 1; ++host) {
    const std::string base = n("Acl_MapUnmapScaling", host) + "/1/real_time/threads:";
    const std::string what = host ? "host" : "device";
    rows.push_back({"map/unmap scaling 1 -> 2 threads (" + what + ")", Check::kScalingAtLeast,
                    {base + "1", base + "2"}, {raw + "1", raw + "2"}, 0.9});
    rows.push_back({"map/unmap scaling 1 -> 4 threads (" + what + ")", Check::kScalingInfo,
                    {base + "1", base + "4"}, {raw + "1", raw + "4"}, 0.9});
  }
  const std::string adjacent = n("Acl_MapUnmapScaling", 0) + "/0/real_time/threads:";
  rows.push_back({"  1 -> 2 threads, adjacent 2 MiB reservations (device)", Check::kScalingInfo,
                  {adjacent + "1", adjacent + "2"}, {raw + "1", raw + "2"}, 0});
  rows.push_back({"pointer queries 2 threads vs 1", Check::kSpeedupAtLeast,
                  {"Acl_PointerGetAttributesThreads/real_time/threads:1",
                   "Acl_PointerGetAttributesThreads/real_time/threads:2"},
                  {}, 1.6});
  rows.push_back({"  std::map lookups 2 threads vs 1 (machine reference)", Check::kSpeedupAtLeast,
                  {"Raw_MapLookupThreads/real_time/threads:1", "Raw_MapLookupThreads/real_time/threads:2"},
                  {}, 0});
  rows.push_back({"metadata per mapping", Check::kCounterAtMost,
                  {"Acl_MetadataPerMapping/iterations:1"}, {}, 256, "bytes_per_mapping", "B"});
  // Memory of another server (docs/fabric.md): aclvmm's copies against raw libfabric RMA of the
  // same size between the same two namespaces. Target: at least 0.8 of the raw bandwidth.
  const std::string m = "/manual_time";
  rows.push_back({"cross-server D2D 1 MiB vs raw fi_read",
                  Check::kRatioAtMost,
                  {n("Acl_FabricD2D", 1 << 20) + m},
                  {n("Raw_FabricRead", 1 << 20) + m},
                  1.25});
  rows.push_back({"  D2H 1 MiB vs raw fi_read",
                  Check::kInfo,
                  {n("Acl_FabricD2H", 1 << 20) + m},
                  {n("Raw_FabricRead", 1 << 20) + m},
                  0});
  rows.push_back({"  D2H 8 bytes (latency) vs raw fi_read",
                  Check::kInfo,
                  {n("Acl_FabricD2H", 8) + m},
                  {n("Raw_FabricRead", 8) + m},
                  0});
  rows.push_back({"  H2D 1 MiB vs raw fi_write (delivery complete)",
                  Check::kInfo,
                  {n("Acl_FabricH2D", 1 << 20) + m},
                  {n("Raw_FabricWrite", 1 << 20) + m},
                  0});
  return rows;
}

}  // namespace bench
