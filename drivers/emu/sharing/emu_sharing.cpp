// EmuSharing: exports, whitelists, fork and statistics (the importer is in importer.cpp, the
// listener in listener.cpp).
#include "drivers/emu/sharing/emu_sharing.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <system_error>
#include <utility>

#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/token.h"

namespace aclvmm::dev::emu {

using share::TokenFields;

namespace {

constexpr size_t kReleasedMemory = 4096;  // released share ids remembered for set-pid

Result fail(int errno_value) { return Result::from_errno(errno_value); }

}  // namespace

EmuSharing::EmuSharing(BackendListener& listener, share::ShareTransport& transport,
                       int32_t device_count, std::vector<int32_t> user_ids, int32_t server_id,
                       std::vector<fabric::PodAddress> pod)
    : listener_(listener),
      gate_(listener),
      transport_(transport, listener),
      device_count_(device_count),
      user_ids_(std::move(user_ids)),
      server_id_(server_id),
      pod_configured_(!pod.empty()) {
  if (pod_configured_)
    cross_host_ = fabric::CrossHost::create(std::move(pod), server_id, *this, listener);
}

EmuSharing::~EmuSharing() { shutdown(); }

uint32_t EmuSharing::user_id(DeviceIndex device) const {
  for (size_t i = 0; i < user_ids_.size(); ++i) {
    if (user_ids_[i] == device) return static_cast<uint32_t>(i);
  }
  return static_cast<uint32_t>(device);
}

int EmuSharing::take_share_id_locked(uint32_t* out) {
  const pid_t me = getpid();
  if (!serial_seeded_) {
    // A random start makes a released token unlikely to come back soon, in this process or in
    // a later one with the same pid.
    next_serial_ = transport_.random_u32();
    serial_seeded_ = true;
  }
  for (uint32_t tried = 0; tried < share::kSerials;) {
    const uint32_t serial = next_serial_++;
    ++tried;
    const uint32_t id = share::make_share_id(static_cast<uint32_t>(me), serial);
    if (id == 0 || exports_.count(id)) continue;
    const uint32_t group = share::endpoint_of(id);
    auto ep = endpoints_.find(group);
    if (ep == endpoints_.end()) {
      int fd = -1;
      const int rc = transport_.listen(group, &fd);
      if (rc == -EADDRINUSE) {
        // Held by another process (a pid of another namespace with the same low bits, or anyone
        // who bound the free name), or by a retired endpoint of ours the listener has not closed
        // yet: the whole group is somebody else's; go on with the next.
        const uint32_t skipped = share::kGroupSize - 1 - serial % share::kGroupSize;
        next_serial_ += skipped;
        tried += skipped;
        continue;
      }
      if (rc != 0) return rc;
      try {
        ep = endpoints_.emplace(group, Endpoint{fd, 0}).first;
      } catch (const std::bad_alloc&) {
        transport_.close(fd);  // the listener has not seen it: it polls endpoints_ under mu_
        return -ENOMEM;
      }
    }
    ++ep->second.exports;
    if (group != current_endpoint_) {
      // New ids come from this group now; the one before goes once it serves nothing.
      auto before = endpoints_.find(current_endpoint_);
      current_endpoint_ = group;
      if (before != endpoints_.end() && before->second.exports == 0) {
        retire_endpoint_locked(before);
      }
    }
    *out = id;
    return 0;
  }
  return -EADDRINUSE;
}

void EmuSharing::put_share_id_locked(uint32_t id, bool keep_current) {
  auto ep = endpoints_.find(share::endpoint_of(id));
  if (ep == endpoints_.end() || --ep->second.exports > 0) return;
  // The group new ids come from stays (an export/free cycle then reuses it) while the listener
  // runs to answer on it; released tokens of the group are told "unknown" there.
  if (keep_current && ep->first == current_endpoint_) return;
  retire_endpoint_locked(ep);
}

void EmuSharing::retire_endpoint_locked(std::map<uint32_t, Endpoint>::iterator it) {
  // The listener may be polling this descriptor: it closes retired ones itself.
  if (thread_ && thread_pid_ == getpid() && !thread_exited_) {
    retired_.push_back(it->second.fd);  // reserved at export (see export_locked)
    transport_.wake(wake_fd_);
  } else {
    transport_.close(it->second.fd);
  }
  endpoints_.erase(it);
}

void EmuSharing::unlist_locked(int32_t pid) {
  auto l = listed_.find(pid);
  if (l != listed_.end() && --l->second.exports == 0) listed_.erase(l);
}

void EmuSharing::forget_export_locked(std::map<uint32_t, Export>::iterator it) {
  for (const auto& [pid, stamp] : it->second.whitelist) unlist_locked(pid);
  if (!it->second.validate_pids) --open_exports_;
  exported_.erase(it->second.memory.value);
  put_share_id_locked(it->first, true);
  exports_.erase(it);
  // The listener decides when it has nothing left to serve (and lingers, then ends, closing the
  // endpoint kept for the next export): it must look again.
  if (thread_ && thread_pid_ == getpid() && !thread_exited_) transport_.wake(wake_fd_);
}

Result EmuSharing::export_locked(PhysicalId memory, uint64_t* token) {
  if (!memory) return fail(EINVAL);
  const EmuPhysical* object = EmuPhysical::from_id(memory);
  // The kernel's EINVAL for an import or an object exported already.
  if (object->properties().imported || exported_.count(memory.value)) return fail(EINVAL);
  Export e;
  e.memory = memory;
  e.properties = object->properties();
  e.bytes = object->shared_memory();
  // Other processes may hold its descriptor from now on: never recycled (os/memory_recycler.h).
  if (e.bytes) e.bytes->mark_shared();
  uint32_t id = 0;
  try {
    // Room for the endpoint's descriptor in retired_ when it is retired later, so that retiring
    // never allocates; and for the records, so that nothing below can fail half-way.
    retired_.reserve(retired_.size() + endpoints_.size() + 1);
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  if (int rc = take_share_id_locked(&id)) return Result::from_raw(rc);
  if (Result r = ensure_listener_locked(); !r.ok()) {
    put_share_id_locked(id, false);
    return r;
  }
  e.share_id = id;
  const Location where = e.properties.location;
  const uint32_t device =
      where.kind == Location::Kind::kDevice ? user_id(where.id) : 0;  // host memory: 0
  e.token = TokenFields{e.share_id, device}.pack();
  *token = e.token;
  try {
    exported_.emplace(memory.value, id);
    try {
      exports_.emplace(id, std::move(e));
    } catch (const std::bad_alloc&) {
      exported_.erase(memory.value);
      throw;
    }
  } catch (const std::bad_alloc&) {
    put_share_id_locked(id, false);
    return fail(ENOMEM);
  }
  released_.erase(id);  // the id is live again
  // Importable now: connections queue on the endpoint until the woken listener polls it.
  transport_.wake(wake_fd_);
  return Result::success();
}

Result EmuSharing::export_memory(PhysicalId memory, ShareToken* out) {
  if (out == nullptr) return fail(EINVAL);
  std::lock_guard lock(mu_);
  return export_locked(memory, &out->value);
}

Result EmuSharing::export_fabric(PhysicalId memory, FabricToken* inout) {
  if (inout == nullptr) return fail(EINVAL);
  share::FabricFields f;
  {
    std::lock_guard lock(mu_);
    uint64_t token = 0;
    if (Result r = export_locked(memory, &token); !r.ok()) return r;
    const Location where = EmuPhysical::from_id(memory)->properties().location;
    f.token = TokenFields::unpack(token);
    f.server_id = static_cast<uint32_t>(server_id_);
    f.host = where.kind != Location::Kind::kDevice;
    share::write_fabric(inout->bytes, f, f.host ? 0 : static_cast<uint32_t>(where.id));
  }
  // Device memory may be imported by other servers: this process serves the pod's control port
  // from now on. Without it the export still works on this server (the failure is logged).
  if (!f.host && cross_host_ != nullptr) (void)cross_host_->serve();
  return Result::success();
}

Result EmuSharing::token_of_fabric(const FabricToken& fabric, ShareToken* out) {
  if (out == nullptr) return fail(EINVAL);
  share::FabricFields f;
  if (!share::read_fabric(fabric.bytes, &f)) return fail(EINVAL);
  out->value = f.token.pack();
  return Result::success();
}

Result EmuSharing::ensure_listener_locked() {
  if (thread_ && thread_pid_ == getpid() && !thread_exited_) return Result::success();
  if (thread_ && thread_pid_ == getpid()) {
    // It decided to end (nothing to serve) and touches nothing shared any more: reap it.
    thread_->join();
    delete thread_;
  }
  thread_ = nullptr;
  int wake = -1;
  if (int rc = transport_.open_wake(&wake)) return Result::from_raw(rc);
  wake_fd_ = wake;
  stop_ = false;
  thread_exited_ = false;
  {
    std::lock_guard started(started_mu_);
    listener_started_ = false;
  }
  try {
    thread_ = new std::thread([this] { serve(); });
  } catch (const std::system_error&) {
    transport_.close(wake_fd_);
    wake_fd_ = -1;
    return fail(ENOSPC);  // no thread: the driver's resources are exhausted
  } catch (const std::bad_alloc&) {
    transport_.close(wake_fd_);
    wake_fd_ = -1;
    return fail(ENOMEM);
  }
  thread_pid_ = getpid();
  thread_uid_ = geteuid();
  // The call that made the listener returns once the thread has set itself up (serve() signals
  // before it takes mu_): a thread still allocating its start-up state when the application forks
  // right after an export leaves a child whose allocator may be locked for good (glibc's is
  // fork-safe, ASan's is not).
  std::unique_lock started(started_mu_);
  started_cv_.wait(started, [this] { return listener_started_; });
  return Result::success();
}

EmuSharing::Export* EmuSharing::own_export_locked(ShareToken token) {
  auto it = exports_.find(TokenFields::unpack(token.value).share_id);
  return it != exports_.end() && it->second.token == token.value ? &it->second : nullptr;
}

Result EmuSharing::disable_validation(ShareToken token) {
  std::lock_guard lock(mu_);
  Export* e = own_export_locked(token);
  // Only the exporter, and only before any set_pids.
  if (e == nullptr || !e->whitelist.empty()) return fail(EPERM);
  if (e->validate_pids) ++open_exports_;
  e->validate_pids = false;
  return Result::success();
}

Result EmuSharing::set_pids(ShareToken token, const int32_t* pids, uint32_t count) {
  const TokenFields t = TokenFields::unpack(token.value);
  if (!TokenFields::well_formed(token.value) || static_cast<int>(t.device) >= kMaxDevices ||
      static_cast<int>(t.device) >= device_count_) {
    return fail(EFAULT);  // no token this driver made (bad device field)
  }
  if (pids == nullptr && count > 0) return fail(EINVAL);
  {
    std::lock_guard lock(mu_);
    if (Export* e = own_export_locked(token)) {
      if (!e->validate_pids) return fail(EPERM);
      const uint64_t stamp = transport_.share_clock();
      // The previous stamp of every pid touched (0: it was not listed), to undo a partial update.
      std::vector<std::pair<int32_t, uint64_t>> before;
      try {
        before.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
          if (pids[i] == 0) continue;  // the vendor skips empty entries
          auto w = e->whitelist.find(pids[i]);
          before.emplace_back(pids[i], w == e->whitelist.end() ? 0 : w->second);
          e->whitelist[pids[i]] = stamp;
        }
      } catch (const std::bad_alloc&) {
        for (auto r = before.rbegin(); r != before.rend(); ++r) {
          if (r->second == 0) {
            e->whitelist.erase(r->first);
          } else {
            e->whitelist[r->first] = r->second;  // present already: no allocation
          }
        }
        return fail(ENOMEM);
      }
      if (before.empty()) return fail(EINVAL);  // every pid in the list is 0
      // The listener's index of listed pids (could_admit_locked). A newest stamp raised for a
      // call that then fails stays raised: the index only ever admits too much, never too little.
      size_t indexed = 0;
      try {
        for (; indexed < before.size(); ++indexed) {
          Listed& l = listed_[before[indexed].first];
          if (before[indexed].second == 0) ++l.exports;  // newly listed by this export
          l.newest = std::max(l.newest, stamp);
        }
      } catch (const std::bad_alloc&) {
        for (size_t k = 0; k < indexed; ++k) {
          if (before[k].second == 0) unlist_locked(before[k].first);
        }
        for (auto r = before.rbegin(); r != before.rend(); ++r) {
          if (r->second == 0) {
            e->whitelist.erase(r->first);
          } else {
            e->whitelist[r->first] = r->second;
          }
        }
        return fail(ENOMEM);
      }
      return Result::success();
    }
    // Our own endpoint may still be open for a moment after the release.
    if (released_.count(t.share_id)) return fail(EFAULT);
  }
  // Another process's token: only its exporter may list pids (the kernel's EACCES), an unknown
  // one is EFAULT.
  share::wire::Reply rep{};
  Link link;
  const int rc = exchange(token.value, share::wire::kProbe, -1, &rep, nullptr, &link);
  const bool reply = rc == static_cast<int>(sizeof rep) && rep.magic == share::wire::kMagic;
  if (reply && rep.code == 0) {
    put_link(link);
  } else {
    close_link(link);
  }
  return fail(reply && rep.code == 0 ? EACCES : EFAULT);
}

void EmuSharing::remember_released(uint32_t share_id) {
  released_.insert(share_id);
  released_order_.push_back(share_id);
  if (released_order_.size() > kReleasedMemory) {
    released_.erase(released_order_.front());
    released_order_.pop_front();
  }
}

void EmuSharing::memory_released(PhysicalId memory) {
  std::lock_guard lock(mu_);
  // Keys over the object stay until closed; imports of them fail from now on.
  for (auto& [key, e] : keys_) {
    if (e.range.memory == memory) e.bytes.reset();
  }
  auto known = exported_.find(memory.value);
  if (known == exported_.end()) return;
  auto it = exports_.find(known->second);
  if (it == exports_.end()) {
    exported_.erase(known);
    return;
  }
  remember_released(it->first);
  forget_export_locked(it);
}

void EmuSharing::close_all_locked() {
  for (int fd : retired_) transport_.close(fd);
  retired_.clear();
  for (auto& [group, ep] : endpoints_) transport_.close(ep.fd);
  endpoints_.clear();
  exports_.clear();
  exported_.clear();
  listed_.clear();
  open_exports_ = 0;
  for (auto& [key, e] : keys_) transport_.close(e.listen_fd);
  keys_.clear();
  closed_served_.clear();
  closed_served_order_.clear();
  while (!pending_.empty()) drop_pending_locked(pending_.end() - 1);
  for (const Link& link : links_) close_fds(link);
  links_.clear();
  share::counters().importer_links.store(0, std::memory_order_relaxed);
  if (wake_fd_ >= 0) transport_.close(wake_fd_);
  wake_fd_ = -1;
  thread_exited_ = false;
  stop_ = false;
}

void EmuSharing::shutdown() {
  // Its thread asks this object's records: it ends first.
  cross_host_.reset();
  std::thread* thread = nullptr;
  {
    std::lock_guard lock(mu_);
    if (thread_pid_ == getpid()) thread = thread_;
    thread_ = nullptr;
    stop_ = true;
    if (thread && !thread_exited_) transport_.wake(wake_fd_);
  }
  if (thread) {
    thread->join();
    delete thread;
  }
  std::lock_guard lock(mu_);
  // The listener closed its connections and wake object on its way out; what is left are the
  // endpoints.
  close_all_locked();
}

// A forked child is not the exporter: it must not keep the parent's endpoints open (importers
// would queue on them forever), hold the parent's connections, nor believe it serves the
// parent's tokens. The lock is held across fork so the child never inherits it mid-update.
void EmuSharing::prepare_fork() { mu_.lock(); }
void EmuSharing::after_fork_parent() { mu_.unlock(); }

// One thread, the lock held: only closes and forgets. The parent's listener thread object is
// left alone on purpose; the thread does not exist here.
void EmuSharing::after_fork_child() {
  close_all_locked();
  // The copies of connections other threads of the parent were using: theirs, not the child's.
  for (int fd : busy_) transport_.close(fd);
  busy_.clear();
  if (cross_host_ != nullptr) cross_host_->forget_after_fork();
  thread_ = nullptr;
  serial_seeded_ = false;  // the child's ids carry its own pid
  reset_key_counter();     // and its keys its own tgid and counter
  tgid_ = 0;
  mu_.unlock();
}

size_t EmuSharing::live_exports() const {
  std::lock_guard lock(mu_);
  return exports_.size();
}

void EmuSharing::visit_statistics(StatisticsVisitor& visitor) {
  const share::Counters& c = share::counters();
  visitor.counter("ipc", "imports_denied", c.denied.load());
  visitor.counter("ipc", "listener_wakeups", c.wakeups.load());
  visitor.counter("ipc", "listener_timeouts", c.poll_timeouts.load());
  visitor.counter("ipc", "connections_dropped", c.dropped.load());
  visitor.counter("ipc", "impostors_refused", c.impostors.load());
  visitor.counter("ipc", "importer_links", c.importer_links.load());
  visitor.counter("ipc", "exporter_links", c.exporter_links.load());
  visitor.counter("ipc", "links_reused", c.reused.load());
  visitor.counter("ipc", "replies_refused", c.bad_replies.load());
  visitor.counter("ipc", "fabric_holders", c.fabric_holders.load());
  visitor.counter("ipc", "fabric_served", c.fabric_served.load());
  visitor.counter("ipc", "fabric_imports", c.fabric_imports.load());
}

}  // namespace aclvmm::dev::emu
