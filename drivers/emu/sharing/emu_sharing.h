// EmuSharing: emu's Sharing unit (drivers/sharing.h): exporting physical memory to other
// processes and importing theirs, with no daemon (emulation.md section 5, behavior.md section 7,
// docs/sharing.md). What the vendor's kernel module does on hardware is done here: share ids,
// the token layout (token.h), the whitelist and its enforcement, the same-process rules.
//
// Exported tokens are served on listening endpoints of the exporting process, one per group of
// 256 consecutive share ids (token.h), named by the group, which names the exporter's pid too: a
// process holds one endpoint per 256 live exports, not one per export. One listener thread per
// backend serves all of them while there is anything to serve (listener.cpp). An importer connects,
// checks that the kernel reports the token's exporter as the listener, and asks; the listener
// checks the importer against the whitelist using the credentials the kernel reports for the
// connection, and answers with the memory's file descriptor (size-sealed): the bytes then live as
// long as any process holds them. Both sides keep the connection for the importer's next import
// from that endpoint, each pinning the other process with a pidfd: a kept connection is believed
// only while the process it was made with runs (docs/sharing.md §5, "Kept connections"). Every wait
// on the other side is bounded, and what other processes can make the exporter hold is capped, so a
// dead, stuck or hostile peer costs an error, never a hang or a resource.
//
// Results (as the kernel module gives them, drivers/sharing.h): unknown or released token,
// exporter gone -EFAULT; not whitelisted, own export onto the same device, set-pid by another
// process -EACCES; set-pid after disable_validation -EPERM; a second export, an export of an
// import, an all-zero pid list -EINVAL; a malformed reply or memory -EINVAL (counted:
// replies_refused); an exporter that does not answer in time -ETIMEDOUT, that fails otherwise
// -EPROTO; no listener thread -ENOSPC.
//
// Threading: every method from any thread. One mutex (mu_) guards the records; it is held across
// fork (prepare_fork .. after_fork_*), and a forked child drops every endpoint, connection and
// thread of the parent's without acting on them. Statistics are process totals: a restart's new
// backend goes on counting.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "drivers/backend_listener.h"
#include "drivers/device_backend.h"
#include "drivers/emu/fabric/cross_host.h"
#include "drivers/emu/os/physical_memory.h"
#include "drivers/emu/sharing/gated_transport.h"
#include "drivers/emu/sharing/wire.h"
#include "drivers/sharing.h"

namespace aclvmm::dev::emu {

class EmuPhysical;
class EmuPhysicalAllocator;

namespace share {
struct FabricFields;
// A new, uncharged object over `bytes` that another process (or another device of this one)
// exported, reachable from `importer`; `holder` keeps it until released (importer.cpp).
Result adopt_object(const PhysicalProperties& exporter, std::shared_ptr<os::PhysicalMemory> bytes,
                    DeviceIndex exporter_device, DeviceIndex importer, EmuPhysicalAllocator* holder,
                    ImportedMemory* out);
}  // namespace share

class EmuSharing final : public Sharing, private fabric::ExportDirectory {
 public:
  // user_ids: ASCEND_RT_VISIBLE_DEVICES as the core resolved it (user id i is device
  // user_ids[i]; empty: the identity). Tokens carry the exporter's user id (behavior.md §7).
  // server_id: this host's server of the super-pod (ACLVMM_SERVER_ID), which FABRIC handles
  // name; pod: every server's control address (ACLVMM_POD_FILE; empty: this host alone), through
  // which device memory is shared with other servers (fabric/cross_host.h, docs/fabric.md).
  EmuSharing(BackendListener& listener, share::ShareTransport& transport, int32_t device_count,
             std::vector<int32_t> user_ids, int32_t server_id = 0,
             std::vector<fabric::PodAddress> pod = {});
  ~EmuSharing() override;
  EmuSharing(const EmuSharing&) = delete;
  EmuSharing& operator=(const EmuSharing&) = delete;

