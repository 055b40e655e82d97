#include "drivers/emu/device/copy_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "drivers/copy_rights.h"
#include "drivers/emu/device/hazard.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/host_copy.h"
#include "drivers/emu/unified/emu_unified.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {
namespace {

using Side = CopyOutcome::Side;

// One endpoint's piece: the memory a mapped range reaches (with the copy's own reference), the
// memfd of a managed range (`managed`, likewise held), or process memory (neither) at `address`.
struct Piece {
  EmuPhysical* memory = nullptr;
  std::shared_ptr<os::PhysicalMemory> managed;
  uint64_t offset = 0;
  uint64_t length = 0;
  Piece() = default;
  Piece(const Piece&) = delete;
  Piece& operator=(const Piece&) = delete;
  ~Piece() {
    if (memory != nullptr) memory->drop();
  }
  // The bytes of a device-side piece; nullptr for process memory.
  os::PhysicalMemory* bytes() const {
    return memory != nullptr ? &memory->memory() : managed.get();
  }
};

// The entry covering va in hazard slot `slot`, checked for the executor, with a reference on its
// memory taken before the slot is given back (an unmap waits for the slot, hazard.h).
Result reach(const EmuPageTable& table, size_t slot, uint64_t va, uint64_t left, bool write,
             const Executor& who, Piece* out) {
  const MmuEntry* e = table.protect(slot, va);
  Result result = Result::success();
  if (e == nullptr || va - e->va >= e->size) {
    result = Result::from_errno(EFAULT);
  } else if (!executor_may_reach(who, e->owner, e->kind == AddressInfo::Kind::kDeviceBlock, write,
                                 [e](Location l) { return e->access(l); })) {
    result = Result::from_errno(EACCES);
  } else {
    e->memory->retain();
    out->memory = e->memory;
    out->offset = e->offset + (va - e->va);
    out->length = std::min(left, e->size - (va - e->va));
  }
  hazard::release(slot);
  return result;
}

// The first piece of [va, +n) that the executor cannot reach through the page table, as a
// failed outcome; an empty outcome when every piece can be reached. A copy checks its mapped
// sides whole before it moves a byte, so a refused copy changes nothing (the core's own
// translation checked both ranges first before step 3, and applications rely on it); only a
// mapping changed while the copy runs, or a bad host pointer, can leave part of it done.
CopyOutcome reachable(const EmuPageTable& table, size_t slot, uint64_t va, uint64_t n,
                      bool write, const Executor& who, Side side) {
  for (uint64_t done = 0; done < n;) {
    Piece p;
    Result r = reach(table, slot, va + done, n - done, write, who, &p);
    if (!r.ok()) return CopyOutcome{r, side, va + done};
    done += p.length;
  }
  return CopyOutcome{};
}

// Whether some byte of [address, +n) cannot be read (or written) by the CPU, and the first one
// in *at (one byte probed per page).
bool find_unreachable(uint64_t address, uint64_t n, bool write, uint64_t* at) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (uint64_t a = address; a - address < n; a = (a / page + 1) * page) {
    auto* p = reinterpret_cast<uint8_t*>(a);
    uint8_t byte = 0;
    // Writes back what it read: the copy overwrites this byte anyway.
    if (os::host_copy(&byte, p, 1) != 0 || (write && os::host_copy(p, &byte, 1) != 0)) {
      *at = a;
      return true;
    }
    if (a + page < a) break;
  }
  return false;
}

// A failed host-side access of [address, +n): kBadAddress at its first unreachable byte (its
// start when every page answers by now: the process changed its mappings meanwhile).
CopyOutcome host_fault(Side side, uint64_t address, uint64_t n, bool write) {
  uint64_t at = address;
  (void)find_unreachable(address, n, write, &at);
  return CopyOutcome{Result::from_errno(EFAULT), side, at};
}

