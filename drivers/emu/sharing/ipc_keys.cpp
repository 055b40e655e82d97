// EmuSharing: IPC memory by key (runtime-extra.md §3, drivers/sharing.h). What the vendor's
// kernel keeps per key is kept here by the exporting process: the range, the whitelist with its
// stamps, whether the memory still exists. A key is an endpoint named by its text; an importer
// connects to it, checks that the kernel reports the process the key names as the listener, and
// asks; the exporter answers from the kernel-reported credentials of the connection, as for tokens.
//
// The importer is sent the descriptor of the exporter's whole physical object and maps only the
// key's range of it (docs/sharing.md §14): a descriptor cannot be cut to a range, and what the
// range leaves out is memory of an allocation the exporter chose to share with that process.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/memfd_memory.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/host/process_facts.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {

using share::wire::KeyReply;
using share::wire::KeyRequest;

namespace {

constexpr int kKeyTimeoutMs = 5000;         // bound on every wait for an exporter
constexpr size_t kClosedRemembered = 4096;  // closed keys remembered for their 107017

Result fail(int errno_value) { return Result::from_errno(errno_value); }

PageType real_page_type(PageType t) { return t == PageType::kNormal ? PageType::kHuge : t; }

// The last key's counter and the process it counts for: a forked child (whose copy says another
// pid) starts again at 1. Atomics: backends of one process (tests open several) share them.
std::atomic<uint64_t> g_key_counter{0};
std::atomic<pid_t> g_key_counter_pid{0};

}  // namespace

uint64_t EmuSharing::next_key_counter() {
  const pid_t me = getpid();
  pid_t owner = g_key_counter_pid.load();
  // The first export of a (forked) process claims the counter; the losers of a race count on.
  if (owner != me && g_key_counter_pid.compare_exchange_strong(owner, me)) g_key_counter.store(0);
  return g_key_counter.fetch_add(1) + 1;
}
void EmuSharing::reset_key_counter() { g_key_counter_pid.store(0); }

Result EmuSharing::ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) {
  if (out == nullptr || !range.memory || range.size == 0) return fail(EINVAL);
  const EmuPhysical* object = EmuPhysical::from_id(range.memory);
  const PhysicalProperties& props = object->properties();
  std::lock_guard lock(mu_);
  // The kernel's EINVAL: an import, memory exported as a token, host memory, a range past it.
  if (props.imported || exported_.count(range.memory.value) ||
      props.location.kind != Location::Kind::kDevice || range.offset > props.size ||
      range.size > props.size - range.offset) {
    return fail(EINVAL);
  }
  if (tgid_ == 0) tgid_ = host::bare_tgid();
  KeyExport e;
  e.range = range;
  e.properties = props;
  e.bytes = object->shared_memory();
  // Other processes may hold its descriptor from now on: never recycled (os/memory_recycler.h).
  if (e.bytes) e.bytes->mark_shared();
  e.validate_pids = validate_pids;
  const uint64_t counter = next_key_counter();
  e.key = format_ipc_key(IpcKeyFields{static_cast<uint32_t>(tgid_), counter,
                                      static_cast<uint32_t>(props.location.id), 0});
  if (int rc = transport_.listen_key(e.key.text, &e.listen_fd)) return Result::from_raw(rc);
  if (Result r = ensure_listener_locked(); !r.ok()) {
    transport_.close(e.listen_fd);
    return r;
  }
  const int listen_fd = e.listen_fd;
  const IpcKey key = e.key;
  try {
    keys_.emplace(key, std::move(e));
  } catch (const std::bad_alloc&) {
    transport_.close(listen_fd);
    return fail(ENOMEM);
  }
  *out = key;
  transport_.wake(wake_fd_);
  return Result::success();
}

void EmuSharing::retire_key_locked(std::map<IpcKey, KeyExport>::iterator it) {
  if (thread_ && thread_pid_ == getpid() && !thread_exited_) {
    retired_.push_back(it->second.listen_fd);
    transport_.wake(wake_fd_);
  } else {
    transport_.close(it->second.listen_fd);
  }
  keys_.erase(it);
}

bool EmuSharing::served_by_key_exporter(int fd, const share::PeerInfo& server, uint32_t tgid) {
  if (server.pid <= 0) return false;
  if (static_cast<uint32_t>(server.pid) == tgid) return true;
  const int own = transport_.peer_pid_in_own_namespace(fd);
  return own > 0 && static_cast<uint32_t>(own) == tgid;
}

int EmuSharing::exchange_key(const IpcKey& key, uint32_t kind, int device, KeyReply* rep,
                             int* mem_fd) {
  if (mem_fd) *mem_fd = -1;
  IpcKeyFields fields;
  if (!parse_ipc_key(key.text, &fields)) return -ENOENT;
  int fd = -1;
  share::PeerInfo server;
  int rc = transport_.connect_key(key.text, kKeyTimeoutMs, &fd, &server);
  if (rc != 0) return rc;
  if (!served_by_key_exporter(fd, server, fields.tgid)) {
    char what[80];
    std::snprintf(what, sizeof what, "IPC key %.64s", key.text);
    return refuse_impostor(fd, server, what);
  }
  KeyRequest req{};
  req.magic = share::wire::kMagic;
  req.kind = kind;
  req.device = device;
  std::memcpy(req.key, key.text, kIpcKeyBytes);
  rc = ask(fd, &req, sizeof req, rep, sizeof *rep, mem_fd);
  transport_.close(fd);
  return rc;
}

