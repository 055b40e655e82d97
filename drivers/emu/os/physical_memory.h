// The emulator's physical memory as the operating system gives it: a piece of bytes that stands
// for an HBM or host allocation of the emulated NPU (a sealed memfd, os/memfd_memory.h), and the
// CPU protection of a view of it (os/placeholders.h).
//
// Everything under drivers/emu/os/ is emu's own: the core never sees these objects. It sees
// PhysicalIds (drivers/physical_allocator.h); an EmuPhysical (device/physical_object.h) holds one
// of these behind each id.
//
// Contract
// - Fresh memory reads as zeros; its size never changes.
// - read/write/fill/copy_to: 0, -EINVAL for a range past the end, -EFAULT for a bad host buffer
//   (never a crash), or the -errno of the system call underneath.
// - Threading: any thread, concurrently; overlapping writes race as stores to memory do.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev::emu::os {

// CPU protection of a mapped range. The values equal the ACL access flags on purpose.
enum class CpuAccess : uint8_t { kNone = 0, kRead = 1, kReadWrite = 3 };

class PhysicalMemory {
 public:
  virtual ~PhysicalMemory() = default;
  virtual uint64_t size() const = 0;
  // Copies between the memory and a host buffer.
  virtual int read(uint64_t offset, void* dst, size_t n) const = 0;
  virtual int write(uint64_t offset, const void* src, size_t n) = 0;
  virtual int fill(uint64_t offset, uint8_t value, size_t n) = 0;
  // The descriptor that represents the memory (passed to another process by the sharing
  // protocol), or -1. Whoever receives it can read, write and zero the bytes, nothing more.
  virtual int fd() const = 0;
  // Allocates the pages of [offset, offset+n) now (their content is unchanged): CPU fault
  // tracking can only hand the CPU pages that exist.
  virtual int populate(uint64_t offset, size_t n) = 0;
  // Copies n bytes at `offset` into `dst` at `dst_offset` in one pass, through dst.write() from
  // this memory's own CPU view where it has one.
  virtual int copy_to(uint64_t offset, PhysicalMemory& dst, uint64_t dst_offset, size_t n) const = 0;
  // The memory is exported: another process may hold its descriptor from now on, so it must not
  // be recycled for another allocation of this one (memory_recycler.h).
  virtual void mark_shared() {}
};

}  // namespace aclvmm::dev::emu::os
