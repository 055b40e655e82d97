// EmuSharing's importer side: the local shortcut (an own export onto another device), and the
// request to another process's listener, whose reply is believed only after every check.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <new>
#include <utility>

#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/memfd_memory.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/emu/sharing/token.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {

using share::TokenFields;
using share::wire::Reply;
using share::wire::Request;

namespace {

constexpr int kImportTimeoutMs = 5000;  // bound on every wait for an exporter
// Idle connections kept to exporters' endpoints: per endpoint (more than one only where imports
// from it ran concurrently), and in all (ACLVMM_SHARE_LINKS), the oldest closed first.
constexpr size_t kLinksPerEndpoint = 4;
constexpr long kDefaultLinks = 64;
constexpr long kMostLinks = 4096;

size_t link_cap() {
  static const size_t cap = [] {
    const char* v = std::getenv("ACLVMM_SHARE_LINKS");
    if (v == nullptr || *v == '\0') return static_cast<size_t>(kDefaultLinks);
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v, &end, 10);
    // Anything but a plain count keeps the default: a typo must not turn a feature off.
    if (errno != 0 || *end != '\0' || n < 0) return static_cast<size_t>(kDefaultLinks);
    return static_cast<size_t>(std::min(n, kMostLinks));
  }();
  return cap;
}

Result fail(int errno_value) { return Result::from_errno(errno_value); }

// Importers see the page size the memory really has: APP "normal" pages are huge.
PageType real_page_type(PageType t) { return t == PageType::kNormal ? PageType::kHuge : t; }

}  // namespace

namespace share {

// A new, uncharged object over `bytes` (the bytes are charged where they were created).
Result adopt_object(const PhysicalProperties& exporter, std::shared_ptr<os::PhysicalMemory> bytes,
                    DeviceIndex exporter_device, DeviceIndex importer, EmuPhysicalAllocator* holder,
                    ImportedMemory* out) {
  PhysicalProperties props = exporter;
  props.page_type = real_page_type(props.page_type);
  props.imported = true;
  auto* object = new (std::nothrow) EmuPhysical(props, std::move(bytes), nullptr);
  if (object == nullptr) return fail(ENOMEM);
  object->set_importing_device(importer);
  if (holder != nullptr) holder->hold(object);
  out->memory = object->id();
  out->properties = props;
  out->exporter_device = exporter_device;
  return Result::success();
}


}  // namespace share

bool EmuSharing::served_by_exporter(int fd, const share::PeerInfo& server, uint32_t share_id) {
  if (server.pid <= 0) return false;  // invisible from here: not a process this token can name
  if (share::share_id_names(share_id, server.pid)) return true;
  // An importer in an ancestor pid namespace sees the exporter under another pid; the token has
  // the exporter's own (the last of its NSpid chain).
  return share::share_id_names(share_id, transport_.peer_pid_in_own_namespace(fd));
}

int EmuSharing::open_link(uint64_t token, Link* link) {
  const uint32_t share_id = TokenFields::unpack(token).share_id;
  share::PeerInfo server;
  link->endpoint = share::endpoint_of(share_id);
  int rc = transport_.connect(link->endpoint, kImportTimeoutMs, &link->fd, &server);
  if (rc != 0) return rc;
  if (!served_by_exporter(link->fd, server, share_id)) {
    char what[40];
    std::snprintf(what, sizeof what, "shareable handle 0x%llx",
                  static_cast<unsigned long long>(token));
    rc = refuse_impostor(link->fd, server, what);
    link->fd = -1;
    return rc;
  }
  // Pinned now, while the listener is known to be the exporter: a connection that cannot be
  // pinned is used once (pidfd -1 is never kept).
  if (transport_.pin_peer(link->fd, &link->pidfd) != 0) link->pidfd = -1;
  std::lock_guard lock(mu_);
  busy_locked(*link, true);
  return 0;
}

bool EmuSharing::take_link(uint32_t endpoint, Link* link) {
  std::lock_guard lock(mu_);
  for (auto it = links_.rbegin(); it != links_.rend(); ++it) {
    if (it->endpoint == endpoint) {
      *link = *it;
      links_.erase(std::next(it).base());
      share::counters().importer_links.store(links_.size(), std::memory_order_relaxed);
      busy_locked(*link, true);
      return true;
    }
  }
  return false;
}

void EmuSharing::busy_locked(const Link& link, bool busy) {
  for (int fd : {link.fd, link.pidfd}) {
    if (fd < 0) continue;
    if (busy) {
      try {
        busy_.push_back(fd);
      } catch (const std::bad_alloc&) {
        // Untracked, a forked child keeps a copy of this connection until it exits; nothing more.
      }
    } else {
      busy_.erase(std::remove(busy_.begin(), busy_.end(), fd), busy_.end());
    }
  }
}

void EmuSharing::close_link(const Link& link) {
  {
    std::lock_guard lock(mu_);
    busy_locked(link, false);
  }
  close_fds(link);
}

