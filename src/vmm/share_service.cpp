// ShareService: exports, whitelists and imports (the listener is in share_listener.cpp).
#include "vmm/share_service.h"

#include <unistd.h>

#include <pthread.h>

#include <cerrno>
#include <memory>
#include <new>
#include <system_error>
#include <vector>

#include "observability/log.h"
#include "vmm/share_token.h"
#include "vmm/share_wire.h"

namespace aclvmm {

using share_wire::Reply;
using share_wire::Request;

namespace {

constexpr int kImportTimeoutMs = 5000;    // bound on every wait for an exporter
constexpr size_t kReleasedMemory = 4096;  // released share ids remembered for set-pid

Status unknown_token(uint64_t token) {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               fmt::format("shareable handle 0x{:x} is unknown or was released", token));
}

Status malformed_reply(uint64_t token, const char* what) {
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               fmt::format("the exporter of 0x{:x} sent a malformed reply ({}); nothing was imported",
                           token, what));
}

// Why adopt refused the descriptor (drv::Backend::adopt_physical's errnos).
const char* refused_memory(int rc) {
  switch (-rc) {
    case EMEDIUMTYPE: return "it is not shareable memory (a memfd)";
    case EACCES: return "it is not open for reading and writing";
    case EPERM: return "its size is not sealed, or writes to it can be sealed off";
    case EINVAL: return "its size is not the announced size";
    default: return nullptr;
  }
}

ShareService* g_forked_service = nullptr;  // the process's one service, for the fork handlers

}  // namespace

void ShareService::attach(drv::ShareTransport* transport, drv::Backend* backend,
                          HandleTable<PhysicalAllocation>* physical, DeviceDirectory* devices) {
  transport_ = transport;
  backend_ = backend;
  physical_ = physical;
  devices_ = devices;
  static bool registered = false;
  if (registered) return;
  registered = true;
  g_forked_service = this;
  // A forked child is not the exporter: it must not keep the parent's endpoints open (importers
  // would queue on them forever), hold the parent's connections, nor believe it serves the
  // parent's tokens. The lock is held across fork so the child never inherits it mid-update.
  pthread_atfork([] { g_forked_service->mu_.lock(); },
                 [] { g_forked_service->mu_.unlock(); },
                 [] {
                   g_forked_service->drop_inherited_locked();
                   g_forked_service->mu_.unlock();
                 });
}

// Runs in a forked child (one thread, the lock held): only closes and forgets. The parent's
// listener thread object is left alone on purpose; the thread does not exist here.
void ShareService::drop_inherited_locked() {
  close_all_locked();
  // The parent's imported handles do not exist in the child's runtime (it starts afresh): a
  // record of them would count in live.imports and answer nothing.
  imports_.clear();
  listener_ = nullptr;
  serial_seeded_ = false;  // the child's ids carry its own pid
}

void ShareService::close_all_locked() {
  for (int fd : retired_) transport_->close(fd);
  retired_.clear();
  for (auto& [id, e] : exports_) transport_->close(e.listen_fd);
  exports_.clear();
  for (const PendingPeer& p : pending_) transport_->close(p.fd);
  pending_.clear();
  if (wake_fd_ >= 0) transport_->close(wake_fd_);
  wake_fd_ = -1;
  listener_exited_ = false;
  stop_ = false;
}

int ShareService::bind_endpoint_locked(Export* e) {
  const pid_t me = getpid();
  if (!serial_seeded_) {
    // A random start makes a released token unlikely to come back soon, in this process or in
    // a later one with the same pid.
    next_serial_ = transport_->random_u32();
    serial_seeded_ = true;
  }
  int rc = -EADDRINUSE;
  for (uint32_t tried = 0; tried < kShareSerials && rc == -EADDRINUSE; ++tried) {
    const uint32_t id = make_share_id(static_cast<uint32_t>(me), next_serial_++);
    // The kernel refuses a name another live endpoint holds: a retired endpoint of ours not yet
    // closed, or a process of another pid namespace whose pid has the same low bits.
    if (id == 0 || exports_.count(id)) continue;
    rc = transport_->listen(id, &e->listen_fd);
    if (rc == 0) e->share_id = id;
  }
  return rc;
}

