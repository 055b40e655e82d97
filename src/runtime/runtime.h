// Runtime: the process-wide state behind the ACL calls and its lifetime (aclInit .. aclFinalize).
//
// The object lives for the whole process (never destroyed, so no static-destruction order issue
// can bite a late call). It starts lazily on the first call that needs it (CANN runtime calls
// work without aclInit) and is torn down by the last aclFinalize or at process exit, releasing
// and reporting whatever the application still held.
//
// fork(): the child gets a new, not started Runtime (runtime_fork.cpp). The parent's object is
// abandoned there as it was: never joined, freed, unlocked or destroyed, because its threads and
// the holders of its locks exist only in the parent, and releasing its memory would return
// charges into the parent's shared statistics. Handles the child inherited are unknown to the
// new object (its tables stamp another tag); its first start releases the address ranges the
// parent had claimed and claims the windows afresh.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/handle_table.h"
#include "base/lock_rank.h"
#include "base/read_mostly_mutex.h"
#include "base/status.h"
#include "drivers/device_backend.h"
#include "runtime/config.h"
#include "runtime/config_snapshots.h"
#include "runtime/kernels.h"
#include "runtime/stream.h"
#include "vmm/address_space.h"
#include "vmm/handle_aliases.h"
#include "vmm/managed.h"
#include "vmm/memory_ops.h"
#include "vmm/physical.h"
#include "vmm/runtime_services.h"
#include "vmm/share.h"
#include "vmm/vmm.h"

namespace aclvmm {

struct Context {
  int device = 0;          // physical device id
  bool primary = false;
  uint64_t token = 0;
  uint64_t default_stream = 0;
  // Cleared when the context is destroyed, so a thread's cached current context is checked
  // without a table lookup on every data-path call.
  std::atomic<bool> alive{true};
};

struct Device {
  std::shared_ptr<MemoryPool> pool;
  int open_count = 0;         // aclrtSetDevice references
  uint64_t primary_context = 0;
  bool driver_open = false;   // the backend's DeviceManager::open ran (first context on it)
  int vendor_refs = 0;        // aclrtSetDevice calls forwarded to the vendor runtime, less resets
};

inline constexpr int kMaxDevices = 64;

class Runtime final : public RuntimeServices {
 public:
  static Runtime& get();

  // Reads the configuration and claims the address windows once; cheap when already started.
  Status start();
  Status init(const char* config_path);
  Status finalize();
  // Releases everything still held, reporting each leak (finalize and process exit).
  void teardown(const char* why);

  // The configuration of the latest start: an immutable snapshot (config_snapshots.h), valid
  // for the process's lifetime. A call reads it once (`const Config& cfg = rt.config();`) and
  // keeps to that copy; a restart meanwhile publishes a new snapshot and leaves it alone.
  const Config& config() const { return config_.current(); }
  // The device backend (docs/device-interface.md), opened at each start with that start's
  // configuration and let go at teardown; memory still held then keeps it alive (DeviceMemory).
  const std::shared_ptr<dev::DeviceBackend>& device() const override { return device_; }
  // aclrtGetMemInfo as a driver that reports the machine (hal) answers it (halMemGetInfo with
  // the type and fields of hal.md §3.10); false when the started backend is a software one.
  bool driver_memory_info(int physical_device, int attr, size_t* free, size_t* total,
                          Status* error) const;
  // Whether the started backend reports the machine (Capabilities::driver_reports_machine), kept
  // from the start so that software backends' callers copy no shared_ptr to find out.
  bool driver_reports_machine() const {
    return driver_reports_machine_.load(std::memory_order_acquire);
  }
  // The bare tgid as a driver that reports the machine (hal) gives it (drvDeviceGetBareTgid,
  // hal.md §3.10); false when the started backend is a software one or none is started.
  bool driver_bare_tgid(int32_t* out) const {
    const std::shared_ptr<dev::DeviceBackend> backend = device_;
    if (!backend || !backend->capabilities().driver_reports_machine) return false;
    *out = backend->devices().bare_tgid();
    return true;
  }
  AddressSpace& space() { return space_; }
  HandleTable<PhysicalAllocation>& physical() { return physical_; }
  // Beside the vendor runtime: the driver handles the application holds (api/handles.h).
  HandleAliases& handle_aliases() { return handle_aliases_; }
  HandleTable<Context>& contexts() { return contexts_; }
  HandleTable<Stream>& streams() { return streams_; }
  ShareService& sharing() { return sharing_; }
  ManagedMemory& managed() { return managed_; }
  // Kernel binaries, their kernels and launch parameter buffers (runtime-extra.md §9).
  Kernels& kernels() { return kernels_; }
  HostRegistrations& host_registrations() { return host_registrations_; }
  // IPC memory by key: the process's keys and imports (runtime-extra.md §3).
  IpcKeys& ipc_keys() { return ipc_keys_; }
  // The virtual-memory operations and the copy engine's, given this runtime's pieces.
  vmm::Vmm& vmm() { return vmm_; }
  memops::MemoryOps& memory_ops() { return memory_ops_; }
  bool quirks() const { return config().quirks_vendor; }
  ProductRules rules() const override;

