// Sharing: physical memory shared between processes (halMemExportToShareableHandle[V2],
// halMemShareHandleSetAttribute(NO_WLIST), halMemSetPidToShareableHandle,
// halMemTransShareableHandle, halMemImportFromShareableHandle[V2]).
//
// On hardware the kernel driver owns share ids and whitelists and enforces them; so does every
// backend here. The token formats of behavior.md §7 belong to the backend too: the HAL packs the
// 64-bit token (share id, exporter's device) and writes the FABRIC blob's first 20 bytes, so a
// core that packed them would disagree with the driver it runs on. For emu the share id names
// the exporting process (its endpoint, docs/sharing.md §1); the wire format, the listener, the
// caps on waiting peers and the kernel-verified peer checks are emu's. The core keeps the ACL
// layer's part: argument checks, V1 vs V2 and DEFAULT vs FABRIC (a DEFAULT V2 token is the
// 64-bit token at a pointer), product gating, and the process's records: the live exports per
// handle, and the import table that gives the same handle back for the same (token, device)
// with one more reference (behavior.md §7).
//
// Contract
// - Tokens are opaque to the core: it stores and passes them unchanged, and a token from another
//   process, a forged or a stale one is answered by the backend.
// - export_memory(): a new token for the live, local (not imported) memory; an object is exported
//   at most once (a second export, or an export of an imported object: kInvalidArgument, as the
//   kernel's EINVAL -> 507899). The export lives until PhysicalAllocator::release of the object
//   (there is no separate unexport on hardware either); bytes imported elsewhere live on.
//   export_fabric() is the same as a FABRIC blob: the backend writes the bytes it owns (hal: the
//   first 20) and leaves the rest as given.
// - disable_validation(): any process may import the token from now on. Only by the exporter and
//   only before any set_pids (kNotPermitted otherwise, the kernel's EPERM -> 207006 on set-pid).
// - set_pids(): adds pids (bare tgids) to the whitelist, refreshing the time stamp of pids
//   already there; 0 entries are skipped, all-zero is kInvalidArgument. A pid is admitted only if
//   its process started no later than it was listed (pid reuse). Results as the kernel gives
//   them: unknown token kBadAddress (107017), not the exporter kNotPermitted via EACCES (507899),
//   validation disabled kNotPermitted via EPERM (207006). Count bounds (n > 65535: 107000) are the
//   core's.
// - token_of_fabric(): the 64-bit token inside a FABRIC blob (halMemTransShareableHandle), for
//   set-pid of a FABRIC export; kInvalidArgument when the blob is no fabric token.
// - import_*(): the memory behind a token, as a new PhysicalId reachable from `device`, with the
//   exporter's properties and device. The backend enforces the whitelist, the same-process rules
//   (own export onto the same device: kNotPermitted via EACCES, 507899) and makes the memory
//   reachable: where the driver needs peer access between the exporter's device and `device`
//   first (hal.md §3.5 steps 1-2), the backend enables it. The core then only records the peer
//   pair in its masks. Unknown or released tokens, or an exporter gone: kBadAddress
//   (107017); not whitelisted: kNotPermitted via EACCES (507899); a peer that does
//   not answer in time: kTimedOut; a reply or memory that could not have come from a backend of
//   this kind: kInvalidArgument (507899, counted in the statistics). A backend that finds its own
//   dedup (hal returns the same handle for the same token and device) returns that same id; the
//   core's import table recognises it.
//
//
// IPC memory by key (runtime-extra.md §3; the driver's halShmem* calls): a range of device memory
// named by a text key. The backend builds the key (ipc_key.h: one text on every backend),
// keeps the key's whitelist and enforces it, as for tokens; the core keeps the process's records
// (its keys, its imports and their counts) and every check of §3 it can make from them.
// - ipc_export(): a new key for [offset, offset+size) of `memory` (live, local, device memory
//   not exported as a token; the core checked the range lies in it and is aligned to
//   page_size). validate_pids false: anyone may import (DISABLE_PID_VALIDATION). An import or an
//   object exported as a token: kInvalidArgument (507899).
// - ipc_set_pids(): as set_pids, by the key's exporter: validation disabled kNotPermitted via
//   EPERM (207006); closed after it served an import kBadAddress (107017); no live key of this
//   backend's kind kInvalidArgument; another process's key kNotPermitted via EACCES (both 507899);
//   more than kIpcWhitelistMax pids, or none left once 0 and the exporter's own pid are skipped:
//   kInvalidArgument.
// - ipc_set_link(): records the key's die link (0 SIO, 1 HCCS); only by the exporter (EPERM),
//   the key must be live (EINVAL).
// - ipc_close_export(): the exporter ends the key: no import or whitelist change succeeds
//   afterwards; memory already imported stays usable (runtime-extra.md, deliberate). No key:
//   EINVAL; another process's: EACCES; closed before after serving imports: EFAULT.
// - ipc_revoke(): the exporter freed the memory under the key: imports fail (EINVAL) from now
//   on, the key itself lives until closed. Unknown keys are ignored.
// - ipc_import(): the memory behind the key for `device`: a new PhysicalId (the exporter's whole
//   object, or as much of it as the backend hands out) and where the key's range lies in it. No
//   live key, memory freed: kInvalidArgument; not whitelisted (or listed before the importer
//   started), the exporter importing its own whitelisted key: kNotPermitted via EACCES (both
//   507899); an exporter that does not answer in time kTimedOut. Imports are released as any
//   PhysicalId.
// A backend without IPC keys (Capabilities::ipc_keys false) keeps the defaults: kNotSupported.
//
// Threading: every method from any thread, concurrently. import_* and set_pids may block on
// another process, each wait bounded (emu: 5 s, docs/sharing.md §9); nothing else blocks. The
// backend's own threads (emu: the share listener) call only BackendListener.
// Lifetime: exports end with their memory; imports are ordinary PhysicalIds.
#pragma once

