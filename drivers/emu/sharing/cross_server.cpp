// EmuSharing and the pod (docs/fabric.md §3.3): what another server's importer gets from this
// process's records, the hand-over of a control-port connection to the process that exported
// the token it names, and imports of another server's FABRIC exports. The network side is
// fabric::CrossHost (drivers/emu/fabric/cross_host.h).
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "drivers/emu/fabric/control_wire.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/emu/sharing/token.h"
#include "drivers/host/process_facts.h"

namespace aclvmm::dev::emu {

namespace {

constexpr int kRelayConnectMs = 1000;  // to a process of this host

Result fail(int errno_value) { return Result::from_errno(errno_value); }

}  // namespace

fabric::RemoteGrant EmuSharing::admit_remote(uint64_t token, int32_t tgid) {
  fabric::RemoteGrant grant;
  std::lock_guard lock(mu_);
  const Export* e = own_export_locked(ShareToken{token});
  if (e == nullptr) {
    grant.code = share::wire::kUnknownToken;
    return grant;
  }
  // The importing host vouches for the pid; process start times of two hosts cannot be
  // compared, so pid reuse on the importing host is that host's to rule out (docs/fabric.md §4).
  if (e->validate_pids && e->whitelist.count(tgid) == 0) {
    grant.code = share::wire::kRefused;
    return grant;
  }
  grant.bytes = e->bytes;
  grant.properties = e->properties;
  return grant;
}

bool EmuSharing::relay(const fabric::wire::Request& req, int conn) {
  const uint32_t share_id = share::TokenFields::unpack(req.token).share_id;
  int fd = -1;
  share::PeerInfo server;
  if (transport_.connect(share::endpoint_of(share_id), kRelayConnectMs, &fd, &server) != 0) {
    return false;
  }
  if (!served_by_exporter(fd, server, share_id)) {
    (void)refuse_impostor(fd, server, "a FABRIC export's endpoint");
    return false;
  }
  const int rc = transport_.send(fd, &req, sizeof req, conn);
  transport_.close(fd);
  return rc == 0;
}

void EmuSharing::take_relayed(int conn, const share::PeerInfo& peer,
                              const fabric::wire::Request& req) {
  // Only processes of this uid share the control port: a connection handed over by anyone else
  // did not come through it, and what it claims is not believed (CrossHost checks the rest).
  if (cross_host_ == nullptr || peer.uid != geteuid()) {
    share::counters().dropped.fetch_add(1);
    transport_.close(conn);
    return;
  }
  cross_host_->take_relayed(conn, req);
}

Result EmuSharing::import_other_server(const share::FabricFields& f, DeviceIndex device,
                                       ImportedMemory* out) {
  const std::string server = std::to_string(f.server_id);
  if (f.host || cross_host_ == nullptr) {
    // Host memory never crosses servers (the vendor refuses it too, 207000).
    const std::string why =
        f.host ? "host memory is not imported from another server"
        : pod_configured_
            ? "this build of aclvmm has no fabric transport (libfabric was not found at build time)"
            : "no pod is configured (ACLVMM_POD_FILE), so other servers cannot be reached";
    const std::string line = "a FABRIC handle of server " + server + ": " + why +
                             " (this is server " + std::to_string(server_id_) + ")";
    listener_.log(Severity::kWarning, "SHARE", line.c_str());
    return fail(EOPNOTSUPP);
  }
  fabric::RemoteImport remote;
  if (Result r = cross_host_->import(static_cast<int32_t>(f.server_id), f.token.pack(),
                                     host::bare_tgid(), device, &remote);
      !r.ok()) {
    return r;
  }
  // The importing device maps the memory as its own; the properties name the exporter's device
  // as the vendor's do, which is a device of another server (no peer pair here).
  const Location exporter = remote.properties.location;
  remote.properties.location = Location::device(device);
  Result r = share::adopt_object(remote.properties, std::move(remote.bytes), remote.exporter_device,
                                 device, physical_, out);
  if (r.ok()) {
    out->properties.location = exporter;
    out->other_server = true;
  }
  return r;
}

}  // namespace aclvmm::dev::emu
