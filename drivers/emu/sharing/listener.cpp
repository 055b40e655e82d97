// EmuSharing's listener: one thread that answers importers on every endpoint of the process.
//
// It sleeps in poll until something happens: a connection or a request on an endpoint, the
// nearest deadline of a connection still waiting for its request, or its wake object (a new or a
// retired endpoint, shutdown). Nothing wakes it periodically. Other processes decide how many
// connections they open, so what they can make it hold is capped: per uid and in total, and
// tighter for peers that no live export could admit, which are answered only if their request
// comes promptly.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "drivers/emu/fabric/control_wire.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/emu/sharing/token.h"

namespace aclvmm::dev::emu {

using Clock = std::chrono::steady_clock;
using share::wire::Reply;
using share::wire::Request;

namespace {

// How long an accepted connection may wait for its request: an importer sends it right after
// connecting, so only a stuck or hostile client ever waits this long.
constexpr auto kRequestDeadline = std::chrono::milliseconds(2000);
// The same for a peer no live export could admit: it is told so (507899, or "live" to a set-pid
// probe) if it asks at once, and costs the exporter almost nothing if it does not.
constexpr auto kUnlistedDeadline = std::chrono::milliseconds(250);
// Connections waiting for their request, per uid and in all (docs/sharing.md §9).
constexpr size_t kWaitingPerUid = 8;
constexpr size_t kUnlistedWaitingPerUid = 2;
constexpr size_t kWaitingTotal = 64;
// Connections taken from one endpoint per wake-up, so that a flood on one endpoint cannot keep
// the others waiting.
constexpr int kAcceptBurst = 32;
// After accept fails for want of descriptors (they are the application's to free), the listener
// leaves the connections queued in the kernel and looks again this much later, instead of
// spinning on an endpoint that stays readable.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Connections kept after their answer for the importer's next request, per uid and in all: an
// importer keeps one per endpoint it imports from (more while it imports concurrently), so 64
// importers of a process with 1 000 exports hold 256. Other users get fewer: a kept connection
// has no deadline. Over a cap the least recently used goes; its importer connects afresh next
// time.
constexpr size_t kKeptPerUid = 512;      // importers of this process's own uid
constexpr size_t kKeptPerOtherUid = 64;  // of each other uid
constexpr size_t kKeptTotal = 1024;
// Kept connections whose two descriptors stay in the application's range (hard limit == soft
// limit, or placement off) take at most a sixteenth of that range, and at least this many.
constexpr size_t kKeptLowAtLeast = 8;
// A failing poll (only ever seen with failure injection) is retried after this.
constexpr auto kPollRetry = std::chrono::milliseconds(10);
// How long the listener outlives the last export and connection: export/free cycles then reuse it.
constexpr auto kLinger = std::chrono::milliseconds(200);

int ms_until(Clock::time_point t, Clock::time_point now) {
  if (t <= now) return 0;
  // Rounded up: waking a little early would only find the deadline not yet passed.
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t - now).count();
  return static_cast<int>(std::min<int64_t>((us + 999) / 1000, 1 << 30));
}

}  // namespace

bool EmuSharing::could_admit_locked(const share::PeerInfo& peer) const {
  // thread_pid_: this process (only its listener asks), without a system call.
  if (peer.pid == thread_pid_) return true;  // a probe of our own, racing a release
  if (open_exports_ > 0) return true;
  // The index of the exports' whitelists: a lookup, however many exports there are.
  auto l = listed_.find(peer.pid);
  if (l != listed_.end() && peer.start_time != 0 && peer.start_time <= l->second.newest) {
    return true;
  }
  for (const auto& [key, e] : keys_) {
    if (!e.validate_pids) return true;
    auto w = e.whitelist.find(peer.pid);
    if (w != e.whitelist.end() && peer.start_time != 0 && peer.start_time <= w->second) return true;
  }
  return false;
}

void EmuSharing::drop_pending_locked(std::vector<PendingPeer>::iterator it) {
  if (it->kept) share::counters().exporter_links.fetch_sub(1, std::memory_order_relaxed);
  transport_.close(it->fd);
  transport_.close(it->pidfd);
  pending_.erase(it);
}

void EmuSharing::close_pending_locked(int fd) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->fd == fd) {
      drop_pending_locked(it);
      return;
    }
  }
}

