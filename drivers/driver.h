// The driver interface: the only way the core reaches the machine.
//
// A backend owns physical memory objects and the CPU's view of virtual address windows. The core
// keeps the device MMU (which virtual address maps to which physical bytes, who may touch them) in
// its own tables and asks the backend only for the things that need the kernel: backing storage,
// CPU mappings where the CPU really touches memory, and copies that must not crash on bad pointers.
//
// Results are 0 or a negative errno, like the Linux calls underneath, so that the core can apply the
// vendor's errno -> error-code table (behavior.md section 0) without the driver knowing it.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace aclvmm::drv {

// CPU protection of a mapped range. Values equal the ACL access flags on purpose.
enum class CpuAccess : uint8_t { kNone = 0, kRead = 1, kReadWrite = 3 };

// One piece of physical memory (an HBM or host allocation). Fresh memory reads as zeros.
class PhysicalMemory {
 public:
  virtual ~PhysicalMemory() = default;
  virtual uint64_t size() const = 0;
  // Copy between the physical memory and a host buffer. A bad host buffer gives -EFAULT, never a
  // crash; offsets past the end give -EINVAL.
  virtual int read(uint64_t offset, void* dst, size_t n) const = 0;
  virtual int write(uint64_t offset, const void* src, size_t n) = 0;
  virtual int fill(uint64_t offset, uint8_t value, size_t n) = 0;
  // A file descriptor that represents the memory (for passing to another process), or -1. Its
  // size cannot change: whoever receives it can read, write and zero the bytes, nothing more.
  virtual int fd() const = 0;
  // Allocates the pages of [offset, offset+n) now (their content is unchanged): fault tracking
  // can only hand the CPU pages that exist.
  virtual int populate(uint64_t offset, size_t n) = 0;
  // Copies n bytes at `offset` into `dst` at `dst_offset` (device-to-device) in one pass: through
  // dst.write() from this memory's own CPU view where it has one.
  virtual int copy_to(uint64_t offset, PhysicalMemory& dst, uint64_t dst_offset, size_t n) const = 0;
};

struct CpuFault {
  uint64_t address = 0;
  bool write = false;
  bool write_protect = false;  // a write to a page protected by protect_writes()
};

// CPU fault tracking for managed memory, without a process-wide signal handler: the CPU's access
// to a watched range is revoked, the next CPU access to it blocks and is reported by next_fault(),
// and resolve() lets the CPU in again and wakes the blocked thread. Watched ranges must be
// mapped MAP_SHARED from a PhysicalMemory's descriptor, in 2 MiB-aligned pieces.
class FaultTracker {
 public:
  virtual ~FaultTracker() = default;
  // 0 when faults can be tracked on this machine (else -errno, e.g. -EPERM); idempotent.
  virtual int start() = 0;
  virtual bool started() const = 0;
  // Closes the tracker (nothing may be watched any more); start() may open it again.
  virtual void stop() = 0;
  // In a forked child, on the tracker inherited from the parent: lets go of it without acting on
  // it. Whatever it tracks belongs to the parent (unregistering or waking would act on the
  // parent's ranges, and reading its faults would steal them), and a lock of the parent's may be
  // held. The object is not used again.
  virtual void abandon() = 0;
  virtual int watch(uint64_t va, uint64_t size) = 0;
  virtual int unwatch(uint64_t va, uint64_t size) = 0;
  // The CPU's next access to [va, va+size) faults (the bytes stay in the physical memory).
  virtual int revoke(uint64_t va, uint64_t size) = 0;
  // The CPU may access [va, va+size) again; threads blocked on it resume.
  virtual int resolve(uint64_t va, uint64_t size) = 0;
  // Waits up to timeout_ms for a fault: 0 with *fault set, -ETIMEDOUT, or -errno.
  virtual int next_fault(int timeout_ms, CpuFault* fault) = 0;

  // Write tracking, where the machine has it (after start()): a CPU write to a protected page
  // blocks and is reported with write_protect set, while reads go on unhindered.
  virtual bool tracks_writes() const = 0;
  // -EOPNOTSUPP without write tracking.
  virtual int protect_writes(uint64_t va, uint64_t size) = 0;
  // Lets writes in again and wakes the writers blocked in the range.
  virtual int allow_writes(uint64_t va, uint64_t size) = 0;
  // As resolve(), but the pages come back write-protected (resolve() without write tracking).
  virtual int resolve_read_only(uint64_t va, uint64_t size) = 0;
};