// Both sides host memory: the side whose bad byte comes first in the copy's order.
CopyOutcome host_pair_fault(uint64_t src_va, uint64_t dst_va, uint64_t len) {
  uint64_t bad_src = src_va, bad_dst = dst_va;
  const bool src_bad = find_unreachable(src_va, len, false, &bad_src);
  const bool dst_bad = find_unreachable(dst_va, len, true, &bad_dst);
  if (dst_bad && (!src_bad || bad_dst - dst_va < bad_src - src_va)) {
    return CopyOutcome{Result::from_errno(EFAULT), Side::kDestination, bad_dst};
  }
  return CopyOutcome{Result::from_errno(EFAULT), Side::kSource, bad_src};
}

using Gate = std::optional<InjectionGate>;

Result injected(const Gate& gate, const char* step) {
  return gate ? gate->check(step) : Result::success();
}

// Moves len bytes between two pieces (src at src_va, dst at dst_va when they are host memory),
// after the injection steps of the work (copy_engine.h). A failure other than a bad host pointer
// names the side whose step or memory failed.
CopyOutcome move(const Gate& gate, const Piece& s, uint64_t src_va, const Piece& d,
                 uint64_t dst_va, uint64_t len) {
  auto* host_src = reinterpret_cast<const void*>(src_va);
  auto* host_dst = reinterpret_cast<void*>(dst_va);
  os::PhysicalMemory* const from = s.bytes();
  os::PhysicalMemory* const to = d.bytes();
  if (from != nullptr) {
    if (Result r = injected(gate, steps::kEmuMemfdRead); !r.ok()) {
      return CopyOutcome{r, Side::kSource, src_va};
    }
  }
  if (to != nullptr) {
    if (Result r = injected(gate, steps::kEmuMemfdWrite); !r.ok()) {
      return CopyOutcome{r, Side::kDestination, dst_va};
    }
  }
  int rc = 0;
  Side side = Side::kDestination;
  if (from != nullptr && to != nullptr) {
    rc = from->copy_to(s.offset, *to, d.offset, len);
  } else if (from != nullptr) {
    rc = from->read(s.offset, host_dst, len);
    if (rc == -EFAULT) return host_fault(Side::kDestination, dst_va, len, true);
    side = Side::kSource;
  } else if (to != nullptr) {
    rc = to->write(d.offset, host_src, len);
    if (rc == -EFAULT) return host_fault(Side::kSource, src_va, len, false);
  } else {
    if (Result r = injected(gate, steps::kEmuHostCopy); !r.ok()) {
      return CopyOutcome{r, Side::kSource, src_va};
    }
    rc = os::host_copy(host_dst, host_src, len);
    if (rc == -EFAULT) return host_pair_fault(src_va, dst_va, len);
  }
  if (rc != 0) {
    return CopyOutcome{Result::from_raw(rc), side, side == Side::kSource ? src_va : dst_va};
  }
  return CopyOutcome{};
}

// The piece of endpoint `e` at `done` bytes into the copy: through the page table (kMapped, in
// hazard slot 1 when written, else 0), the managed range's memfd (kManaged), or the rest of the
// process memory as it is.
Result piece(const EmuPageTable& table, const EmuUnified* unified, const CopyEndpoint& e,
             uint64_t done, uint64_t left, bool write, const Executor& who, Piece* out) {
  switch (e.kind) {
    case EndpointKind::kMapped:
      return reach(table, write ? 1 : 0, e.address + done, left, write, who, out);
    case EndpointKind::kManaged:
      return unified->reach(e.address + done, left, &out->managed, &out->offset, &out->length);
    default:
      return Result::success();
  }
}

}  // namespace