void EmuSharing::cap_kept_locked(unsigned uid, bool low) {
  size_t total = 0, lows = 0;
  std::map<unsigned, size_t> per_uid, low_per_uid;
  for (const PendingPeer& q : pending_) {
    if (!q.kept) continue;
    ++total;
    ++per_uid[q.peer.uid];
    if (q.low) ++lows, ++low_per_uid[q.peer.uid];
  }
  // Over a shared cap, the uid holding the most gives one up, so that no uid can crowd out others.
  auto greediest = [&](const std::map<unsigned, size_t>& held) {
    unsigned who = uid;
    size_t most = 0;
    for (const auto& [u, n] : held) {
      if (n > most) most = n, who = u;
    }
    return who;
  };
  const size_t uid_cap = uid == thread_uid_ ? kKeptPerUid : kKeptPerOtherUid;
  bool only_low = false;
  unsigned from = uid;
  if (low && lows > std::max<uint64_t>(kKeptLowAtLeast, transport_.descriptor_limit() / 16)) {
    only_low = true;  // the application's own descriptors come first
    from = greediest(low_per_uid);
  } else if (per_uid[uid] <= uid_cap) {
    if (total <= kKeptTotal) return;
    from = greediest(per_uid);
  }
  auto victim = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->kept && it->peer.uid == from && (!only_low || it->low) &&
        (victim == pending_.end() || it->used < victim->used)) {
      victim = it;
    }
  }
  // Idle: nothing was asked on it, so closing it leaves nothing unanswered.
  if (victim != pending_.end()) drop_pending_locked(victim);
}

void EmuSharing::after_answer(int fd) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [fd](const PendingPeer& q) { return q.fd == fd; });
  if (it == pending_.end()) return;
  if (it->kept) {
    it->used = ++kept_clock_;
    return;
  }
  // Kept only for a peer some export could admit, and only pinned: its credentials are then
  // known to be its process's for as long as the connection is used (transport.h pin_peer). Under
  // mu_, so that a fork cannot copy a descriptor in the middle of its move.
  int pidfd = -1;
  if (!could_admit_locked(it->peer) || transport_.pin_peer(fd, &pidfd) != 0) {
    drop_pending_locked(it);
    return;
  }
  bool above = false;
  it->fd = transport_.place_kept(fd, &above);
  it->pidfd = pidfd;
  it->kept = true;
  it->low = !above;
  it->waiting = false;
  it->used = ++kept_clock_;
  share::counters().exporter_links.fetch_add(1, std::memory_order_relaxed);
  cap_kept_locked(it->peer.uid, it->low);
}

void EmuSharing::hold_locked(PendingPeer p) {
  const size_t class_cap = p.admissible ? kWaitingPerUid : kUnlistedWaitingPerUid;
  size_t same_class = 0, total = 0;
  std::map<unsigned, size_t> per_uid;
  for (const PendingPeer& q : pending_) {
    if (!q.waiting) continue;
    ++total;
    ++per_uid[q.peer.uid];
    if (q.peer.uid == p.peer.uid && q.admissible == p.admissible) ++same_class;
  }
  // Over a cap, the oldest waiting connection goes: of the newcomer's uid and kind, else (the
  // total) of the uid holding the most. A process can crowd out only its own uid's connections,
  // and an importer whose request follows its connection at once is never among them.
  auto victim = pending_.end();
  if (same_class >= class_cap) {
    victim = std::find_if(pending_.begin(), pending_.end(), [&](const PendingPeer& q) {
      return q.waiting && q.peer.uid == p.peer.uid && q.admissible == p.admissible;
    });
  } else if (total >= kWaitingTotal) {
    unsigned greedy = p.peer.uid;
    size_t most = 0;
    for (const auto& [uid, n] : per_uid) {
      if (n > most) most = n, greedy = uid;
    }
    victim = std::find_if(pending_.begin(), pending_.end(),
                          [&](const PendingPeer& q) { return q.waiting && q.peer.uid == greedy; });
  }
  if (victim != pending_.end()) {
    drop_pending_locked(victim);
    share::counters().dropped.fetch_add(1);
  }
  p.waiting = true;
  for (PendingPeer& q : pending_) {
    if (q.fd == p.fd) q = p;  // it was registered at accept (see accept_from)
  }
}