StatusOr<uint64_t> ShareService::export_handle(uint64_t handle, std::shared_ptr<PhysicalAllocation> phys,
                                               uint32_t token_device, int physical_device,
                                               bool disable_pid_validation) {
  if (phys->imported) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "an imported handle cannot be exported again");
  }
  std::lock_guard lock(mu_);
  for (const auto& [id, e] : exports_) {
    if (e.handle == handle) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("the handle is already exported as 0x{:x}", e.token));
    }
  }
  Export e;
  if (int rc = bind_endpoint_locked(&e)) {
    return Error(code_from_errno(rc), "no endpoint could be created for the export: errno " +
                                          std::to_string(-rc));
  }
  Status listening = ensure_listener_locked();
  if (!listening.ok()) {
    transport_->close(e.listen_fd);
    return listening;
  }
  e.token = ShareToken{e.share_id, token_device}.pack();
  e.handle = handle;
  e.physical_device = physical_device;
  e.phys = std::move(phys);
  e.validate_pids = !disable_pid_validation;
  const uint64_t token = e.token;
  const uint32_t id = e.share_id;
  const int listen_fd = e.listen_fd;
  try {
    exports_.emplace(id, std::move(e));
  } catch (const std::bad_alloc&) {
    transport_->close(listen_fd);  // the listener has not seen it: it polls exports_ under mu_
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the export's record");
  }
  released_.erase(id);  // the id is live again
  // The endpoint is importable now: connections queue on it until the woken listener polls it.
  transport_->wake(wake_fd_);
  return token;
}

Status ShareService::ensure_listener_locked() {
  if (listener_ && listener_pid_ == getpid() && !listener_exited_) return Status::Ok();
  if (listener_ && listener_pid_ == getpid()) {
    // It decided to end (nothing to serve) and touches nothing shared any more: reap it.
    listener_->join();
    delete listener_;
  }
  listener_ = nullptr;  // (another process's thread, after a fork without our handler: dropped)
  int wake = -1;
  if (int rc = transport_->open_wake(&wake)) {
    return Error(code_from_errno(rc),
                 "the share listener's wake-up object cannot be created: errno " + std::to_string(-rc));
  }
  wake_fd_ = wake;
  stop_ = false;
  listener_exited_ = false;
  try {
    listener_ = new std::thread([this] { serve(); });
  } catch (const std::system_error& e) {
    transport_->close(wake_fd_);
    wake_fd_ = -1;
    return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
                 std::string("the share listener thread cannot be created: ") + e.what());
  } catch (const std::bad_alloc&) {
    transport_->close(wake_fd_);
    wake_fd_ = -1;
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the share listener thread");
  }
  listener_pid_ = getpid();
  return Status::Ok();
}

Status ShareService::set_pids(uint64_t token, const int32_t* pids, size_t count, int device_count) {
  ShareToken t = ShareToken::unpack(token);
  if (!ShareToken::well_formed(token) || static_cast<int>(t.device) >= 64 ||
      static_cast<int>(t.device) >= device_count) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE,
                 fmt::format("0x{:x} is not a shareable handle (bad device field)", token));
  }
  {
    std::lock_guard lock(mu_);
    auto it = exports_.find(t.share_id);
    if (it != exports_.end() && it->second.token == token) {
      Export& e = it->second;
      if (!e.validate_pids) {
        return Error(ACL_ERROR_RT_NO_PERMISSION,
                     "the handle was exported with DISABLE_PID_VALIDATION; any process may import it");
      }
      const uint64_t stamp = transport_->share_clock();
      // The previous stamp of every pid touched (0: it was not listed), to undo a partial update.
      std::vector<std::pair<int32_t, uint64_t>> before;
      try {
        before.reserve(count);
        for (size_t i = 0; i < count; ++i) {
          if (pids[i] == 0) continue;  // the vendor skips empty entries
          auto w = e.whitelist.find(pids[i]);
          before.emplace_back(pids[i], w == e.whitelist.end() ? 0 : w->second);
          e.whitelist[pids[i]] = stamp;
        }
      } catch (const std::bad_alloc&) {
        for (auto r = before.rbegin(); r != before.rend(); ++r) {
          if (r->second == 0) {
            e.whitelist.erase(r->first);
          } else {
            e.whitelist[r->first] = r->second;  // present already: no allocation
          }
        }
        return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the whitelist");
      }
      if (before.empty()) return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "every pid in the list is 0");
      return Status::Ok();
    }
    // Our own endpoint may still be open for a moment after the release.
    if (released_.count(t.share_id)) return unknown_token(token);
  }
  Reply rep{};
  int rc = exchange(token, share_wire::kProbe, -1, &rep, nullptr);
  if (rc == static_cast<int>(sizeof rep) && rep.magic == share_wire::kMagic && rep.code == 0) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 "only the exporting process may set the pids of a shareable handle");
  }
  return unknown_token(token);
}

bool ShareService::served_by_exporter(int fd, const drv::PeerInfo& server, uint32_t share_id) {
  if (server.pid <= 0) return false;  // invisible from here: not a process this token can name
  if (share_id_names(share_id, server.pid)) return true;
  // An importer in an ancestor pid namespace sees the exporter under another pid; the token has
  // the exporter's own (the last of its NSpid chain).
  return share_id_names(share_id, transport_->peer_pid_in_own_namespace(fd));
}

