#include "render.h"

#include <cstdio>
#include <vector>

namespace aclvmm::smi_tool {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// One table row: each cell left-aligned in its column, "| a | b |". A longer cell (a long
// directory) widens its row rather than losing characters.
std::string row(const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string s = "|";
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    s += " " + c + std::string(c.size() < widths[i] ? widths[i] - c.size() : 0, ' ') + " |";
  }
  return s + "\n";
}

std::string rule(const std::vector<size_t>& widths, char fill) {
  std::string s = "+";
  for (size_t w : widths) s += std::string(w + 2, fill) + "+";
  return s + "\n";
}

size_t total_width(const std::vector<size_t>& widths) {
  size_t n = 0;
  for (size_t w : widths) n += w + 3;
  return n - 3;
}

std::string mib(uint64_t bytes) { return std::to_string(bytes / kMiB); }

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      // comm is any bytes the process chose; \u00XX keeps the output valid JSON and ASCII.
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string render_table(const Snapshot& snap, const std::string& version) {
  const std::vector<size_t> dev_w = {6, 18, 30, 12};
  const std::vector<size_t> proc_w = {6, 12, 20, 28};  // as wide as the device table
  const std::vector<size_t> one_w = {total_width(dev_w)};
  std::string out = rule(one_w, '-');
  out += row({"aclvmm-smi " + version + "    Segments: " + snap.dir}, one_w);
  out += rule(dev_w, '-');
  out += row({"NPU", "Name", "HBM-Usage(MB)", "Processes"}, dev_w);
  out += rule(dev_w, '=');
  if (snap.devices.empty()) {
    // Devices are emulated per process: with no live process nothing describes them.
    out += row({"No devices reported"}, one_w);
    out += rule(one_w, '-');
  }
  for (const DeviceSummary& d : snap.devices) {
    out += row({std::to_string(d.id), d.soc, mib(d.used) + " / " + mib(d.total),
                std::to_string(d.processes)}, dev_w);
    out += rule(dev_w, '-');
  }
  out += "\n";
  out += rule(proc_w, '-');
  out += row({"NPU", "Process id", "Process name", "Process memory(MB)"}, proc_w);
  out += rule(proc_w, '=');
  if (snap.processes.empty()) {
    const std::vector<size_t> wide = {total_width(proc_w)};
    out += row({"No running processes found"}, wide);
  }
  for (const ProcessInfo& p : snap.processes) {
    bool any = false;
    for (const DeviceUsage& d : p.devices) {
      if (d.used == 0) continue;
      any = true;
      out += row({std::to_string(d.id), std::to_string(p.pid), p.name, mib(d.used)}, proc_w);
    }
    // A process that holds no device memory still uses aclvmm: shown once, without a device.
    if (!any) out += row({"-", std::to_string(p.pid), p.name, "0"}, proc_w);
  }
  out += rule(proc_w, '-');
  if (snap.processes.empty()) return out;
  // What each process holds besides memory: one row per process.
  const std::vector<size_t> live_w = {10, 15, 8, 11, 8, 8};  // as wide as the tables above
  out += "\n";
  out += rule(live_w, '-');
  out += row({"Process id", "Process name", "IPC keys", "IPC imports", "Host reg", "Binaries"},
             live_w);
  out += rule(live_w, '=');
  for (const ProcessInfo& p : snap.processes) {
    out += row(
        {std::to_string(p.pid), p.name, std::to_string(p.ipc_keys), std::to_string(p.ipc_imports),
         std::to_string(p.host_registrations), std::to_string(p.binaries)},
        live_w);
  }
  out += rule(live_w, '-');
  return out;
}

std::string render_json(const Snapshot& snap, const std::string& version) {
  std::string out = "{\n  \"version\": " + json_string(version) + ",\n  \"dir\": " +
                    json_string(snap.dir) + ",\n  \"devices\": [";
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSummary& d = snap.devices[i];
    out += std::string(i ? "," : "") + "\n    {\"id\": " + std::to_string(d.id) +
           ", \"soc\": " + json_string(d.soc) + ", \"memory_total\": " + std::to_string(d.total) +
           ", \"memory_used\": " + std::to_string(d.used) +
           ", \"processes\": " + std::to_string(d.processes) + "}";
  }
  out += snap.devices.empty() ? "],\n" : "\n  ],\n";
  out += "  \"processes\": [";
  for (size_t i = 0; i < snap.processes.size(); ++i) {
    const ProcessInfo& p = snap.processes[i];
    out += std::string(i ? "," : "") + "\n    {\"pid\": " + std::to_string(p.pid) +
           ", \"uid\": " + std::to_string(p.uid) + ", \"name\": " + json_string(p.name) +
           ", \"start_time\": " + std::to_string(p.start_time) + ", \"soc\": " +
           json_string(p.soc) + ",\n     \"devices\": [";
    for (size_t j = 0; j < p.devices.size(); ++j) {
      const DeviceUsage& d = p.devices[j];
      out += std::string(j ? ", " : "") + "{\"id\": " + std::to_string(d.id) +
             ", \"memory_total\": " + std::to_string(d.total) +
             ", \"memory_used\": " + std::to_string(d.used) + "}";
    }
    out += "],\n     \"live\": {\"ipc_keys\": " + std::to_string(p.ipc_keys) +
           ", \"ipc_imports\": " + std::to_string(p.ipc_imports) +
           ", \"host_registrations\": " + std::to_string(p.host_registrations) +
           ", \"binaries\": " + std::to_string(p.binaries) + "}}";
  }
  out += snap.processes.empty() ? "],\n" : "\n  ],\n";
  out += "  \"stale\": [";
  for (size_t i = 0; i < snap.stale.size(); ++i) {
    const StaleSegment& s = snap.stale[i];
    out += std::string(i ? "," : "") + "\n    {\"pid\": " + std::to_string(s.pid) +
           ", \"path\": " + json_string(s.path) +
           ", \"removed\": " + (s.removed ? "true" : "false") + "}";
  }
  out += snap.stale.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace aclvmm::smi_tool
