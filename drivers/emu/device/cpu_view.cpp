#include "drivers/emu/device/cpu_view.h"

#include <cerrno>

#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/numa_binding.h"
#include "drivers/emu/os/placeholders.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {

os::CpuAccess CpuView::wanted(const MmuEntry& entry) const {
  // Memory whose bytes live on another server has no CPU view (docs/fabric.md): open host access
  // leaves it to the copy engine.
  if (open_)
    return entry.memory->memory().fd() >= 0 ? os::CpuAccess::kReadWrite : os::CpuAccess::kNone;
  switch (entry.access(Location::host())) {
    case Access::kReadWrite: return os::CpuAccess::kReadWrite;
    case Access::kRead: return os::CpuAccess::kRead;
    default: return os::CpuAccess::kNone;
  }
}

Result CpuView::apply(MmuEntry& entry, os::CpuAccess access) {
  if (access == entry.cpu) return Result::success();
  if (access == os::CpuAccess::kNone) {
    Result r = gate_.check(steps::kEmuCpuUnmap);
    if (r.ok()) r = Result::from_raw(os::unmap_cpu(entry.va, entry.size));
    if (r.ok()) entry.cpu = os::CpuAccess::kNone;
    return r;
  }
  // No CPU view of memory another server holds (the vendor refuses CPU access to it too).
  if (entry.memory->memory().fd() < 0) return Result::from_errno(EOPNOTSUPP);
  Result r = gate_.check(steps::kEmuCpuMap);
  if (r.ok()) {
    r = Result::from_raw(
        os::map_cpu(entry.va, entry.size, entry.memory->memory(), entry.offset, access));
  }
  if (r.ok() && entry.owner.kind == Location::Kind::kHostNuma) {
    r = gate_.check(steps::kEmuNumaBind);
    if (r.ok()) r = Result::from_raw(os::bind_numa(entry.va, entry.size, entry.owner.id));
  }
  if (!r.ok()) {
    (void)os::unmap_cpu(entry.va, entry.size);  // the placeholder, for certain
    entry.cpu = os::CpuAccess::kNone;
    return r;
  }
  entry.cpu = access;
  return Result::success();
}

}  // namespace aclvmm::dev::emu