int ShareService::exchange(uint64_t token, uint32_t kind, int device, Reply* rep, int* mem_fd) {
  if (mem_fd) *mem_fd = -1;
  const uint32_t share_id = ShareToken::unpack(token).share_id;
  int fd = -1;
  drv::PeerInfo server;
  int rc = transport_->connect(share_id, kImportTimeoutMs, &fd, &server);
  if (rc != 0) return rc;
  if (!served_by_exporter(fd, server, share_id)) {
    // Anyone may bind a free name. Whoever did is not asked anything, so it learns nothing and
    // cannot answer with memory of its own.
    transport_->close(fd);
    impostors_.fetch_add(1);
    ACLVMM_LOG_WARN("DRV",
                    "shareable handle 0x{:x}: the process listening on its endpoint (pid {}, uid {}) "
                    "is not its exporter; treated as unknown",
                    token, server.pid, server.uid);
    return -ESRCH;
  }
  Request req{share_wire::kMagic, kind, token, device, 0};
  int got = -1;
  rc = transport_->send(fd, &req, sizeof req, -1);
  if (rc == 0) rc = transport_->recv(fd, rep, sizeof *rep, &got, kImportTimeoutMs);
  transport_->close(fd);
  if (mem_fd) {
    *mem_fd = got;
  } else if (got >= 0) {
    transport_->close(got);
  }
  return rc;
}

int ShareService::local_export_device(uint32_t share_id) {
  std::lock_guard lock(mu_);
  auto it = exports_.find(share_id);
  return it == exports_.end() ? -1 : it->second.physical_device;
}

Status ShareService::fetch_remote(uint64_t token, int physical_device, int device_count,
                                  PhysicalAllocation* phys) {
  Reply rep{};
  int mem_fd = -1;
  int rc = exchange(token, share_wire::kImport, physical_device, &rep, &mem_fd);
  // Closes the received descriptor (through the transport: the core makes no system call) on
  // every path that does not hand it to adopt.
  struct FdGuard {
    drv::ShareTransport* transport;
    int* fd;
    ~FdGuard() {
      if (*fd >= 0) transport->close(*fd);
    }
  } fd_guard{transport_, &mem_fd};
  // Nobody (or not the exporter) serves the id, or the exporter vanished mid-handshake (it
  // exited or released the token): nothing to import.
  if (rc == -ECONNREFUSED || rc == -ENOENT || rc == -ESRCH || rc == 0 || rc == -ECONNRESET ||
      rc == -EPIPE) {
    return unknown_token(token);
  }
  if (rc < 0) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 "the exporting process did not answer the import: " +
                     (rc == -ETIMEDOUT ? std::string("timed out") : "errno " + std::to_string(-rc)));
  }
  const char* defect = rc != static_cast<int>(sizeof rep) || rep.magic != share_wire::kMagic
                           ? "not a reply"
                           : share_wire::reply_defect(rep, device_count);
  if (defect == nullptr && rep.code == 0 && mem_fd < 0) defect = "no memory attached";
  if (defect != nullptr) {
    bad_replies_.fetch_add(1);
    return malformed_reply(token, defect);
  }
  if (rep.code == ACL_ERROR_RT_INVALID_HANDLE) return unknown_token(token);
  if (rep.code != 0) {
    return Error(rep.code, "the exporting process refused the import: this process is not on the "
                           "handle's pid whitelist (or was listed before it started)");
  }
  const int fd = mem_fd;
  mem_fd = -1;  // adopt owns it from here
  rc = backend_->adopt_physical(fd, rep.size, &phys->memory);
  if (rc != 0) {
    if (const char* why = refused_memory(rc)) {
      bad_replies_.fetch_add(1);
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("the memory the exporter of 0x{:x} sent was refused: {}", token, why));
    }
    return Error(code_from_errno(rc), "the received memory is unusable: errno " + std::to_string(-rc));
  }
  phys->side = static_cast<Side>(rep.side);
  phys->device = phys->side == Side::kDevice ? physical_device : rep.device;
  phys->reported_device = rep.device;
  phys->page_type = static_cast<PageType>(rep.page_type);
  phys->mem_type = static_cast<MemType>(rep.mem_type);
  phys->size = rep.size;
  return Status::Ok();
}

uint64_t ShareService::reuse_import_locked(uint64_t token, int physical_device) {
  auto known = imports_.find({token, physical_device});
  if (known == imports_.end()) return 0;
  auto& table = *physical_;
  std::lock_guard tlock(table.mutex());
  auto existing = table.find_locked(known->second);
  if (!existing) return 0;
  ++existing->ref;
  return known->second;
}