bool EmuSharing::foreign_key_locked(const IpcKey& key) {
  if (tgid_ == 0) tgid_ = host::bare_tgid();
  IpcKeyFields fields;
  return parse_ipc_key(key.text, &fields) && fields.tgid != static_cast<uint32_t>(tgid_);
}

int EmuSharing::probe_key(const IpcKey& key) {
  KeyReply rep{};
  const int rc = exchange_key(key, share::wire::kKeyProbe, -1, &rep, nullptr);
  if (rc != static_cast<int>(sizeof rep) || rep.base.magic != share::wire::kMagic) {
    return share::wire::kUnknownToken;
  }
  return rep.base.code;
}

Result EmuSharing::ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) {
  if (pids == nullptr || count == 0) return fail(EINVAL);
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it != keys_.end()) {
      KeyExport& e = it->second;
      if (!e.validate_pids) return fail(EPERM);
      if (!e.bytes) return fail(EINVAL);  // its memory was freed: no live export
      const int32_t self = static_cast<int32_t>(getpid());
      std::vector<int32_t> add;
      try {
        for (uint32_t i = 0; i < count; ++i) {
          // The vendor skips empty entries and the exporter's own pid.
          if (pids[i] == 0 || pids[i] == tgid_ || pids[i] == self) continue;
          if (!e.whitelist.count(pids[i]) &&
              std::find(add.begin(), add.end(), pids[i]) == add.end()) {
            add.push_back(pids[i]);
          }
        }
        bool any = false;
        for (uint32_t i = 0; i < count && !any; ++i) {
          any = pids[i] != 0 && pids[i] != tgid_ && pids[i] != self;
        }
        if (!any) return fail(EINVAL);
        if (e.whitelist.size() + add.size() > kIpcWhitelistMax) return fail(EINVAL);
        const uint64_t stamp = transport_.share_clock();
        // Insert the new ones first (the only step that allocates), then stamp everyone.
        for (int32_t pid : add) e.whitelist.emplace(pid, 0);
        for (uint32_t i = 0; i < count; ++i) {
          auto w = e.whitelist.find(pids[i]);
          if (w != e.whitelist.end()) w->second = stamp;
        }
      } catch (const std::bad_alloc&) {
        for (int32_t pid : add) {
          auto w = e.whitelist.find(pid);
          if (w != e.whitelist.end() && w->second == 0) e.whitelist.erase(w);
        }
        return fail(ENOMEM);
      }
      return Result::success();
    }
    if (closed_served_.count(key)) return fail(EFAULT);
    if (!foreign_key_locked(key)) return fail(EINVAL);  // ours, but not live
  }
  // Another process's key: the vendor's answers before "not the exporter" come first.
  switch (probe_key(key)) {
    case share::wire::kNoWhitelist:
      return fail(EPERM);
    case 0:
      return fail(EACCES);
    default:
      return fail(EINVAL);
  }
}

Result EmuSharing::ipc_set_link(const IpcKey& key, uint32_t link) {
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it != keys_.end()) {
      if (!it->second.bytes) return fail(EINVAL);
      it->second.link = link;
      return Result::success();
    }
    if (!foreign_key_locked(key)) return fail(EINVAL);
  }
  const int code = probe_key(key);
  return fail(code == 0 || code == share::wire::kNoWhitelist ? EPERM : EINVAL);
}

Result EmuSharing::ipc_close_export(const IpcKey& key) {
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it != keys_.end()) {
      if (it->second.served > 0) {
        try {
          closed_served_.insert(key);
          closed_served_order_.push_back(key);
          if (closed_served_order_.size() > kClosedRemembered) {
            closed_served_.erase(closed_served_order_.front());
            closed_served_order_.pop_front();
          }
        } catch (const std::bad_alloc&) {
          // Only the 107017 of a later call is lost; the key still ends.
        }
      }
      retire_key_locked(it);
      return Result::success();
    }
    if (closed_served_.count(key)) return fail(EFAULT);
    if (!foreign_key_locked(key)) return fail(EINVAL);
  }
  const int code = probe_key(key);
  return fail(code == 0 || code == share::wire::kNoWhitelist ? EACCES : EINVAL);
}

void EmuSharing::ipc_revoke(const IpcKey& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it != keys_.end()) it->second.bytes.reset();
}

