// ShareService: exporting physical memory to other processes and importing theirs, with no daemon
// (emulation.md section 5, behavior.md section 7, docs/sharing.md).
//
// Every exported token is a listening endpoint of the exporting process, named by its share id,
// which names the exporter's pid too; one listener thread per process serves all of them while
// there is anything to serve. An importer connects, checks that the kernel reports the token's
// exporter as the listener, and asks; the listener checks the importer against the whitelist
// using the credentials the kernel reports for the connection, and answers with the memory's
// file descriptor (size-sealed): the bytes then live as long as any process holds them. Every
// wait on the other side is bounded, and what other processes can make the exporter hold is
// capped, so a dead, stuck or hostile peer costs an error code, never a hang or a resource.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/lock_rank.h"
#include "base/status.h"
#include "base/handle_table.h"
#include "drivers/driver.h"
#include "vmm/device_directory.h"
#include "vmm/physical.h"

namespace aclvmm {

namespace share_wire {
struct Request;
struct Reply;
}  // namespace share_wire

struct Export {
  uint32_t share_id = 0;
  uint64_t token = 0;
  uint64_t handle = 0;         // the exported physical handle
  int physical_device = 0;     // exporter's physical device (or 0 for host memory)
  std::shared_ptr<PhysicalAllocation> phys;
  bool validate_pids = true;
  std::map<int32_t, uint64_t> whitelist;  // pid -> share_clock() stamp of its last SetPid
  int listen_fd = -1;
};

// A connection the listener accepted and has not answered yet.
struct PendingPeer {
  int fd = -1;
  drv::PeerInfo peer;
  std::chrono::steady_clock::time_point deadline;
  bool admissible = true;  // some live export could admit this peer
  bool waiting = false;    // its request had not arrived at accept: it holds a place under the caps
};

class ShareService {
 public:
  // Binds the transport and what an import needs of the runtime that starts (the backend that
  // adopts received memory, the physical-handle table imports enter, the devices); every
  // runtime's first start calls it, a forked child's included. Also makes forked children drop
  // the parent's endpoints.
  void attach(drv::ShareTransport* transport, drv::Backend* backend,
              HandleTable<PhysicalAllocation>* physical, DeviceDirectory* devices);

  // The token of a new export of `handle` (whose allocation is `phys`).
  StatusOr<uint64_t> export_handle(uint64_t handle, std::shared_ptr<PhysicalAllocation> phys,
                                   uint32_t token_device, int physical_device,
                                   bool disable_pid_validation);
  Status set_pids(uint64_t token, const int32_t* pids, size_t count, int device_count);
  // Imports onto `physical_device`; the new (or re-imported) handle's token.
  StatusOr<uint64_t> import(uint64_t token, int physical_device);
  // The exporter's physical device of a live export of this process, or -1.
  int local_export_device(uint32_t share_id);

  // The handle is gone: its exports end and its import record is dropped.
  void forget_handle(uint64_t handle);
  // aclFinalize / exit: stops the listener and closes every endpoint.
  void shutdown();

  size_t live_exports() const;
  size_t live_imports() const;
  // Process totals (aclFinalize does not reset them), for the statistics (docs/sharing.md §11).
  uint64_t denied() const { return denied_.load(); }
  uint64_t listener_wakeups() const { return wakeups_.load(); }
  uint64_t listener_timeouts() const { return poll_timeouts_.load(); }
  uint64_t connections_dropped() const { return dropped_.load(); }
  uint64_t impostors_refused() const { return impostors_.load(); }
  uint64_t replies_refused() const { return bad_replies_.load(); }

 private:
  // ---- exporter side (share_service.cpp)
  // Binds a fresh endpoint named by this process's pid and its next free serial. mu_ held.
  int bind_endpoint_locked(Export* e);
  // Starts the listener if none runs, else wakes it to pick up a new endpoint. mu_ held.
  Status ensure_listener_locked();
  void remember_released(uint32_t share_id);
  // A forked child's copy of the service: every descriptor and thread is the parent's.
  void drop_inherited_locked();
  // Closes every endpoint, connection and the wake object, and forgets the exports. mu_ held.
  void close_all_locked();

  // ---- importer side (share_service.cpp)
  // One request/reply with the exporter of `token`; the reply length or -errno (-ESRCH: the
  // process listening on the token's endpoint is not the one the token names).
  int exchange(uint64_t token, uint32_t kind, int device, share_wire::Reply* rep, int* mem_fd);
  bool served_by_exporter(int fd, const drv::PeerInfo& server, uint32_t share_id);
  // Fills `phys` from the exporter's reply and memory.
  Status fetch_remote(uint64_t token, int physical_device, int device_count, PhysicalAllocation* phys);
  // The handle an earlier import of (token, device) still holds, with one more reference; 0 if
  // there is none. mu_ held.
  uint64_t reuse_import_locked(uint64_t token, int physical_device);

  // ---- the listener (share_listener.cpp)
  void serve();
  // Reads the request waiting on `conn` and answers it; false when none has arrived yet.
  bool serve_request(int conn, const drv::PeerInfo& peer);
  void answer(int conn, const drv::PeerInfo& peer, const share_wire::Request& req);
  // Whether some live export could admit this peer (open, or the peer is listed in time). mu_ held.
  bool could_admit_locked(const drv::PeerInfo& peer) const;
  // Makes `p` wait for its request under the caps, dropping the connection they evict. mu_ held.
  void hold_locked(PendingPeer p);
  void close_pending_locked(int fd);
  // Accepts what waits on `listen_fd`; false when accepting must pause (no descriptors now).
  bool accept_from(int listen_fd);

  drv::ShareTransport* transport_ = nullptr;
  drv::Backend* backend_ = nullptr;                       // set by attach, before any import
  HandleTable<PhysicalAllocation>* physical_ = nullptr;  // likewise
  DeviceDirectory* devices_ = nullptr;                    // likewise
  mutable RankedMutex<LockRank::kShareService> mu_;
  std::map<uint32_t, Export> exports_;                 // by share id
  std::map<std::pair<uint64_t, int>, uint64_t> imports_;  // (token, device) -> handle
  std::vector<int> retired_;  // endpoints of ended exports, closed by the listener
  std::set<uint32_t> released_;          // recently released share ids of this process
  std::deque<uint32_t> released_order_;  // bounds released_
  uint32_t next_serial_ = 0;
  bool serial_seeded_ = false;

  // The listener runs while there are exports or pending connections (and briefly after, so that
  // export/free cycles do not restart it). Written under mu_; the listener reads pending_ and
  // wake_fd_ without it, being the only writer while it runs.
  std::thread* listener_ = nullptr;
  pid_t listener_pid_ = 0;
  bool listener_exited_ = false;  // serve() returned or is returning; join before restarting
  bool stop_ = false;
  int wake_fd_ = -1;
  std::vector<PendingPeer> pending_;  // in the order accepted

  std::atomic<uint64_t> denied_{0};
  std::atomic<uint64_t> wakeups_{0};
  std::atomic<uint64_t> poll_timeouts_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> impostors_{0};
  std::atomic<uint64_t> bad_replies_{0};
};

}  // namespace aclvmm
