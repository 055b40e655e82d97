// DeviceBackend: one device driver as the core sees it: its capabilities and its units, grouped
// by what they model on hardware (as NVIDIA UVM groups its HAL by hardware unit), behind one
// object per process (as ROCr's core::Driver stands for one kernel driver, KFD or XDNA).
//
//   unit                what it models                                   header
//   DeviceManager       the devices, their memory, peer links            device_manager.h
//   AddressWindows      the VA windows and reservations                  address_windows.h
//   PhysicalAllocator   physical memory objects                          physical_allocator.h
//   BlockAllocator      aclrtMalloc / aclrtMallocHost blocks             block_allocator.h
//   DeviceMmu           page tables and access per location              device_mmu.h
//   CopyEngine          copies, fills, queues with fences                copy_engine.h
//   Sharing             export / whitelist / import                      sharing.h
//   UnifiedMemory       managed memory and its residency model           unified_memory.h
//   HostServices        host facts, statistics segment, table memory     host_services.h
//
// Backends: "emu" (the software NPU on Linux primitives, drivers/emu/), "fake" (deterministic,
// in memory, for unit tests: drivers/fake/), "hal" (the vendor's libascend_hal.so, hal.md; a
// later issue). Every backend passes the same conformance suite (tests/conformance/).
//
// Contract
// - open_device_backend() creates the backend called `name`, with the options the core parsed
//   (one immutable snapshot) and the listener it reports through; kNotFound for an unknown name,
//   kNotSupported when the backend cannot run here (hal: no driver, only the stub). On success
//   every unit exists (a unit the backend lacks answers kNotSupported to everything and its
//   capabilities say so; drivers/unsupported_units.h) and the windows are placed: layout() is
//   final (empty for a backend without the AddressWindows unit). open_device_backend() returns
//   the backend behind the failure-injection decorator (drivers/injection/): every "dev.*" rule
//   the listener arms reaches it.
// - The unit references are valid for the backend's life and never change: the core fetches
//   each once at start and calls through it directly (one virtual call per operation on the hot
//   paths, none for the layout, capabilities or page size, which it copies).
// - describe(): a short text for a failed Result, for aclGetRecentErrMsg (hal: with the
//   halMapErrorCode EL code); never empty.
// - visit_statistics(): the backend's counters for aclvmmStatsJson, as (group, name, value).
//   Required names: group "managed" (unified_memory.h) and group "ipc": imports_denied; a
//   backend may add its own (emu: listener_wakeups, listener_timeouts, connections_dropped,
//   impostors_refused, replies_refused, docs/sharing.md §11).
// - Fork (the core's pthread_atfork handlers call these, in the lock order runtime_fork
//   documents): prepare_fork() takes the backend's locks that a child must find released;
//   after_fork_parent() releases them; after_fork_child() runs in the child with one thread:
//   releases them and abandons everything the parent's threads and descriptors hold without
//   acting on it (a userfaultfd, share endpoints and connections, queue threads: they exist only
//   in the parent). The object is then never used again except release_inherited(), which the
//   child's new backend calls once at its own open, on the abandoned one: it gives back the
//   address space the parent claimed (windows, no-UC ranges and the mappings in them), which in
//   the child is the child's own.
// - Fork, process-wide state (prepare_fork_process() and its two partners, below): what the
//   backends of a process share between their instances (emu: the record of its address
//   windows) is held across fork by the core's handler whether or not the core has a backend
//   open at that moment: a fork while another thread is inside open_device_backend() (its
//   backend not yet the core's) must not leave the child a record locked by a thread it does
//   not have. The core calls prepare_fork_process() after the open backend's prepare_fork() and
//   before its own leaf locks. In the child the record is marked inherited: the next backend
//   opened there gives back the parent's address space first (as release_inherited() does),
//   even when no backend was open at the fork to be called.
// - Destruction: the backend ends its threads and releases what is left (queues, managed ranges,
//   exports). Never called on an object abandoned in a forked child.
//
// Threading: every accessor from any thread. Units' own rules are in their headers. The backend's
// threads call into the core only through BackendListener and queue callbacks (Completion,
// HostTask, QueueConfig::on_thread_start).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/address_windows.h"
#include "drivers/backend_listener.h"
#include "drivers/block_allocator.h"
#include "drivers/capabilities.h"
#include "drivers/copy_engine.h"
#include "drivers/device_manager.h"
#include "drivers/device_mmu.h"
#include "drivers/device_result.h"
#include "drivers/host_services.h"
#include "drivers/physical_allocator.h"
#include "drivers/sharing.h"
#include "drivers/unified_memory.h"

