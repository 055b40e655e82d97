// EmuSharing's importer side: the local shortcut (an own export onto another device), and the
// request to another process's listener, whose reply is believed only after every check.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

int EmuSharing::exchange(uint64_t token, uint32_t kind, int device, Reply* rep, int* mem_fd) {
  if (mem_fd) *mem_fd = -1;
  const uint32_t share_id = TokenFields::unpack(token).share_id;
  int fd = -1;
  share::PeerInfo server;
  int rc = transport_.connect(share::endpoint_of(share_id), kImportTimeoutMs, &fd, &server);
  if (rc != 0) return rc;
  if (!served_by_exporter(fd, server, share_id)) {
    char what[40];
    std::snprintf(what, sizeof what, "shareable handle 0x%llx",
                  static_cast<unsigned long long>(token));
    return refuse_impostor(fd, server, what);
  }
  const Request req{share::wire::kMagic, kind, token, device, 0};
  return ask(fd, &req, sizeof req, rep, sizeof *rep, mem_fd);
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
                    size_t reply_size, int* mem_fd) {
  int got = -1;
  int rc = transport_.send(fd, request, request_size, -1);
  if (rc == 0) rc = transport_.recv(fd, reply, reply_size, &got, kImportTimeoutMs);
  transport_.close(fd);
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
  int rc = exchange(token, share::wire::kImport, device, &rep, &mem_fd);
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
  if (defect != nullptr) return refuse_reply(what, defect);
  if (rep.code == share::wire::kUnknownToken) return fail(EFAULT);
  if (rep.code != 0) return fail(EACCES);  // not on the whitelist (or listed before it started)
  return take_memory(rep, &mem_fd, what, device, out);
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