Result EmuSharing::ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) {
  if (out == nullptr || device < 0 || device >= device_count_) return fail(EINVAL);
  IpcKeyFields fields;
  if (!parse_ipc_key(key.text, &fields)) return fail(EINVAL);
  {
    std::lock_guard lock(mu_);
    if (tgid_ == 0) tgid_ = host::bare_tgid();
    if (fields.tgid == static_cast<uint32_t>(tgid_)) {
      // Our own key: the exporter is never on its own whitelist; a no-whitelist key gives a
      // second address for the same bytes.
      auto it = keys_.find(key);
      if (it == keys_.end() || !it->second.bytes) return fail(EINVAL);
      KeyExport& e = it->second;
      if (e.validate_pids) {
        share::counters().denied.fetch_add(1);
        return fail(EACCES);
      }
      const Location where = e.properties.location;
      if (Result r =
              share::adopt_object(e.properties, e.bytes, where.id, device, physical_, &out->memory);
          !r.ok()) {
        return r;
      }
      out->offset = e.range.offset;
      out->size = e.range.size;
      out->page_size = e.range.page_size;
      // Not counted as served: the core closes its own imports before it can close the key, so
      // an import of this process never holds a key its exporter closed.
      return Result::success();
    }
  }
  KeyReply rep{};
  int mem_fd = -1;
  int rc = exchange_key(key, share::wire::kKeyOpen, device, &rep, &mem_fd);
  const share::ReceivedFd received{transport_, &mem_fd};
  if (rc == -ETIMEDOUT) return fail(ETIMEDOUT);
  // Nobody (or not the exporter) serves the key, or the exporter went mid-handshake.
  if (rc < 0 || rc == 0) return fail(EINVAL);
  const char* defect = rc != static_cast<int>(sizeof rep) || rep.base.magic != share::wire::kMagic
                           ? "not a reply"
                           : share::wire::reply_defect(rep.base, device_count_, 4096);
  if (defect == nullptr) defect = share::wire::key_reply_defect(rep);
  if (defect == nullptr && rep.base.code == 0 &&
      (mem_fd < 0 || rep.base.side != share::wire::kSideDevice)) {
    defect = "no device memory attached";
  }
  char what[80];
  std::snprintf(what, sizeof what, "IPC key %.64s", key.text);
  if (defect != nullptr) return refuse_reply(what, defect);
  if (rep.base.code == share::wire::kRefused) return fail(EACCES);
  if (rep.base.code != 0) return fail(EINVAL);
  if (Result r = take_memory(rep.base, &mem_fd, what, device, &out->memory); !r.ok()) return r;
  out->offset = rep.offset;
  out->size = rep.range_size;
  out->page_size = rep.page_size;
  return Result::success();
}

void EmuSharing::answer_key(int conn, const share::PeerInfo& peer, const KeyRequest& req) {
  KeyReply rep{};
  rep.base.magic = share::wire::kMagic;
  std::shared_ptr<os::PhysicalMemory> bytes;
  char refusal[200] = "";
  IpcKey key;
  std::memcpy(key.text, req.key, kIpcKeyLength);
  key.text[kIpcKeyLength] = '\0';
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) {
      rep.base.code = share::wire::kUnknownToken;
    } else if (req.kind == share::wire::kKeyProbe) {
      rep.base.code = it->second.validate_pids ? 0 : share::wire::kNoWhitelist;
    } else if (!it->second.bytes) {
      rep.base.code = share::wire::kUnknownToken;  // the memory was freed
    } else {
      KeyExport& e = it->second;
      if (e.validate_pids) {
        auto w = e.whitelist.find(peer.pid);
        if (w == e.whitelist.end() || peer.start_time == 0 || peer.start_time > w->second) {
          rep.base.code = share::wire::kRefused;
          share::counters().denied.fetch_add(1);
          std::snprintf(refusal, sizeof refusal,
                        "refused import of IPC key %.64s by pid %d (uid %u): not whitelisted",
                        key.text, peer.pid, peer.uid);
        }
      } else if (!e.importers.count(peer.pid)) {
        // A no-whitelist key's importers fill the same list the whitelist would.
        bool full = e.importers.size() >= kIpcWhitelistMax;
        if (!full) {
          try {
            e.importers.insert(peer.pid);
          } catch (const std::bad_alloc&) {
            full = true;
          }
        }
        if (full) {
          rep.base.code = share::wire::kRefused;
          share::counters().denied.fetch_add(1);
        }
      }
      if (rep.base.code == 0) {
        bytes = e.bytes;
        rep.base.size = e.properties.size;
        rep.base.side = share::wire::kSideDevice;
        rep.base.device = e.properties.location.id;
        rep.base.page_type = static_cast<uint32_t>(real_page_type(e.properties.page_type));
        rep.base.mem_type = static_cast<uint32_t>(e.properties.mem_type);
        rep.offset = e.range.offset;
        rep.range_size = e.range.size;
        rep.page_size = e.range.page_size;
        ++e.served;
      }
    }
  }
  if (refusal[0] != '\0') listener_.log(Severity::kWarning, "DRV", refusal);
  (void)transport_.send(conn, &rep, sizeof rep, bytes ? bytes->fd() : -1);
}

}  // namespace aclvmm::dev::emu
