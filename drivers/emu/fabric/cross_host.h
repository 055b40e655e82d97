// CrossHost: FABRIC handles between servers of a pod (docs/fabric.md §3.3), the part of emu's
// sharing unit that faces the network. EmuSharing owns one when a pod is configured and this
// build has libfabric's headers (otherwise create() gives nullptr and imports from another
// server answer EOPNOTSUPP, saying why).
//
// Exporter side: from the first FABRIC export of device memory the process serves the host's
// control port together with every other exporting process of its uid (SO_REUSEPORT). A request
// that names another process's export is handed, with its connection, to that process over the
// local share transport (ExportDirectory::relay); the exporter's listener gives it back here
// (take_relayed). The exporter answers from its own records (ExportDirectory::admit_remote),
// registers the memory with its RmaEndpoint once per export and counts the connection as a
// holder until it closes: the registration, and so the bytes, live while a holder does.
//
// Importer side: import() connects to the control port of the server the handle names, asks,
// checks every field of the reply (control_wire.h), and returns a RemoteMemory that keeps the
// connection (the holder) for as long as it lives.
//
// Trust: the exporter believes a request only from a connection whose address is the pod
// address of the server the request names; the importing host vouches for the pid it sends.
// A relayed connection is taken only from a process of this uid (the port is shared by such
// processes only). Every wait is bounded (control_socket.h, rma_endpoint.h).
//
// Threading: any thread. One thread per process serves the control port, the requests and the
// holders, asleep in poll while nothing happens; it runs from serve() until the backend closes.
// Lock order: EmuSharing's lock is never held while calling in here, and this class calls its
// ExportDirectory without its own lock held.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/backend_listener.h"
#include "drivers/device_result.h"
#include "drivers/device_types.h"
#include "drivers/emu/os/physical_memory.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev::emu::fabric {

namespace wire {
struct Request;
}

struct PodAddress {
  int32_t server_id = 0;
  std::string address;
  uint16_t port = 0;
};

// What the exporter's records say about a remote import.
struct RemoteGrant {
  int32_t code = 0;  // 0, or share::wire::kUnknownToken / kRefused
  std::shared_ptr<os::PhysicalMemory> bytes;
  PhysicalProperties properties;
};

class ExportDirectory {
 public:
  virtual ~ExportDirectory() = default;
  // The live export with this token, if it admits process `tgid` of another server.
  virtual RemoteGrant admit_remote(uint64_t token, int32_t tgid) = 0;
  // Hands `conn` and the request to the process of this host that exported `req.token`; false
  // when no such process answers (the caller then says kUnknownToken).
  virtual bool relay(const wire::Request& req, int conn) = 0;
};

// What an import from another server gives the sharing unit.
struct RemoteImport {
  std::shared_ptr<os::PhysicalMemory> bytes;
  PhysicalProperties properties;  // as the exporter describes them
  int32_t exporter_device = 0;    // on its server
};

class CrossHost {
 public:
  // nullptr when this build has no fabric transport.
  static std::unique_ptr<CrossHost> create(std::vector<PodAddress> pod, int32_t own_server,
                                           ExportDirectory& directory, BackendListener& listener);
  virtual ~CrossHost() = default;

  // Serves the control port from now on (nothing when it does already). Errors say why in the
  // log; exports stay valid on this host.
  virtual Result serve() = 0;
  // A connection another process of this host accepted for one of our exports (taken over;
  // anything but a TCP socket is closed).
  virtual void take_relayed(int conn, const wire::Request& req) = 0;
  // The export `token` of server `server_id`, for this process (bare tgid) and device.
  virtual Result import(int32_t server_id, uint64_t token, int32_t tgid, DeviceIndex device,
                        RemoteImport* out) = 0;
  // In a forked child: forgets the parent's port, connections, thread and endpoint without
  // acting on them.
  virtual void forget_after_fork() = 0;
};

}  // namespace aclvmm::dev::emu::fabric