  // Devices. User ids are what the application sees (after ASCEND_RT_VISIBLE_DEVICES); physical
  // ids index the emulated devices.
  int visible_count() const { return static_cast<int>(config().visible.size()); }
  StatusOr<int> physical_device(int32_t user_id) const;
  int user_device(int physical_id) const override;
  int server_id() const override { return config().server_id; }
  std::shared_ptr<MemoryPool> pool(int physical_id) const override;
  // A device pool's total and free bytes (aclrtGetMemInfo): read under the pools' shared lock,
  // without copying the pool's shared_ptr, so that callers on many threads write no common cache
  // line. false when the device has no pool (no runtime started).
  bool pool_space(int physical_id, uint64_t* total, uint64_t* free) const;
  bool host_numa() const override { return config().host_numa; }
  int device_count() const override { return config().device_count; }
  // Host memory handed out as physical or pinned memory, bounded by the machine's memory.
  std::shared_ptr<MemoryPool> host_pool() const override;
  Status set_device(int32_t user_id);
  Status reset_device(int32_t user_id, bool force);
  // Beside the vendor runtime (hal.md §6; Capabilities::beside_vendor_runtime) the vendor owns
  // devices, contexts and streams: the facade forwards their calls to it (api/api_forward.h),
  // the current device and context are the vendor's, and resolve_stream refuses (207000).
  bool beside_vendor() const { return beside_vendor_.load(std::memory_order_acquire); }
  // After a forwarded aclrtSetDevice / aclrtResetDevice[Force] succeeded: counts the references,
  // and when the last one goes drops what aclvmm remembers about the device (peer access, host
  // registrations, IPC keys), as the vendor's close destroyed it in the driver.
  Status forwarded_set_device(int32_t user_id);
  Status forwarded_reset_device(int32_t user_id, bool force);
  // The calling thread's current context and its device; 107002 when there is none.
  StatusOr<uint64_t> current_context() const override;
  StatusOr<int> current_device() const override;
  Accessor accessor() const;
  // The executing-device view of work queued on a stream of `physical_device`.
  Accessor accessor_for(int physical_device) const;
  // True once any device has been opened (the driver's per-process SVM state exists).

  // Contexts and streams.
  StatusOr<uint64_t> create_context(int physical_device, bool primary);
  Status destroy_context(uint64_t token);
  Status set_current_context(uint64_t token);
  StatusOr<uint64_t> create_stream();
  // aclrtCreateStreamWithConfig with the flag bits it knows (0x3F): the checks of
  // runtime-extra.md §2 in order, then a stream like create_stream()'s (no flag changes how it
  // runs).
  StatusOr<uint64_t> create_stream_with_flags(uint32_t flags);
  // aclrtSynchronizeStreamWithTimeout after the ACL layer's check: 107017 for a stream that is
  // not live, 107000 for a zero timeout, then as aclrtSynchronizeStream with a deadline
  // (timeout_ms -1: none); 507046 when it passes.
  Status synchronize_stream(uint64_t token, int32_t timeout_ms);
  // aclrtStreamAbort (runtime-extra.md §2): the stream's work that has not started is dropped.
  Status abort_stream(uint64_t token);
  Status destroy_stream(uint64_t token, bool force);
  // The stream a call names: NULL means the current context's default stream.
  StatusOr<std::shared_ptr<Stream>> resolve_stream(uint64_t token);
  // aclrtSynchronizeDevice[WithTimeout]: every stream of the current device; timeout_ms -1 waits
  // for ever, else the whole call is bounded (507046, nothing is cancelled).
  Status synchronize_device(int32_t timeout_ms = -1);