StatusOr<uint64_t> ShareService::import(uint64_t token, int physical_device) {
  if (!ShareToken::well_formed(token)) return unknown_token(token);
  const ShareToken t = ShareToken::unpack(token);
  std::shared_ptr<PhysicalAllocation> phys;
  try {
    phys = std::make_shared<PhysicalAllocation>();
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the imported handle");
  }
  phys->imported = true;
  phys->created_by = "aclrtMemImportFromShareableHandle";
  {
    std::lock_guard lock(mu_);
    // Keyed by the whole token: the same share id with another device field is a token no export
    // produced, and must not resolve to the handle held here (it is 107017 like anywhere else).
    // The same token on the same device again: the same handle, one more reference.
    if (uint64_t h = reuse_import_locked(token, physical_device)) return h;
    auto local = exports_.find(t.share_id);
    if (local != exports_.end() && local->second.token == token) {
      const Export& e = local->second;
      if (!e.phys->on_device() || e.physical_device == physical_device) {
        return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                     "a process cannot import its own export onto the same device");
      }
      phys->side = e.phys->side;
      phys->device = physical_device;
      phys->reported_device = e.physical_device;
      phys->page_type = e.phys->page_type == kNormalPage ? kHugePage : e.phys->page_type;
      phys->mem_type = e.phys->mem_type;
      phys->size = e.phys->size;
      phys->memory = e.phys->memory;
    }
  }
  if (!phys->memory) {
    ACLVMM_RETURN_IF_ERROR(
        fetch_remote(token, physical_device, devices_->device_count(), phys.get()));
  }
  // The device MMU maps backend objects: the received (or shared) bytes get a PhysicalId.
  ACLVMM_RETURN_IF_ERROR(DeviceMemory::adopt(devices_->device(), *phys));
  const int exporter_device = phys->reported_device;
  const bool device_memory = phys->on_device();
  uint64_t handle = 0;
  {
    std::lock_guard lock(mu_);
    // Another thread may have imported the same token onto the same device while this one talked
    // to the exporter: the vendor gives one handle, so ours is dropped (its memory with it).
    if (uint64_t h = reuse_import_locked(token, physical_device)) return h;
    auto& table = *physical_;
    handle = table.insert(phys);
    if (handle == 0) return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "too many live physical memory handles");
    try {
      imports_[{token, physical_device}] = handle;
    } catch (const std::bad_alloc&) {
      table.remove(handle);
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory for the import's record");
    }
  }
  if (device_memory && exporter_device != physical_device) {
    // The vendor runtime opens peer access both ways before importing onto another device.
    devices_->enable_peer_pair(exporter_device, physical_device);
  }
  return handle;
}

void ShareService::remember_released(uint32_t share_id) {
  released_.insert(share_id);
  released_order_.push_back(share_id);
  if (released_order_.size() > kReleasedMemory) {
    released_.erase(released_order_.front());
    released_order_.pop_front();
  }
}

void ShareService::forget_handle(uint64_t handle) {
  std::lock_guard lock(mu_);
  bool retired = false;
  for (auto it = exports_.begin(); it != exports_.end();) {
    if (it->second.handle == handle) {
      remember_released(it->first);
      // The listener may be polling this descriptor: it closes retired ones itself.
      if (listener_ && listener_pid_ == getpid() && !listener_exited_) {
        retired_.push_back(it->second.listen_fd);
        retired = true;
      } else {
        transport_->close(it->second.listen_fd);
      }
      it = exports_.erase(it);
    } else {
      ++it;
    }
  }
  if (retired) transport_->wake(wake_fd_);
  for (auto it = imports_.begin(); it != imports_.end();) {
    it = it->second == handle ? imports_.erase(it) : std::next(it);
  }
}

void ShareService::shutdown() {
  std::thread* listener = nullptr;
  {
    std::lock_guard lock(mu_);
    if (listener_pid_ == getpid()) listener = listener_;
    listener_ = nullptr;
    stop_ = true;
    if (listener && !listener_exited_) transport_->wake(wake_fd_);
  }
  if (listener) {
    listener->join();
    delete listener;
  }
  std::lock_guard lock(mu_);
  // The listener closed its connections and wake object on its way out; what is left are the
  // endpoints (and, after a fork without our handler, what the parent's listener held).
  close_all_locked();
  imports_.clear();
}

size_t ShareService::live_exports() const {
  std::lock_guard lock(mu_);
  return exports_.size();
}

size_t ShareService::live_imports() const {
  std::lock_guard lock(mu_);
  return imports_.size();
}

}  // namespace aclvmm
