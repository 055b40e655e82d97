#include "drivers/emu/device/cpu_view.h"

#include "drivers/emu/os/placeholders.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/numa_binding.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {

os::CpuAccess CpuView::wanted(const MmuEntry& entry) const {
  if (open_) return os::CpuAccess::kReadWrite;
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