  Status enable_peer(int peer_physical, bool enable);
  // Opens peer access between two devices in both directions (import onto another device).
  void enable_peer_pair(int a, int b) override;

 private:
  // fork() handlers (runtime_fork.cpp, which documents the lock order): registered once, with
  // the first Runtime.
  static void fork_prepare();
  static void fork_parent();
  static void fork_child();

  using LifetimeMutex = RankedMutex<LockRank::kRuntimeLifetime>;

  // `generation`: how many forks lie between this object and the process's first one.
  explicit Runtime(uint32_t generation);
  Status start_locked();
  // Gives back the address ranges the runtimes this process inherited over fork had claimed
  // (through their device backends' release_inherited: the backend remembers where its windows
  // were, so that this runtime's backend claims the same places).
  void release_inherited();
  void teardown_locked(std::unique_lock<LifetimeMutex>& lock, const char* why);
  // create_context with mu_ held (set_device creates the primary context under its own lock).
  StatusOr<uint64_t> create_context_locked(int physical_device, bool primary);
  // Removes the context and returns its streams, which the caller aborts once mu_ is released: a
  // task of such a stream may be waiting for mu_ (calling back into the runtime), and joining its
  // worker under mu_ would deadlock.
  std::vector<std::shared_ptr<Stream>> destroy_context_locked(uint64_t token);
  // DeviceManager::close of a device whose last context went (reset_device, teardown).
  void close_device_locked(int physical_device);
  // The vendor runtime's current device of the calling thread, as a physical id.
  StatusOr<int> vendor_current_device() const;
  // A stream of `ctx` with its worker, entered in the table (207008 when that cannot be done).
  StatusOr<std::shared_ptr<Stream>> new_stream(const std::shared_ptr<Context>& ctx);
  // The fork child handler's work: the child's runtime becomes a new, not started one.
  static void replace_in_forked_child();

  const uint32_t generation_;
  // The runtime this one replaced in a forked child, whose claims its first start releases.
  Runtime* inherited_ = nullptr;
  // Lifetime, devices, contexts (not on data paths). Not recursive: what needs it held is a
  // `_locked` function.
  mutable LifetimeMutex mu_;
  std::atomic<bool> started_{false};
  std::atomic<bool> beside_vendor_{false};  // this start's backend shares the driver (hal.md §6)
  std::atomic<bool> driver_reports_machine_{false};  // this start's backend reports the machine
  bool tearing_down_ = false;  // under mu_ (which a teardown releases while it joins streams)
  int init_refs_ = 0;
  std::string init_config_;
  ConfigSnapshots config_;  // published by start_locked, under mu_
  bool attached_ = false;  // under mu_: the first start bound the services to this object
  std::shared_ptr<dev::DeviceBackend> device_;
  std::vector<Device> devices_;
  // Capacity pools are read by stream workers and the fault thread, which teardown joins while
  // holding mu_: they have their own lock so that join cannot deadlock. Read on every allocation
  // and aclrtGetMemInfo and written only at start and teardown: a ReadMostlyMutex, so readers on
  // different threads do not contend.
  mutable RankedReadMostlyMutex<LockRank::kDevicePools> pools_mu_;
  // Guards the assignments of device_ against the fork prepare handler's copy of it (kDeviceHandle).
  RankedMutex<LockRank::kDeviceHandle> device_mu_;
  std::vector<std::shared_ptr<MemoryPool>> pools_;
  std::shared_ptr<MemoryPool> host_pool_;
  // Peer access per device: read on every copy, so kept lock-free.
  std::array<std::atomic<uint64_t>, kMaxDevices> peer_masks_{};
  AddressSpace space_;
  HandleTable<PhysicalAllocation> physical_;
  HandleAliases handle_aliases_;
  HandleTable<Context> contexts_;
  HandleTable<Stream> streams_;
  // One per process image: its own fork handler refers to it, so a child keeps using it.
  ShareService& sharing_;
  ManagedMemory managed_;
  HostRegistrations host_registrations_;
  IpcKeys ipc_keys_;
  vmm::Vmm vmm_;
  memops::MemoryOps memory_ops_;
  Kernels kernels_;
};

}  // namespace aclvmm
