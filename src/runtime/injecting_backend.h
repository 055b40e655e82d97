// InjectingBackend: the backend as the core sees it, with every step that can fail open to
// failure injection (ACLVMM_FAULTS / aclvmmInjectFault with a "drv.*" name).
//
// It wraps the real backend and the objects the backend hands out (physical memory, the share
// transport, the fault tracker). Each step first asks injection_check(<step>); when a rule fires
// the step returns -code (the rule's code is a positive errno, e.g. 12 = ENOMEM) instead of
// running. When nothing is armed that is one relaxed atomic load per step, so it is always
// installed.
//
// The steps (docs/configuration.md, ACLVMM_FAULTS):
//   drv.claim_window      an address window's placeholder, at the first runtime start
//   drv.claim_fixed       the placeholder of a NoUC reservation
//   drv.release_window    giving a NoUC reservation's range back
//                         (these three: the core no longer claims windows through this seam;
//                         the names fire as aliases of emu.window.* in the device backend's
//                         windows, drivers/emu/device/windows.h)
//   drv.create_physical   new physical memory (memfd_create + ftruncate)
//   drv.adopt_physical    wrapping a descriptor received from an exporter
//   drv.map_cpu           a CPU mapping of physical memory (mmap MAP_FIXED)
//   drv.unmap_cpu         putting the placeholder back over a CPU mapping
//   drv.bind_numa         NUMA placement of mapped host memory (mbind)
//   drv.host_copy         CPU copies (process_vm_readv / writev)
//   drv.host_fill         CPU fills
//   drv.read, drv.write   copies from / to physical memory (pread / pwrite)
//   drv.fill              fills of physical memory (fallocate hole punching, pwrite)
//   drv.populate          allocating pages of physical memory before fault tracking revokes them
//   drv.share_listen      an export's endpoint
//   drv.share_connect     an importer's connection to the exporter
//   drv.share_accept      the exporter accepting a connection (listener thread)
//   drv.share_send        one message (importer request, exporter reply)
//   drv.share_recv        one message
//   drv.share_poll        the exporter's listener waiting for connections (listener thread)
//   drv.uffd_start        opening CPU fault tracking (userfaultfd), at the first managed allocation
//   drv.uffd_watch        registering a managed range
//   drv.uffd_unwatch      unregistering it
//   drv.uffd_revoke       taking the CPU's access to managed pages away (migration to a device)
//   drv.uffd_resolve      giving it back (migration to the host, CPU faults)
//   drv.uffd_resolve_read_only, drv.uffd_protect_writes, drv.uffd_allow_writes
//                         READ_MOSTLY read copies and their write tracking
//   drv.uffd_next_fault   the fault thread waiting for CPU faults
//   drv.stats_segment     the statistics segment for aclvmm-smi, at the first runtime start
//
// A failed step has no effect, except where the emu backend's real failure has one the core must
// cope with: a failed drv.map_cpu leaves the placeholder (a failed MAP_FIXED mmap may already have
// removed the old mapping), and a failed drv.adopt_physical closes the descriptor it was given.
// Steps run by the library's own threads count too: the share listener (accept, poll, recv, send
// of replies) and the fault thread (next_fault, resolve). A failed resolve of a CPU fault leaves
// the faulting thread blocked until the range is freed.
#pragma once

#include <memory>

#include "drivers/driver.h"

namespace aclvmm {

// Wraps `inner` (nullptr stays nullptr).
std::unique_ptr<drv::Backend> with_injection(std::unique_ptr<drv::Backend> inner);

}  // namespace aclvmm
