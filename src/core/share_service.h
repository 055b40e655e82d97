// ShareService: exporting physical memory to other processes and importing theirs, with no daemon
// (emulation.md section 5, behavior.md section 7).
//
// Every exported token is a listening endpoint of the exporting process, named by its share id;
// one listener thread per process serves all of them. An importer connects, the listener checks
// the importer against the whitelist using the credentials the kernel reports for the
// connection, and answers with the memory's file descriptor: the bytes then live as long as any
// process holds them. Every wait on the other side is bounded, so a dead or stuck peer costs a
// timeout and an error code, never a hang.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/physical.h"
#include "core/status.h"
#include "drivers/driver.h"

namespace aclvmm {

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

class ShareService {
 public:
  // Binds the transport; also makes forked children drop the parent's endpoints.
  void attach(drv::ShareTransport* transport);

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
  uint64_t denied() const { return denied_.load(); }

 private:
  struct Request;
  struct Reply;
  void serve();
  void answer(int conn, const drv::PeerInfo& peer);
  void ensure_listener();
  // One request/reply with the exporter of `token`; the reply length or -errno.
  int exchange(uint64_t token, uint32_t kind, int device, Reply* rep, int* mem_fd);
  void remember_released(uint32_t share_id);

  drv::ShareTransport* transport_ = nullptr;
  mutable std::mutex mu_;
  std::map<uint32_t, Export> exports_;                 // by share id
  std::map<std::pair<uint64_t, int>, uint64_t> imports_;  // (token, device) -> handle
  std::vector<int> retired_;
  std::set<uint32_t> released_;          // recently released share ids of this process
  std::deque<uint32_t> released_order_;  // bounds released_  // endpoints of ended exports, closed by the listener
  std::thread* listener_ = nullptr;
  pid_t listener_pid_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> denied_{0};
};

}  // namespace aclvmm
