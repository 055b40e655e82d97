#include "core/share_service.h"

#include <unistd.h>

#include <pthread.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "core/log.h"
#include "core/runtime.h"
#include "core/share_token.h"

namespace aclvmm {

// Wire format between importer and exporter (same machine, same library: no versioning beyond
// the magic, which also rejects stray connections).
struct ShareService::Request {
  uint32_t magic;
  uint32_t kind;   // kImport, or kProbe: "is this token live?" (set-pid by another process)
  uint64_t token;  // the whole token: a share id with another device field is not this export
  int32_t device;  // the importer's physical device, for the same-device check
  int32_t pad;
};

struct ShareService::Reply {
  uint32_t magic;
  int32_t code;  // 0, or the aclError the importer returns
  uint64_t size;
  uint32_t side;
  int32_t device;  // exporter's physical device
  uint32_t page_type;
  uint32_t mem_type;
};

namespace {

constexpr uint32_t kMagic = 0x4d4d5641;     // "AVMM"
constexpr int kImportTimeoutMs = 5000;      // bound on every wait for an exporter
constexpr int kServeTimeoutMs = 2000;       // how long an accepted connection may stay silent
constexpr uint32_t kImport = 1, kProbe = 2;
constexpr size_t kReleasedMemory = 4096;    // released share ids remembered for set-pid
constexpr int kPollMs = 100;                // listener wake-up for new endpoints and shutdown

Status unknown_token(uint64_t token) {
  return Error(ACL_ERROR_RT_INVALID_HANDLE,
               fmt::format("shareable handle 0x{:x} is unknown or was released", token));
}

}  // namespace

namespace {
ShareService* g_forked_service = nullptr;  // the process's one service, for the fork handlers
}  // namespace

void ShareService::attach(drv::ShareTransport* transport) {
  transport_ = transport;
  static bool registered = false;
  if (registered) return;
  registered = true;
  g_forked_service = this;
  // A forked child is not the exporter: it must not keep the parent's endpoints open (importers
  // would queue on them forever) nor believe it serves the parent's tokens. The lock is held
  // across fork so the child never inherits it mid-update.
  pthread_atfork([] { g_forked_service->mu_.lock(); },
                 [] { g_forked_service->mu_.unlock(); },
                 [] {
                   ShareService* s = g_forked_service;
                   for (int fd : s->retired_) s->transport_->close(fd);
                   s->retired_.clear();
                   for (auto& [id, e] : s->exports_) s->transport_->close(e.listen_fd);
                   s->exports_.clear();
                   s->listener_ = nullptr;  // the parent's thread; never joined here
                   s->mu_.unlock();
                 });
}

StatusOr<uint64_t> ShareService::export_handle(uint64_t handle, std::shared_ptr<PhysicalAllocation> phys,
                                               uint32_t token_device, int physical_device,
                                               bool disable_pid_validation) {
  if (phys->imported) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "an imported handle cannot be exported again");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, e] : exports_) {
    if (e.handle == handle) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("the handle is already exported as 0x{:x}", e.token));
    }
  }
  Export e;
  int rc = -EADDRINUSE;
  for (int attempt = 0; attempt < 64 && rc == -EADDRINUSE; ++attempt) {
    // Random ids make a released token unlikely to come back soon; the kernel refuses an id
    // that another live endpoint on the machine holds.
    e.share_id = transport_->random_u32();
    if (exports_.count(e.share_id)) continue;
    rc = transport_->listen(e.share_id, &e.listen_fd);
  }
  if (rc != 0) {
    return Error(code_from_errno(rc), "no endpoint could be created for the export: errno " +
                                          std::to_string(-rc));
  }
  released_.erase(e.share_id);  // the id is live again
  e.token = ShareToken{e.share_id, token_device}.pack();
  e.handle = handle;
  e.physical_device = physical_device;
  e.phys = std::move(phys);
  e.validate_pids = !disable_pid_validation;
  const uint64_t token = e.token;
  exports_.emplace(e.share_id, std::move(e));
  ensure_listener();
  return token;
}

void ShareService::ensure_listener() {
  if (listener_ && listener_pid_ == getpid()) return;
  // In a forked child the parent's listener thread does not exist: start our own.
  stop_.store(false);
  listener_ = new std::thread([this] { serve(); });
  listener_pid_ = getpid();
}

