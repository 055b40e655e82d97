// CpuView: when the CPU sees a device mapping, and how (emulation.md "who may touch which
// bytes"). The decisions the core used to make in AddressSpace::cpu_apply: host memory mapped
// with access, a HOST grant (device memory too: Capabilities::cpu_visible_device_memory), and
// ACLVMM_HOST_ACCESS=open (every mapping read-write for the CPU) get a kernel mapping of the
// object's memfd over the window's placeholder; HOST_NUMA memory is bound to its node once
// mapped; kNone puts the placeholder back.
//
// Failure injection: emu.cpu.map, emu.cpu.unmap, emu.numa.bind (the legacy drv.map_cpu,
// drv.unmap_cpu, drv.bind_numa). A failed map leaves the placeholder, never a hole and never the
// old mapping (a failed MAP_FIXED mmap may already have dropped it): entry->cpu says kNone then,
// so a rollback maps the old access again instead of believing it is still there.
//
// Threading: one entry is changed by one thread at a time (the core serializes a range); may
// block in mmap.
#pragma once

#include "drivers/backend_listener.h"
#include "drivers/device_result.h"
#include "drivers/emu/device/page_table.h"

namespace aclvmm::dev::emu {

class CpuView {
 public:
  CpuView(BackendListener& listener, bool open) : gate_(listener), open_(open) {}

  // What the CPU should be allowed at `entry` given its HOST rights.
  os::CpuAccess wanted(const MmuEntry& entry) const;
  // Makes the kernel mapping at entry match `access` (no call when it already does).
  Result apply(MmuEntry& entry, os::CpuAccess access);

 private:
  InjectionGate gate_;
  const bool open_;
};

}  // namespace aclvmm::dev::emu