  Result export_memory(PhysicalId memory, ShareToken* out) override;
  Result export_fabric(PhysicalId memory, FabricToken* inout) override;
  Result disable_validation(ShareToken token) override;
  Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) override;
  Result token_of_fabric(const FabricToken& fabric, ShareToken* out) override;
  Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) override;
  Result import_fabric(const FabricToken& fabric, DeviceIndex device,
                       ImportedMemory* out) override;

  // IPC memory by key (ipc_keys.cpp): each live key is an endpoint named by its text
  // (transport.h), served by the same listener; the whitelist and its stamps work as for tokens.
  Result ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) override;
  Result ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) override;
  Result ipc_set_link(const IpcKey& key, uint32_t link) override;
  Result ipc_close_export(const IpcKey& key) override;
  void ipc_revoke(const IpcKey& key) override;
  Result ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) override;

  // PhysicalAllocator::release of `memory` is under way: its export (if any) ends.
  void memory_released(PhysicalId memory);
  // The allocator that holds each import's handle until it is released or the backend goes
  // (EmuPhysicalAllocator::hold); set once at open.
  void hold_imports_in(EmuPhysicalAllocator* physical) { physical_ = physical; }

  void prepare_fork();
  void after_fork_parent();
  void after_fork_child();
  // The counter of the process's next IPC key (runtime-extra.md §3.1): one per process, never
  // reused while it lives, whichever backend a restart opens; a forked child starts at 1.
  static uint64_t next_key_counter();
  static void reset_key_counter();
  // Group "ipc" of DeviceBackend::visit_statistics.
  static void visit_statistics(StatisticsVisitor& visitor);

  // Test hook: live exports of this backend.
  size_t live_exports() const;

 private:
  struct Export {
    uint32_t share_id = 0;
    uint64_t token = 0;
    PhysicalId memory;
    PhysicalProperties properties;
    std::shared_ptr<os::PhysicalMemory> bytes;  // what the listener sends
    bool validate_pids = true;
    std::map<int32_t, uint64_t> whitelist;  // pid -> share_clock() stamp of its last set_pids
  };
  // The listening endpoint of one group of share ids (token.h), with the live exports it serves.
  struct Endpoint {
    int fd = -1;
    uint32_t exports = 0;
  };
  // What could_admit_locked needs of the exports' whitelists without walking them: per listed pid,
  // how many exports list it and the newest stamp; and how many exports have no whitelist.
  struct Listed {
    uint32_t exports = 0;
    uint64_t newest = 0;
  };
  struct KeyExport {
    IpcKey key;
    IpcRange range;
    PhysicalProperties properties;
    std::shared_ptr<os::PhysicalMemory> bytes;  // null once revoked (the memory was freed)
    bool validate_pids = true;
    std::map<int32_t, uint64_t> whitelist;
    std::set<int32_t> importers;  // of a no-whitelist key, bounded by kIpcWhitelistMax
    uint64_t served = 0;          // imports answered
    uint32_t link = 0;
    int listen_fd = -1;
  };
  // A connection the listener accepted: one whose request has not arrived yet, or one kept after
  // its answer for the importer's next request (docs/sharing.md §5, "Kept connections").
  struct PendingPeer {
    int fd = -1;
    share::PeerInfo peer;
    std::chrono::steady_clock::time_point deadline;
    bool admissible = true;  // some live export could admit this peer
    bool waiting = false;    // its request had not arrived at accept: it holds a place under the caps
    bool kept = false;       // answered once and kept: no deadline, under the kept caps
    int pidfd = -1;          // kept: pins the importer's process (transport pin_peer)
    uint64_t used = 0;       // kept: when it was last answered (kept_clock_), for eviction
    bool low = false;        // kept in the application's descriptor range (no room above it)
  };
  // The listener's verdict on one readable connection (serve_request).
  enum class Served { kNotYet, kDone, kAnswered };
  // An importer's idle connection to an exporter's endpoint, kept for the next import from it: the
  // exporter was checked when it was made, and `pidfd` tells whether it still runs.
  struct Link {
    uint32_t endpoint = 0;
    int fd = -1;
    int pidfd = -1;
    bool placed = false;  // out of the application's range already (place_kept)
  };

  // ---- exporter side (emu_sharing.cpp)
  uint32_t user_id(DeviceIndex device) const;
  // This process's live export with exactly this token, or nullptr. mu_ held.
  Export* own_export_locked(ShareToken token);
  Result export_locked(PhysicalId memory, uint64_t* token);
  // A free share id of this process, its group's endpoint bound (the kernel refuses a group
  // another process holds: a pid of another pid namespace with the same low bits) and counted.
  // mu_ held.
  int take_share_id_locked(uint32_t* id);
  // The export `id` ends: its endpoint serves one export less, and goes when it serves none
  // (unless `keep_current` and new ids are still taken from its group). mu_ held.
  void put_share_id_locked(uint32_t id, bool keep_current);
  // The listener closes the endpoint (if it runs), else it is closed now. mu_ held.
  void retire_endpoint_locked(std::map<uint32_t, Endpoint>::iterator it);
  // One export fewer lists `pid` (listed_). mu_ held.
  void unlist_locked(int32_t pid);
  // Forgets an ended export: its records, its place in listed_ and its share id. mu_ held.
  void forget_export_locked(std::map<uint32_t, Export>::iterator it);
  // Starts the listener if none runs, else nothing. mu_ held.
  Result ensure_listener_locked();
  void remember_released(uint32_t share_id);
  // Closes every endpoint, connection and the wake object, and forgets the exports. mu_ held.
  void close_all_locked();
  // Stops the listener and closes everything (the destructor).
  void shutdown();

  // ---- importer side (importer.cpp)
  // One request/reply with the exporter of `token`, on a connection kept from an earlier one when
  // there is one (docs/sharing.md §5); the reply length or -errno (-ESRCH: the process listening
  // on the token's endpoint is not the one the token names). With a reply, *used is the
  // connection: the caller keeps it (put_link) once it believes the reply, else closes it.
  int exchange(uint64_t token, uint32_t kind, int device, share::wire::Reply* rep, int* mem_fd,
               Link* used);
  bool served_by_exporter(int fd, const share::PeerInfo& server, uint32_t share_id);
  // The same for a key's endpoint: the listener must be the process whose bare tgid it names.
  bool served_by_key_exporter(int fd, const share::PeerInfo& server, uint32_t tgid);
  // Counts and logs a listener that is not the exporter a name belongs to, closes `fd`; -ESRCH.
  int refuse_impostor(int fd, const share::PeerInfo& server, const char* what);
  // Sends one request on `fd` and receives the reply (and a descriptor, kept in *mem_fd or
  // closed), bounded; with `pidfd`, from the process it pins only (recv_pinned). The reply's
  // length or -errno.
  int ask(int fd, const void* request, size_t request_size, void* reply, size_t reply_size,
          int* mem_fd, int pidfd = -1);
  // A fresh connection to the exporter of `token` (its endpoint's listener must be the process
  // the token names), pinned for keeping when the kernel allows; 0 or -errno.
  int open_link(uint64_t token, Link* link);
  // An idle kept connection to `endpoint`, taken out of links_; false when there is none.
  bool take_link(uint32_t endpoint, Link* link);
  // Gives a connection whose exchange went well back to links_, within the caps; else closes it.
  void put_link(Link link);
  // Closes a connection that is not in links_ (taken, or never kept).
  void close_link(const Link& link);
  // Closes its descriptors only (one no longer in busy_). Any lock.
  void close_fds(const Link& link);
  // Records (or forgets) the descriptors of a connection in use outside links_, so that a forked
  // child can close its copies (after_fork_child). mu_ held.
  void busy_locked(const Link& link, bool busy);
  // Whether `key` names another process (a key of ours that is not live is no foreign key).
  bool foreign_key_locked(const IpcKey& key);
  // The code another process's listener gives a probe of `key` (kUnknownToken without answer).
  int probe_key(const IpcKey& key);
  // One key request/reply with the key's exporter; as exchange().
  int exchange_key(const IpcKey& key, uint32_t kind, int device, share::wire::KeyReply* rep,
                   int* mem_fd);
  // Ends an own key: its endpoint goes to the listener to close. mu_ held.
  void retire_key_locked(std::map<IpcKey, KeyExport>::iterator it);
  Result fetch_remote(uint64_t token, DeviceIndex device, ImportedMemory* out);
  // A reply that could not have come from an exporter of this backend: counted, logged, EINVAL.
  Result refuse_reply(const char* what, const char* defect);
  // The memory a checked reply attached (*mem_fd, taken over): adopted as a new object.
  Result take_memory(const share::wire::Reply& rep, int* mem_fd, const char* what,
                     DeviceIndex device, ImportedMemory* out);
  // The own export behind `token`, imported onto another device; false when it is not ours.
  bool import_local(uint64_t token, DeviceIndex device, ImportedMemory* out, Result* result);

  // ---- another server's importers (cross_server.cpp; fabric::ExportDirectory)
  fabric::RemoteGrant admit_remote(uint64_t token, int32_t tgid) override;
  bool relay(const fabric::wire::Request& req, int conn) override;
  // A relayed control-port connection (`conn`, taken over) from process `peer` of this host.
  void take_relayed(int conn, const share::PeerInfo& peer, const fabric::wire::Request& req);
  Result import_other_server(const share::FabricFields& f, DeviceIndex device, ImportedMemory* out);

  // ---- the listener (listener.cpp)
  void serve();
  // Reads the request waiting on `conn` and answers it; false when none has arrived yet.
  Served serve_request(const PendingPeer& p);
  // Answers a token request; false when the connection must not be kept (its importer has
  // exited since it connected: the reply then refuses).
  bool answer(const PendingPeer& p, const share::wire::Request& req);
  void answer_key(int conn, const share::PeerInfo& peer, const share::wire::KeyRequest& req);
  bool could_admit_locked(const share::PeerInfo& peer) const;
  void hold_locked(PendingPeer p);
  void close_pending_locked(int fd);
  bool accept_from(int listen_fd);
  // What follows the answer on `fd` (its entry in pending_): kept for the importer's next request
  // when some export could admit it and it can be pinned, within the kept caps; else closed.
  void after_answer(int fd);
  // Kept connections of one uid, in all, and those left in the application's descriptor range
  // (`low`: the newcomer is one) are capped: the least recently used goes first. mu_.
  void cap_kept_locked(unsigned uid, bool low);
  void drop_pending_locked(std::vector<PendingPeer>::iterator it);

  BackendListener& listener_;
  InjectionGate gate_;
  share::GatedTransport transport_;
  const int32_t device_count_;
  const std::vector<int32_t> user_ids_;
  const int32_t server_id_;
  const bool pod_configured_;
  std::unique_ptr<fabric::CrossHost> cross_host_;  // null without a pod or libfabric
  EmuPhysicalAllocator* physical_ = nullptr;
  mutable std::mutex mu_;
  std::map<uint32_t, Export> exports_;       // by share id
  std::map<uint32_t, Endpoint> endpoints_;   // by endpoint id (token.h): every one we hold
  uint32_t current_endpoint_ = 0;            // the group new ids come from (valid if present)
  std::map<int32_t, Listed> listed_;         // pid -> exports listing it
  uint32_t open_exports_ = 0;                // exports without a whitelist
  std::map<uint64_t, uint32_t> exported_;    // PhysicalId -> share id
  std::vector<int> retired_;  // endpoints of ended exports, closed by the listener
  std::set<uint32_t> released_;          // recently released share ids of this process
  std::deque<uint32_t> released_order_;  // bounds released_
  std::map<IpcKey, KeyExport> keys_;     // this process's live keys
  std::set<IpcKey> closed_served_;       // closed after serving imports (107017 afterwards)
  std::deque<IpcKey> closed_served_order_;  // bounds closed_served_
  int32_t tgid_ = 0;                        // this process's bare tgid, once asked
  uint32_t next_serial_ = 0;
  bool serial_seeded_ = false;

  // The listener runs while there are exports or pending connections (and briefly after, so that
  // export/release cycles do not restart it). Written under mu_; the listener reads pending_ and
  // wake_fd_ without it, being the only writer while it runs.
  std::thread* thread_ = nullptr;
  pid_t thread_pid_ = 0;
  uid_t thread_uid_ = 0;        // this process's effective uid when the listener started
  bool thread_exited_ = false;  // serve() returned or is returning; join before restarting
  bool stop_ = false;
  int wake_fd_ = -1;
  std::vector<PendingPeer> pending_;  // in the order accepted
  uint64_t kept_clock_ = 0;           // counts answers on kept connections (PendingPeer::used)
  // The importer side's idle kept connections, oldest first (importer.cpp). mu_.
  std::vector<Link> links_;
  std::vector<int> busy_;  // descriptors of connections in use outside links_ (busy_locked)
  // ensure_listener_locked waits until a new listener has set itself up (serve() signals).
  std::mutex started_mu_;
  std::condition_variable started_cv_;
  bool listener_started_ = false;
};

}  // namespace aclvmm::dev::emu
