// IpcKeys: IPC memory sharing by key (runtime-extra.md §3), the core's part. The device backend's
// Sharing unit builds the keys, keeps their whitelists and enforces them, and hands importers the
// memory (drivers/sharing.h, "IPC memory by key"), as the vendor's driver does; this keeps what
// the vendor's runtime keeps in user space:
// - the process's exports: which allocation each key names (so that freeing or unmapping it
//   ends what the key can give, and a device's last reset or the teardown ends the keys);
// - the process's imports: one address per (key, device) with an import count, so that the same
//   key imported again gives the same address and each import needs its own close;
// - the checks of §3 in the vendor's order from the context check on (the ACL layer's are in
//   src/api/api_ipc.cpp), and the messages.
//
// Lifetime: exports until aclrtIpcMemClose by the exporter, the exporting device's last reset or
// the teardown; freeing the memory keeps the key (imports then fail, closing it returns 0).
// Imports until their last close, the importing device's last reset or the teardown; the bytes
// stay with the importer whatever the exporter does (deliberate, runtime-extra.md).
//
// Threading: every method from any thread. mu_ (base/lock_rank.h, kIpcKeys) guards the records
// and is never held across a backend call that may wait on another process.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/lock_rank.h"
#include "base/status.h"
#include "drivers/sharing.h"
#include "vmm/address_space.h"
#include "vmm/runtime_services.h"

namespace aclvmm {

class IpcKeys {
 public:
  IpcKeys(RuntimeServices& runtime, AddressSpace& space) : rt_(runtime), space_(space) {}
  IpcKeys(const IpcKeys&) = delete;
  IpcKeys& operator=(const IpcKeys&) = delete;

  // aclrtIpcMemGetExportKey from its step 3: the new key.
  StatusOr<dev::IpcKey> export_range(uint64_t va, uint64_t size, uint64_t len,
                                     bool disable_pid_validation);
  // aclrtIpcMemSetImportPid from its step 3; `a3_only`: aclrtIpcMemImportPidInterServer's entry
  // (product A3, then its own count check).
  Status set_pids(const char* key, const int32_t* pids, int32_t count, bool a3_only);
  // aclrtIpcMemSetAttr from its context check.
  Status set_link(const char* key, uint64_t attr);
  // aclrtIpcMemImportByKey from its step 3: the import's address.
  StatusOr<uint64_t> import(const char* key, bool enable_peer_access);
  // aclrtIpcMemClose from its step 2.
  Status close(const char* key);

  // The exporter freed or unmapped the allocation at `base`: keys over it give nothing more.
  void memory_gone(uint64_t base);
  // A device's last reset: imports onto it and keys exported from it end.
  void release_device(int device);
  // Teardown: everything ends; one line per key or import for the leak report.
  std::vector<std::string> release_all();

  size_t live_keys() const;
  size_t live_imports() const;

 private:
  struct Export {
    int device = 0;           // physical id of the exporting device
    uint64_t allocation = 0;  // the block or mapping the key lies in
    uint64_t address = 0;
    uint64_t size = 0;
    bool memory_gone = false;
  };
  struct Import {
    int device = 0;  // physical id of the importing device
    uint64_t address = 0;
    uint64_t count = 0;
  };

  Status check_product(bool a3_only) const;
  // The address of the process's import of `key` (one more import), if it is on `device`;
  // 507899 when it is on another. mu_ held, the import exists.
  StatusOr<uint64_t> reuse_import_locked(const dev::IpcKey& key, int device);
  // The current device after the context and product checks, in the vendor's order.
  StatusOr<int> checked_device(bool a3_only);
  dev::Sharing* sharing() const;
  // The backend's refusal of an IPC call, worded for the key.
  Status refused(dev::Result r, const std::string& what) const;
  // Ends own exports and imports that `pick` selects (release_device, release_all).
  template <typename Pick>
  std::vector<std::string> release_if(Pick pick);

  RuntimeServices& rt_;
  AddressSpace& space_;
  mutable RankedMutex<LockRank::kIpcKeys> mu_;
  std::map<dev::IpcKey, Export> exports_;
  std::map<dev::IpcKey, Import> imports_;
  // Keys a device's last reset ended: the application's close of one is 507899 (the backend
  // would call a key that served imports closed-while-held, 107017). Bounded: oldest dropped.
  std::set<dev::IpcKey> ended_;
  std::deque<dev::IpcKey> ended_order_;
};

}  // namespace aclvmm
