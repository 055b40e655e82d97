// ShareService: the core's part of sharing physical memory between processes (behavior.md
// section 7, docs/sharing.md, drivers/sharing.h). The device backend's Sharing unit owns the
// share ids, the token layout, the protocol and the whitelist, and enforces it, as the vendor's
// kernel module does; this keeps what the vendor's runtime keeps in user space:
// - the records of the process: the live export of each handle (its token), and the import
//   table, which gives the same handle back for the same (token, device) with one more
//   reference;
// - the ACL layer's messages for what the backend answered (its Result says what, the records
//   say for which handle);
// - the peer pair of an import onto another device than the exporter's.
// Tokens are opaque here: they are stored and passed on unchanged.
//
// Threading: every method from any thread. mu_ guards the records and is never held across a
// backend call that may wait on another process (import, set-pid); it is held across fork, and a
// forked child forgets the parent's records (the parent's handles do not exist in its runtime).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <utility>

#include "base/handle_table.h"
#include "base/lock_rank.h"
#include "base/status.h"
#include "vmm/device_directory.h"
#include "vmm/physical.h"

namespace aclvmm {

class ShareService {
 public:
  // Binds what an import needs of the runtime that starts (the physical-handle table imports
  // enter, the devices and their backend); every runtime's first start calls it, a forked
  // child's included.
  void attach(HandleTable<PhysicalAllocation>* physical, DeviceDirectory* devices);

  // Exports `handle` (whose allocation is `phys`); the V1 token.
  StatusOr<uint64_t> export_handle(uint64_t handle, const std::shared_ptr<PhysicalAllocation>& phys,
                                   bool disable_pid_validation);
  // The same as a V2 FABRIC blob: the backend writes the bytes it owns, the rest stays as given.
  Status export_fabric(uint64_t handle, const std::shared_ptr<PhysicalAllocation>& phys,
                       bool disable_pid_validation, uint8_t* blob);
  // The V1 token inside a FABRIC blob (107017 when it is none).
  StatusOr<uint64_t> token_of_fabric(const uint8_t* blob);
  Status set_pids(uint64_t token, const int32_t* pids, uint32_t count);
  // Imports onto `physical_device`; the new (or re-imported) handle's token.
  // `fabric`: the 128-byte FABRIC handle `token` was read from (V2 FABRIC imports), handed to
  // the backend's import_fabric so that a driver sees the call the vendor makes (hal.md §3.5);
  // nullptr for V1 and V2 DEFAULT.
  StatusOr<uint64_t> import(uint64_t token, int physical_device, const uint8_t* fabric = nullptr);

  // The handle is gone: its export record and its import record are dropped (the backend ends
  // the export itself when the memory is released).
  void forget_handle(uint64_t handle);
  // aclFinalize / exit: forgets the records (the backend's exports end with their memory).
  void shutdown();

  size_t live_exports() const;
  size_t live_imports() const;
  // Process totals (aclFinalize does not reset them), for the statistics (docs/sharing.md §11):
  // the backend's group "ipc".
  uint64_t denied() const { return ipc("imports_denied"); }
  uint64_t listener_wakeups() const { return ipc("listener_wakeups"); }
  uint64_t listener_timeouts() const { return ipc("listener_timeouts"); }
  uint64_t connections_dropped() const { return ipc("connections_dropped"); }
  uint64_t impostors_refused() const { return ipc("impostors_refused"); }
  uint64_t replies_refused() const { return ipc("replies_refused"); }
  // Other servers (docs/fabric.md): their holders of this process's exports now, the imports
  // answered for them, the imports of theirs made here.
  uint64_t fabric_holders() const { return ipc("fabric_holders"); }
  uint64_t fabric_served() const { return ipc("fabric_served"); }
  uint64_t fabric_imports() const { return ipc("fabric_imports"); }
  // Kept connections (docs/sharing.md §5): this process's idle ones to exporters and its
  // listener's to importers now, and the requests sent on kept ones.
  uint64_t importer_links() const { return ipc("importer_links"); }
  uint64_t exporter_links() const { return ipc("exporter_links"); }
  uint64_t links_reused() const { return ipc("links_reused"); }

 private:
  // The backend's export of `phys` (its token in *token), with the ACL layer's message on
  // failure. The record is the caller's.
  Status export_memory(uint64_t handle, const PhysicalAllocation& phys,
                       bool disable_pid_validation, uint8_t* fabric, uint64_t* token);
  Status record_export(uint64_t handle, uint64_t token);
  // The handle an earlier import of (token, device) still holds, with one more reference; 0 if
  // there is none. mu_ held.
  uint64_t reuse_import_locked(uint64_t token, int physical_device);
  // What imports_ records an import under: the token, and for a FABRIC handle of another server
  // its server as well.
  uint64_t import_key(uint64_t token, const uint8_t* fabric) const;
  bool own_token_locked(uint64_t token) const;
  // The handle's allocation from what the backend imported (it holds the backend's object).
  void adopt_import(const dev::ImportedMemory& imported, int physical_device,
                      PhysicalAllocation* phys);
  uint64_t ipc(const char* name) const;
  // The backend's counters as they were at the last shutdown: what is reported while stopped.
  static constexpr const char* kIpcCounters[] = {
      "imports_denied",    "listener_wakeups", "listener_timeouts", "connections_dropped",
      "impostors_refused", "replies_refused",  "fabric_holders",    "fabric_served",
      "fabric_imports",    "importer_links",   "exporter_links",    "links_reused"};
  dev::Sharing* sharing() const;

  HandleTable<PhysicalAllocation>* physical_ = nullptr;  // set by attach, before any import
  DeviceDirectory* devices_ = nullptr;                    // likewise
  mutable RankedMutex<LockRank::kShareService> mu_;
  std::map<uint64_t, uint64_t> exports_;                  // handle -> token
  std::map<std::pair<uint64_t, int>, uint64_t> imports_;  // (token, device) -> handle
  mutable std::array<std::atomic<uint64_t>, std::size(kIpcCounters)> ipc_at_stop_{};
};

}  // namespace aclvmm
