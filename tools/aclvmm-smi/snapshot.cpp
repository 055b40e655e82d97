#include "snapshot.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "drivers/host/process_facts.h"
#include "drivers/host/stats_segment.h"
#include "observability/smi_layout.h"

namespace aclvmm::smi_tool {
namespace {

std::string text_field(const char* p, size_t cap) { return std::string(p, strnlen(p, cap)); }

// A segment this version understands, written by the process its name says: every header field
// is checked, since any user can put any bytes into a file of that name (the view is a private
// copy, so the values cannot change between check and use).
const smi::Segment* parse(const dev::host::StatsView& view, const dev::host::StatsFile& file) {
  if (view.size() < sizeof(smi::Segment)) return nullptr;
  const auto* s = static_cast<const smi::Segment*>(view.data());
  // Version 1 has the same layout without the live counts (zeros there).
  const bool known = s->version == smi::kVersion || s->version == smi::kVersionWithoutLiveCounts;
  if (s->magic != smi::kMagic || !known || s->size != sizeof(smi::Segment)) return nullptr;
  // The file's owner is the uid of its name and header: no user can speak for another.
  if (s->pid != file.pid || s->uid != file.uid || view.file_uid() != file.uid) return nullptr;
  if (s->device_count < 0 || s->device_count > smi::kMaxDevices) return nullptr;
  const uint32_t active = s->active.load(std::memory_order_relaxed);
  if (active > 1) return nullptr;
  return s;
}

// The owner is alive when its pid exists with the recorded start time (0: unknown at creation,
// then only the pid can be checked).
bool owner_alive(const smi::Segment& s) {
  const uint64_t now = dev::host::process_start_time(s.pid);
  if (now == 0) return false;
  return s.start_time == 0 || now == s.start_time;
}

void summarise(Snapshot* snap) {
  for (const ProcessInfo& p : snap->processes) {
    for (const DeviceUsage& d : p.devices) {
      if (d.id >= static_cast<int>(snap->devices.size())) snap->devices.resize(d.id + 1);
      DeviceSummary& sum = snap->devices[d.id];
      sum.id = d.id;
      if (sum.soc.empty()) {
        sum.soc = p.soc;
      } else if (sum.soc != p.soc) {
        sum.soc = "mixed";
      }
      sum.total = std::max(sum.total, d.total);
      // Saturating: the numbers are whatever the files say.
      sum.used = d.used > UINT64_MAX - sum.used ? UINT64_MAX : sum.used + d.used;
      if (d.used != 0) ++sum.processes;
    }
  }
}

}  // namespace

int take_snapshot(const std::string& dir, bool remove_stale, Snapshot* out) {
  out->dir = dir;
  std::vector<dev::host::StatsFile> files;
  if (int rc = dev::host::list_stats_segments(dir, smi::kPrefix, &files)) return rc;
  const uint64_t own_ns = dev::host::own_pid_namespace();
  for (const dev::host::StatsFile& f : files) {
    std::unique_ptr<dev::host::StatsView> view;
    // Withdrawn meanwhile, not a regular file, too short, or unreadable: skipped.
    if (dev::host::StatsView::open(f.path, sizeof(smi::Segment), &view) != 0) continue;
    const smi::Segment* s = parse(*view, f);
    if (s == nullptr) continue;  // another version's, or not a segment at all: not ours to judge
    // A process in another pid namespace (a container sharing /dev/shm): its pid cannot be
    // checked from here, so it is neither listed nor judged stale.
    if (s->pid_namespace != 0 && own_ns != 0 && s->pid_namespace != own_ns) continue;
    if (!owner_alive(*s)) {
      StaleSegment stale{f.pid, f.path, false};
      if (remove_stale) stale.removed = dev::host::remove_stats_segment(*view) == 0;
      out->stale.push_back(stale);
      continue;
    }
    // After aclFinalize the process lives on without aclvmm; the file goes when it exits.
    if (s->active.load(std::memory_order_acquire) == 0) continue;
    ProcessInfo p;
    p.pid = s->pid;
    p.uid = s->uid;
    p.start_time = s->start_time;
    p.name = text_field(s->name, sizeof(s->name));
    p.soc = text_field(s->soc, sizeof(s->soc));
    for (int i = 0; i < s->device_count; ++i) {
      // Relaxed loads: each counter is exact on its own; they are not a consistent set.
      p.devices.push_back({i, s->devices[i].total, s->devices[i].used.load(std::memory_order_relaxed)});
    }
    if (s->version != smi::kVersionWithoutLiveCounts) {  // version 1: zeros, whatever is there
      const auto live = [s](smi::LiveCount c) {
        return s->live[static_cast<uint32_t>(c)].load(std::memory_order_relaxed);
      };
      p.ipc_keys = live(smi::LiveCount::kIpcKeys);
      p.ipc_imports = live(smi::LiveCount::kIpcImports);
      p.host_registrations = live(smi::LiveCount::kHostRegistrations);
      p.binaries = live(smi::LiveCount::kBinaries);
    }
    out->processes.push_back(std::move(p));
  }
  std::sort(out->processes.begin(), out->processes.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  std::sort(out->stale.begin(), out->stale.end(),
            [](const StaleSegment& a, const StaleSegment& b) { return a.pid < b.pid; });
  summarise(out);
  return 0;
}

}  // namespace aclvmm::smi_tool
