// HostServices: what the core needs from the host operating system that is no device's business:
// host memory facts, NUMA, the page size, the statistics segment that aclvmm-smi reads, and
// memory for the core's lookup tables.
//
// Why not "device": none of this differs between a software NPU and a real one; a hal backend
// needs the very same statistics segment and table memory as emu. Why not in the core: each is
// a system call (shm files and mmap, mbind, /proc reads), and the core makes none (issue 14). So
// these stay an interface, implemented once for POSIX hosts (drivers/host/, today's
// drivers/emu/stats_segment.*, host_info.*, allocate_table), which the emu and hal backends both
// hand out; the fake backend has an in-memory one (segments are plain buffers, tables are
// calloc'ed, facts are configured).
//
// Contract
// - page_size() and numa_node_count() are constant for the backend's life (the core caches
//   them: the page size is on the pointer-query path). numa_node_count() is 0 without NUMA.
// - memory_total()/memory_free(): the host's memory, as aclrtGetMemInfo reports it for host
//   memory and as the backend bounds host allocations.
// - current_numa_node(): the node of the calling thread's CPU (HOST_NUMA_CURRENT); 0 without
//   NUMA.
// - create_statistics_segment(): a segment named <dir>/<prefix>.<uid>.<pid>, zero-filled,
//   invisible to readers until publish() (docs/smi.md: the directory is hostile; the checks stay
//   the implementation's). kNotFound for a missing directory, kNotSupported when the host
//   has none. publish() once; withdraw() removes the name (a no-op before publish). The
//   segment's mapping lives as long as the object; a forked child stops writing the parent's
//   segment (its copy becomes private) and never removes its name.
// - allocate_table(): zero-filled memory of `bytes`, populated on first touch, on huge pages
//   where the host allows (the pointer index: a random lookup must not miss the TLB). Never
//   returned while the process runs (fake: freed with the backend, which no core user of the
//   table outlives); nullptr when it cannot be had (the core then answers from its trees).
//
// Threading: every method from any thread. A segment's data() is written by the core's threads
// with atomics; publish/withdraw are called by the core once each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "drivers/device_result.h"

namespace aclvmm::dev {

// The process that owns a statistics segment, as the kernel reports it.
struct SegmentOwner {
  int32_t pid = 0;
  uint32_t uid = 0;
  uint64_t start_time = 0;     // /proc/<pid>/stat starttime
  std::string name;            // comm, at most 15 bytes
  uint64_t pid_namespace = 0;  // pids mean something only within it
};

class StatisticsSegment {
 public:
  virtual ~StatisticsSegment() = default;  // unmaps; never removes the name
  virtual void* data() = 0;                // size() bytes, shared and writable
  virtual size_t size() const = 0;
  virtual const SegmentOwner& owner() const = 0;
  virtual const std::string& path() const = 0;  // the final name
  virtual Result publish() = 0;
  virtual void withdraw() = 0;  // removes the final name; only in the creating process
};

class HostServices {
 public:
  virtual ~HostServices() = default;
  virtual uint64_t page_size() const = 0;
  virtual uint64_t memory_total() = 0;
  virtual uint64_t memory_free() = 0;
  virtual int32_t numa_node_count() const = 0;
  virtual int32_t current_numa_node() = 0;
  virtual Result create_statistics_segment(const std::string& dir, const std::string& prefix,
                                           size_t size,
                                           std::shared_ptr<StatisticsSegment>* out) = 0;
  virtual void* allocate_table(uint64_t bytes) = 0;
};

}  // namespace aclvmm::dev
