// Statistics segments (docs/smi.md): one small file per process in a shared-memory directory
// (/dev/shm by default), mapped shared so that the owner's counters are visible to monitors
// without any call on the owner's side. The writer is ShmStatsSegment (Backend::
// create_stats_segment); the rest is what a monitor (tools/aclvmm-smi) needs to find and read
// the segments of all processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/driver.h"

namespace aclvmm::drv::emu {

class ShmStatsSegment final : public StatsSegment {
 public:
  static int create(const std::string& dir, const std::string& prefix, size_t size,
                    std::shared_ptr<StatsSegment>* out);
  ~ShmStatsSegment() override;
  void* data() override { return data_; }
  size_t size() const override { return size_; }
  const StatsOwner& owner() const override { return owner_; }
  const std::string& path() const override { return path_; }
  int publish() override;
  void withdraw() override;

 private:
  ShmStatsSegment() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  StatsOwner owner_;
  std::string path_;
  std::string tmp_path_;
  bool published_ = false;
};

// A segment file found by list_stats_segments: the uid and pid come from its name.
struct StatsFile {
  std::string path;
  unsigned uid = 0;
  int pid = 0;
};

// The files named <prefix>.<uid>.<pid> in `dir` (temporary names of segments being created do not
// match). 0 or -errno of opening the directory.
int list_stats_segments(const std::string& dir, const std::string& prefix,
                        std::vector<StatsFile>* out);

// A read-only shared view of one segment file: its owner's later updates show through.
class StatsView {
 public:
  static int open(const std::string& path, std::unique_ptr<StatsView>* out);
  ~StatsView();
  StatsView(const StatsView&) = delete;
  StatsView& operator=(const StatsView&) = delete;
  const void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  friend int remove_stats_segment(const StatsView& view);
  StatsView() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  uint64_t dev_ = 0;
  uint64_t ino_ = 0;
};

// Removes the file behind `view` (a stale segment); 0 or -errno (-EACCES / -EPERM for another
// user's file in a sticky directory). -ESTALE when the name now belongs to another file: a new
// process with the same pid may have published its segment since the view was opened.
int remove_stats_segment(const StatsView& view);

// Start time of `pid` in /proc/<pid>/stat units, 0 when there is no such process.
uint64_t process_start_time(int pid);
// The calling process's pid namespace (inode of /proc/self/ns/pid), 0 when unknown.
uint64_t own_pid_namespace();

}  // namespace aclvmm::drv::emu