namespace aclvmm::dev {

// Settings of software backends (emu, fake): the emulated machine (emulation.md §7). A hardware
// backend ignores them: the driver reports the devices.
struct EmulationOptions {
  std::string soc = "Ascend910B1";  // ACLVMM_SOC: what DeviceProperties::soc_name reports
  int32_t device_count = 8;         // ACLVMM_DEVICE_COUNT
  uint64_t device_memory = 0;       // ACLVMM_DEVICE_MEMORY: > 0, the core resolves the SoC's
                                    // size before opening (emu refuses 0: kInvalidArgument)
  bool host_access_open = false;    // ACLVMM_HOST_ACCESS=open: every mapping CPU-visible
  bool host_numa = true;            // ACLVMM_HOST_NUMA=off: a host without NUMA
  int32_t server_id = 0;            // ACLVMM_SERVER_ID (FABRIC)
  // ACLVMM_POD_FILE: every server of the super-pod (this one included) and where it listens;
  // empty: this host alone (docs/fabric.md).
  struct PodServer {
    int32_t server_id = 0;
    std::string address;  // numeric IPv4 or IPv6
    uint16_t port = 0;
  };
  std::vector<PodServer> pod;
  // ASCEND_RT_VISIBLE_DEVICES as the core resolved it: user id i is device visible_devices[i]
  // (empty: the identity). emu's share tokens carry the exporter's user id (behavior.md §7).
  std::vector<int32_t> visible_devices;
};

// Settings of the hal backend (hal.md §1.5).
struct HalOptions {
  std::string library;  // ACLVMM_HAL_LIBRARY
  std::string hide;     // ACLVMM_HAL_HIDE
};

struct BackendOptions {
  EmulationOptions emulation;
  HalOptions hal;
};

class StatisticsVisitor {
 public:
  virtual ~StatisticsVisitor() = default;
  virtual void counter(const char* group, const char* name, uint64_t value) = 0;
  virtual void flag(const char* group, const char* name, bool value) = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual const char* name() const = 0;
  virtual const Capabilities& capabilities() const = 0;

  virtual DeviceManager& devices() = 0;
  virtual AddressWindows& windows() = 0;
  virtual PhysicalAllocator& physical() = 0;
  virtual BlockAllocator& blocks() = 0;
  virtual DeviceMmu& mmu() = 0;
  virtual CopyEngine& copy_engine() = 0;
  virtual Sharing& sharing() = 0;
  virtual UnifiedMemory& unified_memory() = 0;
  virtual HostServices& host() = 0;

  virtual std::string describe(Result result) const = 0;
  virtual void visit_statistics(StatisticsVisitor& visitor) const = 0;

  virtual void prepare_fork() = 0;
  virtual void after_fork_parent() = 0;
  virtual void after_fork_child() = 0;
  virtual void release_inherited() = 0;
};

// The process-wide fork hooks (see "Fork, process-wide state" above), for every backend this
// library is built with.
void prepare_fork_process();
void after_fork_process_parent();
void after_fork_process_child();

// `listener` must outlive the backend. *out is set only on success.
Result open_device_backend(const std::string& name, const BackendOptions& options,
                           BackendListener* listener, std::unique_ptr<DeviceBackend>* out);

}  // namespace aclvmm::dev