void EmuSharing::close_fds(const Link& link) {
  transport_.close(link.fd);
  transport_.close(link.pidfd);
}

void EmuSharing::put_link(Link link) {
  if (link.pidfd < 0 || link_cap() == 0) {
    close_link(link);
    return;
  }
  std::lock_guard lock(mu_);
  busy_locked(link, false);
  size_t same = 0;
  for (const Link& l : links_) same += l.endpoint == link.endpoint;
  if (same >= kLinksPerEndpoint) {
    close_fds(link);
    return;
  }
  // Moved once, when first kept, under mu_, so that a fork cannot copy a descriptor in the middle
  // of its move.
  bool above = false;  // the importer decides how many it keeps: no cap of its own for low ones
  if (!link.placed) link.fd = transport_.place_kept(link.fd, &above);
  link.placed = true;
  try {
    links_.push_back(link);
  } catch (const std::bad_alloc&) {
    close_fds(link);
    return;
  }
  if (links_.size() > link_cap()) {
    close_fds(links_.front());
    links_.erase(links_.begin());
  }
  share::counters().importer_links.store(links_.size(), std::memory_order_relaxed);
}

int EmuSharing::exchange(uint64_t token, uint32_t kind, int device, Reply* rep, int* mem_fd,
                         Link* used) {
  if (mem_fd) *mem_fd = -1;
  *used = Link{};
  const uint32_t share_id = TokenFields::unpack(token).share_id;
  const Request req{share::wire::kMagic, kind, token, device, 0};
  for (;;) {
    Link link;
    const bool reused = take_link(share::endpoint_of(share_id), &link);
    if (!reused) {
      if (int rc = open_link(token, &link); rc != 0) return rc;
    }
    // On a kept connection the reply counts only while the exporter still runs (-ESRCH: an
    // answer after its exit would come from whoever holds its end now).
    const int rc =
        ask(link.fd, &req, sizeof req, rep, sizeof *rep, mem_fd, reused ? link.pidfd : -1);
    if (reused) {
      // The exporter ends kept connections when it has nothing to serve or too many, and exits;
      // either way the request was not answered (an import or a probe asks again safely).
      // "Unknown" on a kept connection may come from a process that has since given the group
      // up, its name now another's (the same pid bits in another pid namespace): only a fresh
      // connection to the name can tell.
      const bool unknown = rc == static_cast<int>(sizeof *rep) &&
                           rep->magic == share::wire::kMagic &&
                           rep->code == share::wire::kUnknownToken;
      if (rc == 0 || rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN || rc == -ESRCH ||
          unknown) {
        if (mem_fd != nullptr && *mem_fd >= 0) transport_.close(*mem_fd);
        if (mem_fd != nullptr) *mem_fd = -1;
        close_link(link);
        continue;  // links to it are tried until none is left, then a fresh connection
      }
      share::counters().reused.fetch_add(1, std::memory_order_relaxed);
    }
    // A reply hands the connection to the caller, who keeps it once it believes the reply. Any
    // other end closes it: a late reply would be read as the answer to the next request.
    if (rc > 0) {
      *used = link;
    } else {
      close_link(link);
    }
    return rc;
  }
}

int EmuSharing::refuse_impostor(int fd, const share::PeerInfo& server, const char* what) {
  // Anyone may bind a free name. Whoever did is not asked anything, so it learns nothing and
  // cannot answer with memory of its own.
  transport_.close(fd);
  share::counters().impostors.fetch_add(1);
  char line[200];
  std::snprintf(line, sizeof line,
                "%s: the process listening on its endpoint (pid %d, uid %u) is not its exporter; "
                "treated as unknown",
                what, server.pid, server.uid);
  listener_.log(Severity::kWarning, "DRV", line);
  return -ESRCH;
}

int EmuSharing::ask(int fd, const void* request, size_t request_size, void* reply,
                    size_t reply_size, int* mem_fd, int pidfd) {
  int got = -1;
  int rc = transport_.send(fd, request, request_size, -1);
  if (rc == 0) {
    rc = pidfd >= 0 ? transport_.recv_pinned(fd, pidfd, reply, reply_size, &got, kImportTimeoutMs)
                    : transport_.recv(fd, reply, reply_size, &got, kImportTimeoutMs);
  }
  if (mem_fd) {
    *mem_fd = got;
  } else if (got >= 0) {
    transport_.close(got);
  }
  return rc;
}

bool EmuSharing::import_local(uint64_t token, DeviceIndex device, ImportedMemory* out,
                              Result* result) {
  std::lock_guard lock(mu_);
  const Export* e = own_export_locked(ShareToken{token});
  if (e == nullptr) return false;
  const Location where = e->properties.location;
  if (where.kind != Location::Kind::kDevice || where.id == device) {
    *result = fail(EACCES);  // a process cannot import its own export onto the same device
    return true;
  }
  *result = share::adopt_object(e->properties, e->bytes, where.id, device, physical_, out);
  return true;
}