EmuSharing::Served EmuSharing::serve_request(const PendingPeer& p) {
  // A token request or a key request, told apart by their sizes and kinds.
  union {
    Request token;
    share::wire::KeyRequest key;
    fabric::wire::Request fabric;  // with another server's importer's connection attached
  } req{};
  int stray_fd = -1;
  // Called when the connection is readable, or right after accept: do not wait.
  const int n = transport_.recv(p.fd, &req, sizeof req, &stray_fd, 0);
  if (n == static_cast<int>(sizeof req.fabric) && fabric::wire::well_formed(req.fabric) &&
      stray_fd >= 0 && !p.kept) {
    take_relayed(stray_fd, p.peer, req.fabric);
    return Served::kDone;
  }
  if (stray_fd >= 0) transport_.close(stray_fd);
  if (n == -ETIMEDOUT) return Served::kNotYet;
  if (n == static_cast<int>(sizeof req.token) && req.token.magic == share::wire::kMagic &&
      (req.token.kind == share::wire::kImport || req.token.kind == share::wire::kProbe)) {
    return answer(p, req.token) ? Served::kAnswered : Served::kDone;
  }
  if (n == static_cast<int>(sizeof req.key) && req.key.magic == share::wire::kMagic &&
      (req.key.kind == share::wire::kKeyOpen || req.key.kind == share::wire::kKeyProbe) &&
      !p.kept) {
    answer_key(p.fd, p.peer, req.key);
    return Served::kDone;
  }
  // Not an importer (wrong size, magic or kind, a hang-up): the connection is dropped unanswered.
  // A kept connection's importer hanging up is how such a connection normally ends.
  if (!(p.kept && n == 0)) share::counters().dropped.fetch_add(1);
  return Served::kDone;
}

bool EmuSharing::answer(const PendingPeer& p, const Request& req) {
  const share::PeerInfo& peer = p.peer;
  Reply rep{};
  rep.magic = share::wire::kMagic;
  std::shared_ptr<os::PhysicalMemory> bytes;  // keeps the memory alive while it is sent
  char refusal[160] = "";
  {
    std::lock_guard lock(mu_);
    const Export* e = own_export_locked(ShareToken{req.token});
    if (e == nullptr) {
      rep.code = share::wire::kUnknownToken;
    } else if (req.kind == share::wire::kProbe) {
      rep.code = 0;  // the token is live here; nothing is sent
    } else {
      if (e->validate_pids) {
        auto w = e->whitelist.find(peer.pid);
        // A kept connection speaks for its importer only while that process runs: after it
        // exits, its pid may name another process, listed later, and whoever holds the
        // connection now is not that one. A pid listed before the connection was known to run
        // (alive_at) was this very process's, so only later entries need the pin asked.
        if (w != e->whitelist.end() && p.kept && w->second >= peer.alive_at &&
            transport_.exited(p.pidfd)) {
          share::counters().dropped.fetch_add(1);
          return false;
        }
        // A pid listed before the importer started belongs to an earlier process (pid reuse).
        if (w == e->whitelist.end() || peer.start_time == 0 || peer.start_time > w->second) {
          rep.code = share::wire::kRefused;
          share::counters().denied.fetch_add(1);
          std::snprintf(refusal, sizeof refusal,
                        "refused import of token 0x%llx by pid %d (uid %u): not whitelisted",
                        static_cast<unsigned long long>(req.token), peer.pid, peer.uid);
        }
      }
      const Location where = e->properties.location;
      if (rep.code == 0 && peer.pid == thread_pid_ && where.kind == Location::Kind::kDevice &&
          where.id == req.device) {
        rep.code = share::wire::kRefused;
      }
      if (rep.code == 0) {
        bytes = e->bytes;
        rep.size = e->properties.size;
        rep.side = share::wire::side_of(where);
        rep.device = where.kind == Location::Kind::kDevice ? where.id : 0;  // host memory: 0
        // Importers see the page size the memory really has: APP "normal" pages are huge.
        const PageType page = e->properties.page_type;
        rep.page_type = static_cast<uint32_t>(page == PageType::kNormal ? PageType::kHuge : page);
        rep.mem_type = static_cast<uint32_t>(e->properties.mem_type);
      }
    }
  }
  // Logged without the lock: the listener's log takes locks of the core's.
  if (refusal[0] != '\0') listener_.log(Severity::kWarning, "DRV", refusal);
  // Kept after a grant only, as the importer keeps it (a refused importer has no business here
  // for now); a reply that could not be sent leaves the stream in doubt.
  const int sent = transport_.send(p.fd, &rep, sizeof rep, bytes ? bytes->fd() : -1);
  return sent == 0 && rep.code == 0;
}

bool EmuSharing::accept_from(int listen_fd) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    PendingPeer p;
    const int rc = transport_.accept(listen_fd, &p.fd, &p.peer);
    if (rc == -EAGAIN) return true;
    // EMFILE and the like: the queued connections wait in the kernel until there is room.
    if (rc != 0) return false;
    {
      // Registered before anything else so that a fork now closes it in the child.
      std::lock_guard lock(mu_);
      pending_.push_back(p);
    }
    // An importer sends its request right after connecting: it is usually here already.
    const Served served = serve_request(p);
    if (served == Served::kAnswered) {
      after_answer(p.fd);
      continue;
    }
    if (served == Served::kDone) {
      std::lock_guard lock(mu_);
      close_pending_locked(p.fd);
      continue;
    }
    std::lock_guard lock(mu_);
    p.admissible = could_admit_locked(p.peer);
    p.deadline = Clock::now() + (p.admissible ? kRequestDeadline : kUnlistedDeadline);
    hold_locked(p);
  }
  return true;
}

