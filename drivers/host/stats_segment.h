// Statistics segments (docs/smi.md): one small file per process in a shared-memory directory
// (/dev/shm by default), mapped shared so that the owner's counters are visible to monitors
// without any call on the owner's side. The writer is ShmStatsSegment (HostServices::
// create_statistics_segment); the rest is what a monitor (tools/aclvmm-smi) needs to find and
// read the segments of all processes. Every backend on a POSIX host shares them (drivers/host/, D11).
//
// The directory is shared with every other user, so everything in it is treated as hostile:
// - the writer creates its file exclusively under an unpredictable temporary name, checks that it
//   is a new regular file of its own (owner, one link) in a directory nobody else can rearrange
//   (sticky, or ours and writable by us only), and publishes it by rename(), which a sticky
//   directory refuses over another user's file. Only a file nobody else can resize is mapped.
// - a forked child stops writing into its parent's mapping at once (the mapping becomes a private
//   copy in the child) and never removes the parent's file.
// - a reader never maps: it copies the bytes with pread, so a file resized, emptied or replaced
//   while it is read cannot fault it, and it opens nothing that is not a regular file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/host/process_facts.h"

namespace aclvmm::dev::host {

// The process that owns a statistics segment, as the kernel reports it.
struct StatsOwner {
  int pid = 0;
  unsigned uid = 0;
  uint64_t start_time = 0;     // /proc/<pid>/stat starttime
  std::string name;            // comm, at most 15 bytes
  uint64_t pid_namespace = 0;  // inode of /proc/self/ns/pid: pids mean something only within it
};

// A small file in shared memory through which a process publishes statistics for monitors. It
// is created under a temporary name and zero-filled; the caller fills it and publish() renames
// it to its final name, so a reader never sees half a header. The mapping lives as long as this
// object, whatever happened to the name. Results are 0 or -errno.
// (posix_host_services.cpp presents it as a dev::StatisticsSegment.)
class StatsSegment {
 public:
  virtual ~StatsSegment() = default;  // unmaps; never removes the name
  virtual void* data() = 0;           // size() bytes, shared and writable
  virtual size_t size() const = 0;
  virtual const StatsOwner& owner() const = 0;
  virtual const std::string& path() const = 0;  // the final name
  virtual int publish() = 0;
  // Removes the final name. Only in the creating process: a forked child that exits must not
  // take its parent's segment away.
  virtual void withdraw() = 0;
};

class ShmStatsSegment final : public StatsSegment {
 public:
  static int create(const std::string& dir, const std::string& prefix, size_t size,
                    std::shared_ptr<StatsSegment>* out);
  // create() with the temporary names taken from `next_temp_name` (tests plant files under the
  // names it will try); create() draws them at random.
  static int create_with_names(const std::string& dir, const std::string& prefix, size_t size,
                               const std::function<std::string()>& next_temp_name,
                               std::shared_ptr<StatsSegment>* out);
  ~ShmStatsSegment() override;
  void* data() override { return data_; }
  size_t size() const override { return size_; }
  const StatsOwner& owner() const override { return owner_; }
  const std::string& path() const override { return path_; }
  int publish() override;
  void withdraw() override;

 private:
  friend struct SegmentRegistry;
  ShmStatsSegment() = default;
  // In a forked child: the mapping becomes a private copy (the parent's counters stay the
  // parent's) and the file is no longer this process's to rename or remove.
  void detach_after_fork() noexcept;
  void close_directory();

  void* data_ = nullptr;
  size_t size_ = 0;
  StatsOwner owner_;
  std::string path_;      // dir/name, for messages
  std::string dir_;
  // The directory that was checked, open until publish() (every name operation until then is in
  // it; a segment lives for the whole process and keeps no descriptor); withdraw() reopens it
  // and goes on only when it is still the same directory.
  int dir_fd_ = -1;
  uint64_t dir_dev_ = 0, dir_ino_ = 0;
  std::string name_;      // the final name
  std::string tmp_name_;  // the temporary name, until published
  uint64_t dev_ = 0, ino_ = 0;  // the file created, to recognise its name
  bool published_ = false;
  bool inherited_ = false;  // this process is a fork child of the creator
  ShmStatsSegment* prev_ = nullptr;  // the live segments of this process (SegmentRegistry)
  ShmStatsSegment* next_ = nullptr;
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

// A private copy of the first bytes of one segment file, read with pread: whatever the file's
// owner does to it meanwhile (shrink, grow, rewrite) cannot fault the reader.
class StatsView {
 public:
  // Copies exactly `size` bytes. -EINVAL for anything but a regular file at least that large
  // (a fifo or device is never opened, so nothing blocks), -errno when it cannot be read.
  static int open(const std::string& path, size_t size, std::unique_ptr<StatsView>* out);
  ~StatsView();
  StatsView(const StatsView&) = delete;
  StatsView& operator=(const StatsView&) = delete;
  const void* data() const { return data_; }  // aligned for any layout (64 bytes)
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  unsigned file_uid() const { return uid_; }  // the file's owner, as the kernel reports it

 private:
  friend int remove_stats_segment(const StatsView& view);
  StatsView() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  unsigned uid_ = 0;
  uint64_t dev_ = 0;
  uint64_t ino_ = 0;
};

// Removes the file behind `view` (a stale segment); 0 or -errno (-EACCES / -EPERM for another
// user's file in a sticky directory). -ESTALE when the name now belongs to another file: a new
// process with the same pid may have published its segment since the view was opened.
int remove_stats_segment(const StatsView& view);

}  // namespace aclvmm::dev::host