Result EmuSharing::fetch_remote(uint64_t token, DeviceIndex device, ImportedMemory* out) {
  Reply rep{};
  int mem_fd = -1;
  Link link;
  int rc = exchange(token, share::wire::kImport, device, &rep, &mem_fd, &link);
  // Closes the received descriptor on every path that does not hand it to adopt.
  const share::ReceivedFd received{transport_, &mem_fd};
  // Nobody (or not the exporter) serves the id, or the exporter vanished mid-handshake (it
  // exited or released the token): nothing to import.
  if (rc == -ECONNREFUSED || rc == -ENOENT || rc == -ESRCH || rc == 0 || rc == -ECONNRESET ||
      rc == -EPIPE) {
    return fail(EFAULT);
  }
  if (rc == -ETIMEDOUT) return fail(ETIMEDOUT);
  if (rc < 0) return fail(EPROTO);  // the exporter did not answer
  const char* defect = rc != static_cast<int>(sizeof rep) || rep.magic != share::wire::kMagic
                           ? "not a reply"
                           : share::wire::reply_defect(rep, device_count_);
  if (defect == nullptr && rep.code == 0 && mem_fd < 0) defect = "no memory attached";
  char what[40];
  std::snprintf(what, sizeof what, "0x%llx", static_cast<unsigned long long>(token));
  if (defect != nullptr) {
    // An exporter that sends what no exporter of emu sends is not asked again on this connection.
    close_link(link);
    return refuse_reply(what, defect);
  }
  if (rep.code != 0) {
    // Unknown (or released) token, or not on the whitelist (or listed before it started): this
    // process has no business with the exporter now, so the connection is not kept.
    close_link(link);
    return fail(rep.code == share::wire::kUnknownToken ? EFAULT : EACCES);
  }
  Result taken = take_memory(rep, &mem_fd, what, device, out);
  if (taken.ok()) {
    put_link(link);
  } else {
    close_link(link);
  }
  return taken;
}

Result EmuSharing::refuse_reply(const char* what, const char* defect) {
  share::counters().bad_replies.fetch_add(1);
  char line[240];
  std::snprintf(line, sizeof line,
                "the exporter of %s sent a malformed reply (%s); nothing was imported", what,
                defect);
  listener_.log(Severity::kWarning, "DRV", line);
  return fail(EINVAL);
}

Result EmuSharing::take_memory(const Reply& rep, int* mem_fd, const char* what, DeviceIndex device,
                               ImportedMemory* out) {
  const int fd = *mem_fd;
  *mem_fd = -1;  // adopt owns it from here
  std::shared_ptr<os::PhysicalMemory> bytes;
  if (Result r = gate_.check(steps::kEmuMemfdAdopt); !r.ok()) {
    transport_.close(fd);
    return r;
  }
  const int rc = os::MemfdMemory::adopt(fd, rep.size, &bytes);
  if (rc == -EMEDIUMTYPE || rc == -EACCES || rc == -EPERM || rc == -EINVAL) {
    // Not memory as an exporter of emu sends it (not a memfd, not open for reading and writing,
    // not sealed, not the announced size).
    share::counters().bad_replies.fetch_add(1);
    char line[200];
    std::snprintf(line, sizeof line, "the memory the exporter of %s sent was refused (errno %d)",
                  what, -rc);
    listener_.log(Severity::kWarning, "DRV", line);
    return fail(EINVAL);
  }
  if (rc != 0) return Result::from_raw(rc);
  PhysicalProperties props;
  props.location = share::wire::location_of(rep.side, rep.device);
  props.page_type = static_cast<PageType>(rep.page_type);
  props.mem_type = static_cast<MemType>(rep.mem_type);
  props.size = rep.size;
  const DeviceIndex exporter = rep.side == share::wire::kSideDevice ? rep.device : kNoDevice;
  return share::adopt_object(props, std::move(bytes), exporter, device, physical_, out);
}

Result EmuSharing::import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) {
  if (out == nullptr || device < 0 || device >= device_count_) return fail(EINVAL);
  if (!TokenFields::well_formed(token.value)) return fail(EFAULT);
  Result local;
  if (import_local(token.value, device, out, &local)) return local;
  return fetch_remote(token.value, device, out);
}

Result EmuSharing::import_fabric(const FabricToken& fabric, DeviceIndex device,
                                 ImportedMemory* out) {
  share::FabricFields f;
  if (!share::read_fabric(fabric.bytes, &f)) return fail(EINVAL);
  if (f.server_id != static_cast<uint32_t>(server_id_)) {
    if (out == nullptr || device < 0 || device >= device_count_) return fail(EINVAL);
    return import_other_server(f, device, out);
  }
  return import_memory(ShareToken{f.token.pack()}, device, out);
}

}  // namespace aclvmm::dev::emu