Status ShareService::set_pids(uint64_t token, const int32_t* pids, size_t count, int device_count) {
  ShareToken t = ShareToken::unpack(token);
  if (!ShareToken::well_formed(token) || static_cast<int>(t.device) >= 64 ||
      static_cast<int>(t.device) >= device_count) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE,
                 fmt::format("0x{:x} is not a shareable handle (bad device field)", token));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = exports_.find(t.share_id);
    if (it != exports_.end() && it->second.token == token) {
      Export& e = it->second;
      if (!e.validate_pids) {
        return Error(ACL_ERROR_RT_NO_PERMISSION,
                     "the handle was exported with DISABLE_PID_VALIDATION; any process may import it");
      }
      const uint64_t stamp = transport_->share_clock();
      size_t added = 0;
      for (size_t i = 0; i < count; ++i) {
        if (pids[i] == 0) continue;  // the vendor skips empty entries
        e.whitelist[pids[i]] = stamp;
        ++added;
      }
      if (added == 0) return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "every pid in the list is 0");
      return Status::Ok();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Our own endpoint may still be open for a moment after the release.
    if (released_.count(t.share_id)) return unknown_token(token);
  }
  Reply rep{};
  int rc = exchange(token, kProbe, -1, &rep, nullptr);
  if (rc == static_cast<int>(sizeof rep) && rep.magic == kMagic && rep.code == 0) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 "only the exporting process may set the pids of a shareable handle");
  }
  return unknown_token(token);
}

int ShareService::exchange(uint64_t token, uint32_t kind, int device, Reply* rep, int* mem_fd) {
  int fd = -1;
  int rc = transport_->connect(ShareToken::unpack(token).share_id, kImportTimeoutMs, &fd);
  if (rc != 0) return rc;
  Request req{kMagic, kind, token, device, 0};
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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = exports_.find(share_id);
  return it == exports_.end() ? -1 : it->second.physical_device;
}

StatusOr<uint64_t> ShareService::import(uint64_t token, int physical_device) {
  if (!ShareToken::well_formed(token)) return unknown_token(token);
  const ShareToken t = ShareToken::unpack(token);
  Runtime& rt = Runtime::get();
  auto& table = rt.physical();
  auto phys = std::make_shared<PhysicalAllocation>();
  phys->imported = true;
  phys->created_by = "aclrtMemImportFromShareableHandle";
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Keyed by the whole token: the same share id with another device field is a token no export
    // produced, and must not resolve to the handle held here (it is 107017 like anywhere else).
    auto known = imports_.find({token, physical_device});
    if (known != imports_.end()) {
      // The same token on the same device again: the same handle, one more reference.
      std::lock_guard<ReadMostlyMutex> tlock(table.mutex());
      if (auto existing = table.find_locked(known->second)) {
        ++existing->ref;
        return known->second;
      }
    }
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
    Reply rep{};
    int mem_fd = -1;
    int rc = exchange(token, kImport, physical_device, &rep, &mem_fd);
    if (rc == -ECONNREFUSED || rc == -ENOENT) return unknown_token(token);
    if (rc != static_cast<int>(sizeof rep) || rep.magic != kMagic) {
      if (mem_fd >= 0) transport_->close(mem_fd);
      // The exporter vanished mid-handshake (it exited or released the token): nothing to import.
      if (rc == 0 || rc == -ECONNRESET || rc == -EPIPE) return unknown_token(token);
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   "the exporting process did not answer the import: " +
                       (rc == -ETIMEDOUT ? std::string("timed out") : "errno " + std::to_string(-rc)));
    }
    if (rep.code != 0) {
      if (mem_fd >= 0) transport_->close(mem_fd);
      if (rep.code == ACL_ERROR_RT_INVALID_HANDLE) return unknown_token(token);
      return Error(rep.code, "the exporting process refused the import: this process is not on the "
                             "handle's pid whitelist (or was listed before it started)");
    }
    if (mem_fd < 0) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the exporting process sent no memory");
    }
    rc = rt.backend().adopt_physical(mem_fd, rep.size, &phys->memory);  // owns mem_fd now
    if (rc != 0) return Error(code_from_errno(rc), "the received memory is unusable");
    phys->side = static_cast<Side>(rep.side);
    phys->device = phys->side == Side::kDevice ? physical_device : rep.device;
    phys->reported_device = rep.device;
    phys->page_type = static_cast<PageType>(rep.page_type);
    phys->mem_type = static_cast<MemType>(rep.mem_type);
    phys->size = rep.size;
  }
  const int exporter_device = phys->reported_device;
  const bool device_memory = phys->on_device();
  uint64_t handle = table.insert(phys);
  if (handle == 0) return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "too many live physical memory handles");
  {
    std::lock_guard<std::mutex> lock(mu_);
    imports_[{token, physical_device}] = handle;
  }
  if (device_memory && exporter_device != physical_device) {
    // The vendor runtime opens peer access both ways before importing onto another device.
    rt.enable_peer_pair(exporter_device, physical_device);
  }
  return handle;
}