CopyOutcome EmuCopyEngine::copy(const CopyRequest& request) {
  const CopyEndpoint& src = request.src;
  const CopyEndpoint& dst = request.dst;
  CopyOutcome refused;
  const bool managed = unified_ != nullptr;
  if (!admissible(src, request.size, Side::kSource, &refused, managed) ||
      !admissible(dst, request.size, Side::kDestination, &refused, managed)) {
    return refused;
  }
  if (src.kind == EndpointKind::kMapped) {
    refused = reachable(table_, 0, src.address, request.size, false, request.executor,
                        Side::kSource);
    if (!refused.result.ok()) return refused;
  }
  if (dst.kind == EndpointKind::kMapped) {
    refused = reachable(table_, 1, dst.address, request.size, true, request.executor,
                        Side::kDestination);
    if (!refused.result.ok()) return refused;
  }
  // Managed sides: the residency policy for the executor, the destination's pages first (as
  // the core's own path applied it before step 6), before a byte moves.
  if (dst.kind == EndpointKind::kManaged) {
    Result r = unified_->prepare(dst.address, request.size, true, request.executor);
    if (!r.ok()) return failure(r, Side::kDestination, dst.address);
  }
  if (src.kind == EndpointKind::kManaged) {
    Result r = unified_->prepare(src.address, request.size, false, request.executor);
    if (!r.ok()) return failure(r, Side::kSource, src.address);
  }
  for (uint64_t done = 0; done < request.size;) {
    const uint64_t left = request.size - done;
    Piece s, d;
    s.length = d.length = left;
    if (Result r = piece(table_, unified_, src, done, left, false, request.executor, &s); !r.ok()) {
      return failure(r, Side::kSource, src.address + done);
    }
    if (Result r = piece(table_, unified_, dst, done, left, true, request.executor, &d); !r.ok()) {
      return failure(r, Side::kDestination, dst.address + done);
    }
    const uint64_t len = std::min(s.length, d.length);
    CopyOutcome moved = move(gate_, s, src.address + done, d, dst.address + done, len);
    if (!moved.result.ok()) return moved;
    done += len;
  }
  return CopyOutcome{};
}

CopyOutcome EmuCopyEngine::fill(const FillRequest& request) {
  const CopyEndpoint& dst = request.dst;
  CopyOutcome refused;
  if (!admissible(dst, request.size, Side::kDestination, &refused, unified_ != nullptr)) {
    return refused;
  }
  if (dst.kind == EndpointKind::kManaged) {
    Result r = unified_->prepare(dst.address, request.size, true, request.executor);
    if (!r.ok()) return failure(r, Side::kDestination, dst.address);
  }
  if (dst.kind == EndpointKind::kMapped) {
    refused = reachable(table_, 1, dst.address, request.size, true, request.executor,
                        Side::kDestination);
    if (!refused.result.ok()) return refused;
  }
  if (dst.kind == EndpointKind::kHostMemory) {
    if (Result r = injected(gate_, steps::kEmuHostFill); !r.ok()) {
      return failure(r, Side::kDestination, dst.address);
    }
    const int rc = os::host_fill(reinterpret_cast<void*>(dst.address), request.value,
                                       request.size);
    if (rc == -EFAULT) return host_fault(Side::kDestination, dst.address, request.size, true);
    if (rc != 0) return failure(Result::from_raw(rc), Side::kDestination, dst.address);
    return CopyOutcome{};
  }
  for (uint64_t done = 0; done < request.size;) {
    Piece d;
    Result r = piece(table_, unified_, dst, done, request.size - done, true, request.executor, &d);
    if (!r.ok()) return failure(r, Side::kDestination, dst.address + done);
    if (Result f = injected(gate_, steps::kEmuMemfdFill); !f.ok()) {
      return failure(f, Side::kDestination, dst.address + done);
    }
    Result filled = Result::from_raw(d.bytes()->fill(d.offset, request.value, d.length));
    // A zero fill punches a hole; fault tracking hands the CPU existing pages only.
    if (filled.ok() && d.managed && request.value == 0) {
      filled = unified_->populate(*d.managed, d.offset, d.length);
    }
    if (!filled.ok()) return failure(filled, Side::kDestination, dst.address + done);
    done += d.length;
  }
  return CopyOutcome{};
}

}  // namespace aclvmm::dev::emu
