#include "drivers/emu/device/cpu_view.h"

#include "drivers/emu/address_space.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/numa_binding.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {

drv::CpuAccess CpuView::wanted(const MmuEntry& entry) const {
  if (open_) return drv::CpuAccess::kReadWrite;
  switch (entry.access(Location::host())) {
    case Access::kReadWrite: return drv::CpuAccess::kReadWrite;
    case Access::kRead: return drv::CpuAccess::kRead;
    default: return drv::CpuAccess::kNone;
  }
}

Result CpuView::apply(MmuEntry& entry, drv::CpuAccess access) {
  if (access == entry.cpu) return Result::success();
  if (access == drv::CpuAccess::kNone) {
    Result r = gate_.check(steps::kEmuCpuUnmap);
    if (r.ok()) r = Result::from_raw(drv::emu::unmap_cpu(entry.va, entry.size));
    if (r.ok()) entry.cpu = drv::CpuAccess::kNone;
    return r;
  }
  Result r = gate_.check(steps::kEmuCpuMap);
  if (r.ok()) {
    r = Result::from_raw(
        drv::emu::map_cpu(entry.va, entry.size, entry.memory->memory(), entry.offset, access));
  }
  if (r.ok() && entry.owner.kind == Location::Kind::kHostNuma) {
    r = gate_.check(steps::kEmuNumaBind);
    if (r.ok()) r = Result::from_raw(drv::emu::bind_numa(entry.va, entry.size, entry.owner.id));
  }
  if (!r.ok()) {
    (void)drv::emu::unmap_cpu(entry.va, entry.size);  // the placeholder, for certain
    entry.cpu = drv::CpuAccess::kNone;
    return r;
  }
  entry.cpu = access;
  return Result::success();
}

}  // namespace aclvmm::dev::emu