void ShareService::answer(int conn, const drv::PeerInfo& peer) {
  Request req{};
  int stray_fd = -1;
  // Called when the connection is readable: the request is already there.
  int n = transport_->recv(conn, &req, sizeof req, &stray_fd, kPollMs);
  if (stray_fd >= 0) transport_->close(stray_fd);
  if (n != static_cast<int>(sizeof req) || req.magic != kMagic) return;  // not an importer
  // Only the two kinds this library sends; anything else was answered as an import before.
  if (req.kind != kImport && req.kind != kProbe) return;
  Reply rep{};
  rep.magic = kMagic;
  std::shared_ptr<PhysicalAllocation> phys;  // keeps the memory alive while it is sent
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = exports_.find(ShareToken::unpack(req.token).share_id);
    if (it == exports_.end() || it->second.token != req.token) {
      rep.code = ACL_ERROR_RT_INVALID_HANDLE;
    } else if (req.kind == kProbe) {
      rep.code = 0;  // the token is live here; nothing is sent
    } else {
      const Export& e = it->second;
      if (e.validate_pids) {
        auto w = e.whitelist.find(peer.pid);
        // A pid listed before the importer started belongs to an earlier process (pid reuse).
        if (w == e.whitelist.end() || peer.start_time == 0 || peer.start_time > w->second) {
          rep.code = ACL_ERROR_RT_DRV_INTERNAL_ERROR;
          denied_.fetch_add(1);
          ACLVMM_LOG_WARN("DRV", "refused import of token 0x{:x} by pid {}: not whitelisted",
                          req.token, peer.pid);
        }
      }
      if (rep.code == 0 && peer.pid == getpid() && e.phys->on_device() &&
          e.physical_device == req.device) {
        rep.code = ACL_ERROR_RT_DRV_INTERNAL_ERROR;
      }
      if (rep.code == 0) {
        phys = e.phys;
        rep.size = phys->size;
        rep.side = static_cast<uint32_t>(phys->side);
        rep.device = e.physical_device;
        // Importers see the page size the memory really has: APP "normal" pages are huge.
        rep.page_type = phys->page_type == kNormalPage ? kHugePage : phys->page_type;
        rep.mem_type = phys->mem_type;
      }
    }
  }
  transport_->send(conn, &rep, sizeof rep, phys ? phys->memory->fd() : -1);
}

void ShareService::serve() {
  // Accepted connections wait here until their request arrives, so a client that connects and
  // stays silent delays nobody: it is dropped when its deadline passes.
  struct Pending {
    int fd;
    drv::PeerInfo peer;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Pending> pending;
  std::vector<int> fds;
  std::unique_ptr<bool[]> ready;
  while (!stop_.load()) {
    fds.clear();
    size_t listeners = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : retired_) transport_->close(fd);
      retired_.clear();
      for (const auto& [id, e] : exports_) fds.push_back(e.listen_fd);
      listeners = fds.size();
    }
    for (const Pending& p : pending) fds.push_back(p.fd);
    if (fds.empty()) {
      // Nothing to serve until the next export: sleep instead of spinning on an empty poll.
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
      continue;
    }
    ready.reset(new bool[fds.size()]());
    int n = transport_->poll(fds.data(), ready.get(), fds.size(), kPollMs);
    const auto now = std::chrono::steady_clock::now();
    std::vector<Pending> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      const Pending& p = pending[i];
      if (n > 0 && ready[listeners + i]) {
        answer(p.fd, p.peer);
        transport_->close(p.fd);
      } else if (now >= p.deadline) {
        transport_->close(p.fd);
      } else {
        still.push_back(p);
      }
    }
    pending.swap(still);
    for (size_t i = 0; n > 0 && i < listeners; ++i) {
      if (!ready[i]) continue;
      Pending p;
      if (transport_->accept(fds[i], &p.fd, &p.peer) != 0) continue;
      p.deadline = now + std::chrono::milliseconds(kServeTimeoutMs);
      pending.push_back(p);
    }
  }
  for (const Pending& p : pending) transport_->close(p.fd);
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
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = exports_.begin(); it != exports_.end();) {
    if (it->second.handle == handle) {
      remember_released(it->first);
      // The listener may be polling this descriptor: it closes retired ones itself.
      if (listener_ && listener_pid_ == getpid()) {
        retired_.push_back(it->second.listen_fd);
      } else {
        transport_->close(it->second.listen_fd);
      }
      it = exports_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = imports_.begin(); it != imports_.end();) {
    it = it->second == handle ? imports_.erase(it) : std::next(it);
  }
}

void ShareService::shutdown() {
  std::thread* listener = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener = listener_;
    listener_ = nullptr;
  }
  if (listener) {
    stop_.store(true);
    if (listener_pid_ == getpid()) {
      listener->join();
      delete listener;
    }
    // In a forked child the thread belongs to the parent: the object is left alone on purpose.
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : retired_) transport_->close(fd);
  retired_.clear();
  for (auto& [id, e] : exports_) transport_->close(e.listen_fd);
  exports_.clear();
  imports_.clear();
  stop_.store(false);
}

size_t ShareService::live_exports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exports_.size();
}

size_t ShareService::live_imports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return imports_.size();
}

}  // namespace aclvmm
