// What aclvmm-smi shows: the live processes' statistics segments, read once (docs/smi.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aclvmm::smi_tool {

struct DeviceUsage {
  int id = 0;
  uint64_t total = 0;
  uint64_t used = 0;
};

struct ProcessInfo {
  int pid = 0;
  unsigned uid = 0;
  uint64_t start_time = 0;
  std::string name;
  std::string soc;
  std::vector<DeviceUsage> devices;  // ids 0..device_count-1 of that process
  // What the process holds besides memory (smi::LiveCount; zeros from a version-1 segment).
  uint64_t ipc_keys = 0;
  uint64_t ipc_imports = 0;
  uint64_t host_registrations = 0;
  uint64_t binaries = 0;
};

// A segment left by a process that died without tearing down (or whose pid now belongs to
// another process).
struct StaleSegment {
  int pid = 0;
  std::string path;
  bool removed = false;
};

// A device summed over the processes that report it.
struct DeviceSummary {
  int id = 0;
  std::string soc;          // "mixed" when processes disagree
  uint64_t total = 0;       // the largest total reported
  uint64_t used = 0;
  int processes = 0;        // processes with memory on it
};

struct Snapshot {
  std::string dir;
  std::vector<ProcessInfo> processes;  // by pid
  std::vector<StaleSegment> stale;
  std::vector<DeviceSummary> devices;  // by id
};

// Reads every segment in `dir`. Stale ones are left out of `processes` and, when remove_stale,
// deleted (where permissions allow). 0, or -errno when the directory cannot be read.
int take_snapshot(const std::string& dir, bool remove_stale, Snapshot* out);

}  // namespace aclvmm::smi_tool