#include <cerrno>
#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"
#include "drivers/ipc_key.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev {

// V1 / V2 DEFAULT: bits 0-31 share id, 32-39 the exporter's device id, 40-63 zero.
struct ShareToken {
  uint64_t value = 0;
};

// V2 FABRIC: aclrtMemFabricHandle, 128 bytes.
struct FabricToken {
  uint8_t bytes[128] = {};
};

struct ImportedMemory {
  PhysicalId memory;
  PhysicalProperties properties;             // the exporter's (location, page and memory type)
  DeviceIndex exporter_device = kNoDevice;   // kNoDevice for host memory
  // FABRIC memory of another server of the pod (docs/fabric.md): exporter_device is a device of
  // that server, so no peer pair of this host's devices is involved.
  bool other_server = false;
};

// Where an IPC key's range lies in the memory the backend exports or imports.
struct IpcRange {
  PhysicalId memory;
  uint64_t offset = 0;     // of the key's first byte in `memory`
  uint64_t size = 0;       // the exported size, rounded up to page_size
  uint32_t page_size = 0;  // the exporter's page size (pointer queries report it)
};

struct IpcImported {
  ImportedMemory memory;  // the new object (its whole size is memory.properties.size)
  uint64_t offset = 0;    // the key's range within it
  uint64_t size = 0;
  uint32_t page_size = 0;
};

inline constexpr uint32_t kIpcWhitelistMax = 32768;

class Sharing {
 public:
  virtual ~Sharing() = default;

  virtual Result export_memory(PhysicalId memory, ShareToken* out) = 0;
  virtual Result export_fabric(PhysicalId memory, FabricToken* inout) = 0;
  virtual Result disable_validation(ShareToken token) = 0;
  virtual Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) = 0;
  virtual Result token_of_fabric(const FabricToken& fabric, ShareToken* out) = 0;

  virtual Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) = 0;
  virtual Result import_fabric(const FabricToken& fabric, DeviceIndex device,
                               ImportedMemory* out) = 0;

  virtual Result ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) {
    (void)range, (void)validate_pids, (void)out;
    return Result::from_errno(EOPNOTSUPP);
  }
  virtual Result ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) {
    (void)key, (void)pids, (void)count;
    return Result::from_errno(EOPNOTSUPP);
  }
  virtual Result ipc_set_link(const IpcKey& key, uint32_t link) {
    (void)key, (void)link;
    return Result::from_errno(EOPNOTSUPP);
  }
  virtual Result ipc_close_export(const IpcKey& key) {
    (void)key;
    return Result::from_errno(EOPNOTSUPP);
  }
  virtual void ipc_revoke(const IpcKey& key) { (void)key; }
  virtual Result ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) {
    (void)key, (void)device, (void)out;
    return Result::from_errno(EOPNOTSUPP);
  }
};

}  // namespace aclvmm::dev