void EmuSharing::serve() {
  // Room for the usual sets from the start: the loop then allocates only when they grow.
  constexpr size_t kInitialSet = 64;
  std::vector<int> fds;
  fds.reserve(kInitialSet);
  std::unique_ptr<bool[]> ready(new bool[kInitialSet]);
  size_t ready_size = kInitialSet;
  {
    std::lock_guard started(started_mu_);
    listener_started_ = true;
  }
  started_cv_.notify_all();
  Clock::time_point accept_paused_until{};
  Clock::time_point idle_until{};
  bool idle = false;
  int wake = -1;
  for (;;) {
    size_t listeners = 0;
    int timeout_ms = -1;
    fds.clear();
    {
      std::lock_guard lock(mu_);
      for (int fd : retired_) transport_.close(fd);
      retired_.clear();
      const auto now = Clock::now();
      bool answering = false;  // a connection other than a kept one is open
      for (size_t i = 0; i < pending_.size();) {
        if (pending_[i].waiting && now >= pending_[i].deadline) {
          drop_pending_locked(pending_.begin() + static_cast<std::ptrdiff_t>(i));
          share::counters().dropped.fetch_add(1);
        } else {
          answering = answering || !pending_[i].kept;
          ++i;
        }
      }
      // Kept connections alone keep nothing alive: with no export left they serve nothing, and
      // their importers find the endpoints gone.
      const bool nothing = exports_.empty() && keys_.empty() && !answering;
      if (nothing && !idle) idle_until = now + kLinger;
      idle = nothing;
      if (stop_ || (idle && now >= idle_until)) {
        // Done: nothing of ours may stay open behind the thread, neither the connections nor the
        // endpoint kept for the next export (it serves no export).
        while (!pending_.empty()) drop_pending_locked(pending_.end() - 1);
        if (!stop_) {
          for (const auto& [group, ep] : endpoints_) transport_.close(ep.fd);
          endpoints_.clear();
        }
        transport_.close(wake_fd_);
        wake_fd_ = -1;
        thread_exited_ = true;
        return;
      }
      wake = wake_fd_;
      fds.push_back(wake);
      if (now >= accept_paused_until) {
        for (const auto& [group, ep] : endpoints_) fds.push_back(ep.fd);
        for (const auto& [key, e] : keys_) fds.push_back(e.listen_fd);
      } else {
        timeout_ms = ms_until(accept_paused_until, now);
      }
      listeners = fds.size() - 1;
      auto nearer = [&](Clock::time_point t) {
        const int ms = ms_until(t, now);
        if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = ms;
      };
      for (const PendingPeer& p : pending_) {
        fds.push_back(p.fd);
        if (p.waiting) nearer(p.deadline);
      }
      if (idle) nearer(idle_until);
    }
    if (fds.size() > ready_size) {
      ready.reset(new bool[fds.size()]);
      ready_size = fds.size();
    }
    const int n = transport_.poll(fds.data(), ready.get(), fds.size(), timeout_ms);
    share::counters().wakeups.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) share::counters().poll_timeouts.fetch_add(1, std::memory_order_relaxed);
    if (n < 0) {
      std::this_thread::sleep_for(kPollRetry);
      continue;
    }
    if (n == 0) continue;
    if (ready[0]) transport_.drain_wake(wake);
    // Requests (or hang-ups) on accepted connections. Only this thread changes pending_, so the
    // entries polled are still there.
    for (size_t i = 1 + listeners; i < fds.size(); ++i) {
      if (!ready[i]) continue;
      const int conn = fds[i];
      const auto p = std::find_if(pending_.begin(), pending_.end(),
                                  [conn](const PendingPeer& q) { return q.fd == conn; });
      if (p == pending_.end()) continue;
      const Served served = serve_request(*p);
      if (served == Served::kNotYet) continue;
      if (served == Served::kAnswered) {
        after_answer(conn);
        continue;
      }
      std::lock_guard lock(mu_);
      close_pending_locked(conn);
    }
    for (size_t i = 1; i <= listeners; ++i) {
      if (ready[i] && !accept_from(fds[i])) {
        accept_paused_until = Clock::now() + kAcceptPause;
        break;
      }
    }
  }
}

}  // namespace aclvmm::dev::emu