struct PhysicalRequest {
  uint64_t size = 0;
  int numa_node = -1;       // host memory placement; -1: no preference
  bool huge_1g = false;     // informational: the backend may choose its page size
};

// The process that owns a statistics segment, as the kernel reports it.
struct StatsOwner {
  int pid = 0;
  unsigned uid = 0;
  uint64_t start_time = 0;   // /proc/<pid>/stat starttime
  std::string name;          // comm, at most 15 bytes
  uint64_t pid_namespace = 0;  // inode of /proc/self/ns/pid: pids mean something only within it
};

// A small file in shared memory through which a process publishes statistics for monitors
// (aclvmm-smi, docs/smi.md). It is created under a temporary name and zero-filled; the caller
// fills it and publish() renames it to its final name, so a reader never sees half a header.
// The mapping lives as long as this object, whatever happened to the name.
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

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Claims [preferred, preferred+size) as an inaccessible, unbacked placeholder. When that range is
  // taken, claims another range of the same size aligned to `align` and reports it in *base.
  virtual int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) = 0;
  // Claims exactly [addr, addr+size) as a placeholder; -EEXIST when anything is there.
  virtual int claim_fixed(uint64_t addr, uint64_t size) = 0;
  virtual int release_window(uint64_t base, uint64_t size) = 0;

  virtual int create_physical(const PhysicalRequest& req, std::shared_ptr<PhysicalMemory>* out) = 0;
  // Wraps a descriptor received from another process (takes ownership of fd, closed on failure).
  // Refuses what another process could use against this one later: -EMEDIUMTYPE when it is not
  // memory this backend creates (a memfd), -EACCES when it is not open for reading and writing,
  // -EPERM when its size is not sealed or writes can be sealed off, -EINVAL when its size is not
  // exactly `size`.
  virtual int adopt_physical(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out) = 0;
  // Transitional (issue 14 step 2): physical memory made by the device backend
  // (drivers/legacy_memory.h) as this backend hands its own out, so that a decorator's per-step
  // checks reach it too. May throw std::bad_alloc.
  virtual std::shared_ptr<PhysicalMemory> instrument(std::shared_ptr<PhysicalMemory> memory) {
    return memory;
  }

  // Makes [va, va+size) inside a claimed window show `mem` from `offset` with CPU protection
  // `access`. kNone restores the placeholder (no kernel mapping is kept for it).
  virtual int map_cpu(uint64_t va, uint64_t size, PhysicalMemory& mem, uint64_t offset,
                      CpuAccess access) = 0;
  // Restores the placeholder over [va, va+size).
  virtual int unmap_cpu(uint64_t va, uint64_t size) = 0;
  // Binds host memory mapped at [va, va+size) to a NUMA node and moves the pages already there;
  // node -1 restores the default policy. -EOPNOTSUPP without NUMA.
  virtual int bind_numa(uint64_t va, uint64_t size, int node) = 0;

  // CPU copies on process memory that report a bad pointer as -EFAULT instead of crashing.
  virtual int host_copy(void* dst, const void* src, size_t n) = 0;
  virtual int host_fill(void* dst, uint8_t value, size_t n) = 0;

  // CPU fault tracking for managed memory.
  virtual FaultTracker& fault_tracker() = 0;

  // A statistics segment named <dir>/<prefix>.<uid>.<pid>; -errno (-ENOENT: no such dir).
  // Optional: a backend without one is simply not shown by monitors.
  virtual int create_stats_segment(const std::string& dir, const std::string& prefix, size_t size,
                                   std::shared_ptr<StatsSegment>* out) {
    (void)dir, (void)prefix, (void)size, (void)out;
    return -EOPNOTSUPP;
  }

  // Host facts.
  virtual uint64_t host_memory_total() = 0;
  virtual uint64_t host_memory_free() = 0;
  virtual int numa_node_count() = 0;  // 0 when NUMA is not available
  virtual int current_numa_node() = 0;  // of the calling thread's CPU; 0 without NUMA
  virtual size_t host_page_size() = 0;
  // Zero-filled memory for the core's lookup tables (ChunkIndex), populated on first touch and on
  // huge pages where the system allows, so that random lookups in a large table do not miss the
  // TLB. Never returned while the process runs. nullptr on failure.
  virtual void* allocate_table(uint64_t bytes) {
    (void)bytes;
    return nullptr;  // a backend without tables: the core answers from its trees
  }
};

// Creates the backend called `name` ("emu"); nullptr when there is no such backend.
std::unique_ptr<Backend> create_backend(const std::string& name);

}  // namespace aclvmm::drv
