// The core's own copy path, kept for copies and fills that touch the managed window until
// managed memory moves into the backend (migration step 6, docs/device-interface.md §11): each
// side is translated by the core (managed pages migrated for the executing device), and the
// bytes move through the legacy seam's physical memory (whose instrumentation is the drv.read,
// drv.write, drv.fill, drv.populate and drv.host_copy steps). Step 6 replaces this file with
// kManaged endpoints.
#include "vmm/memory_ops.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <new>

namespace aclvmm::memops {
namespace {

Status io_error(int rc, const char* what, uint64_t addr) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               std::string(what) + " at " + buf + " failed: " +
                   (rc == -EFAULT ? "the address is not accessible" : "errno " + std::to_string(-rc)));
}

// Moves len bytes between a translated range (at byte `off` of it) and the host buffer `buf`.
Status transfer(drv::Backend& be, const Translation& t, uint64_t va, uint64_t off, void* buf,
                uint64_t len, bool to_range) {
  if (t.cpu) {
    void* range = reinterpret_cast<void*>(va + off);
    int rc = to_range ? be.host_copy(range, buf, len) : be.host_copy(buf, range, len);
    return rc == 0 ? Status::Ok() : io_error(rc, to_range ? "writing" : "reading", va + off);
  }
  uint64_t pos = 0;  // start of the current segment within the range
  auto* bytes = static_cast<uint8_t*>(buf);
  for (const Segment& s : t.segments) {
    if (len == 0) break;
    if (off >= pos + s.length) {
      pos += s.length;
      continue;
    }
    uint64_t in = off - pos;
    uint64_t n = std::min(len, s.length - in);
    int rc = to_range ? s.memory->write(s.offset + in, bytes, n)
                      : s.memory->read(s.offset + in, bytes, n);
    if (rc == -EFAULT) {
      return io_error(rc, to_range ? "reading the host buffer" : "writing the host buffer",
                      reinterpret_cast<uint64_t>(bytes));
    }
    if (rc != 0) return io_error(rc, to_range ? "writing device memory" : "reading device memory", va + off);
    bytes += n;
    off += n;
    len -= n;
    pos += s.length;
  }
  return Status::Ok();
}

}  // namespace

Status MemoryOps::translate(uint64_t va, uint64_t n, bool write, const Accessor& who,
                            Translation* out) {
  // Managed memory migrates to the executing device; without one it is reached in place.
  if (managed_.in_window(va)) return managed_.device_access(va, n, who.device, write, out);
  return space_.translate(va, n, write, who, out);
}

Status MemoryOps::managed_copy(void* dst, const void* src, size_t n, const Accessor& who) {
  const uint64_t d = reinterpret_cast<uint64_t>(dst), s = reinterpret_cast<uint64_t>(src);
  Translation td, ts;
  ACLVMM_RETURN_IF_ERROR(translate(d, n, true, who, &td));
  ACLVMM_RETURN_IF_ERROR(translate(s, n, false, who, &ts));
  if (ts.cpu) return transfer(rt_.backend(), td, d, 0, const_cast<void*>(src), n, true);
  if (td.cpu) return transfer(rt_.backend(), ts, s, 0, dst, n, false);
  // Device to device: each overlapping piece of a source and a destination segment in one pass.
  size_t si = 0, di = 0;
  uint64_t s_in = 0, d_in = 0, done = 0;  // offsets inside the current segments
  while (done < n && si < ts.segments.size() && di < td.segments.size()) {
    const Segment& from = ts.segments[si];
    const Segment& to = td.segments[di];
    const uint64_t len = std::min(from.length - s_in, to.length - d_in);
    int rc = from.memory->copy_to(from.offset + s_in, *to.memory, to.offset + d_in, len);
    if (rc != 0) return io_error(rc, "copying device memory", d + done);
    done += len;
    s_in += len;
    d_in += len;
    if (s_in == from.length) ++si, s_in = 0;
    if (d_in == to.length) ++di, d_in = 0;
  }
  return Status::Ok();
}

Status MemoryOps::managed_fill(void* dst, uint8_t value, size_t n, const Accessor& who) {
  const uint64_t d = reinterpret_cast<uint64_t>(dst);
  Translation t;
  ACLVMM_RETURN_IF_ERROR(translate(d, n, true, who, &t));
  if (t.cpu) {
    int rc = rt_.backend().host_fill(dst, value, n);
    return rc == 0 ? Status::Ok() : io_error(rc, "filling", d);
  }
  uint64_t done = 0;
  const bool managed = managed_.in_window(d);
  for (const Segment& s : t.segments) {
    int rc = s.memory->fill(s.offset, value, s.length);
    // A zero fill frees pages; managed pages must exist for the CPU to be handed them back.
    if (rc == 0 && managed && value == 0) rc = s.memory->populate(s.offset, s.length);
    if (rc != 0) return io_error(rc, "filling device memory", d + done);
    done += s.length;
  }
  return Status::Ok();
}

}  // namespace aclvmm::memops
