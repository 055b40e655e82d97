// RmaEndpoint: one-sided reads and writes of another host's registered memory over libfabric
// (docs/fabric.md §3): the transport FABRIC imports across servers will use.
//
// One reliable-datagram endpoint (FI_EP_RDM) of the provider `tcp;ofi_rxm` (FI_PROVIDER may name
// another: verbs or EFA on a real pod), bound to this host's pod address and port. Memory is
// registered for remote read and write and named to peers by (key, offset); a peer is reached by
// its endpoint name (opaque bytes the exporter hands over), inserted once.
//
// Contract
// - open(): FI_VERSION 1.17 or later, the provider's own memory-registration mode (offset
//   addressing with keys this endpoint chooses when it reports mr_mode 0, virtual addresses and
//   provider keys otherwise). From the first register_memory() on, a progress thread drives the
//   provider's manual data progress so that peers' operations on this host's memory complete
//   while nobody here calls in; it sleeps in the provider's wait object while idle.
// - read_to()/write_from() (one operation of at most kStaging bytes) and read()/write() (in such
//   pieces): return once the operation completed (a write: delivered to the target's memory,
//   FI_DELIVERY_COMPLETE), or fail with kTimedOut after `timeout` (the link is cut, the peer is
//   gone) or with the provider's error. The bytes go through the endpoint's staging buffer
//   (touched and registered once), so that an operation that outlives its bound never touches
//   the caller's memory afterwards; read_to hands the staged bytes to a consumer and write_from
//   lets a producer fill them, which saves a copy where the bytes come from or go to memory of
//   the caller's (a fill, a copy into another memory object). The caller waits by polling its
//   completion queue, spinning for the first kSpin (a small operation's round trip) and napping
//   after that. After a timeout the
//   endpoint is done with: every later operation answers kTimedOut, and its provider objects are
//   left open for the lost operation (the provider crashes closing them under it).
// - A region stays registered until deregister() or the endpoint's end.
//
// Threading: every method from any thread (FI_THREAD_SAFE domain); one operation's completion is
// waited for by its caller. Fork: a child must not use the parent's endpoint (its progress thread
// exists only in the parent); it opens its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/device_result.h"

namespace aclvmm::dev::emu::fabric {

// What a peer needs to reach a registered region: the key and where the region starts in the
// provider's addressing (0 with offset addressing, the virtual address otherwise).
struct RemoteRegion {
  uint64_t key = 0;
  uint64_t base = 0;
};

using PeerId = uint64_t;  // fi_addr_t

class RmaEndpoint {
 public:
  // `address`: a numeric IPv4/IPv6 address of this host; `port`: 0 lets the kernel choose. `why`
  // says what failed.
  static Result open(const std::string& address, uint16_t port, std::unique_ptr<RmaEndpoint>* out,
                     std::string* why);
  ~RmaEndpoint();
  RmaEndpoint(const RmaEndpoint&) = delete;
  RmaEndpoint& operator=(const RmaEndpoint&) = delete;

  // This endpoint's name, for peers' add_peer.
  const std::vector<uint8_t>& name() const { return name_; }
  const std::string& provider() const { return provider_; }
  // An operation timed out: every later one answers kTimedOut (open a new endpoint instead).
  bool broken() const;

  Result register_memory(void* base, size_t size, RemoteRegion* out);
  Result deregister(uint64_t key);
  Result add_peer(const std::vector<uint8_t>& name, PeerId* out);

  // The largest single operation (read_to, write_from).
  static constexpr size_t kStaging = size_t{4} << 20;
  static constexpr std::chrono::microseconds kSpin{2000};
  // Receives the staged bytes of a read; 0 or the -errno the read then fails with.
  using Consumer = std::function<int(const uint8_t* data, size_t n)>;
  // Fills the staging buffer with the n bytes a write sends.
  using Producer = std::function<void(uint8_t* data, size_t n)>;

  // [local, local+size) <- peer's region at `offset` / -> it.
  Result read(PeerId peer, void* local, size_t size, const RemoteRegion& region, uint64_t offset,
              std::chrono::milliseconds timeout);
  Result write(PeerId peer, const void* local, size_t size, const RemoteRegion& region,
               uint64_t offset, std::chrono::milliseconds timeout);
  Result read_to(PeerId peer, size_t size, const RemoteRegion& region, uint64_t offset,
                 std::chrono::milliseconds timeout, const Consumer& consume);
  Result write_from(PeerId peer, size_t size, const RemoteRegion& region, uint64_t offset,
                    std::chrono::milliseconds timeout, const Producer& produce);

 private:
  struct Fabric;
  RmaEndpoint();
  Result transfer(bool is_write, PeerId peer, size_t size, const RemoteRegion& region,
                  uint64_t offset, std::chrono::milliseconds timeout, const Producer* produce,
                  const Consumer* consume);
  void progress();

  std::unique_ptr<Fabric> f_;
  std::vector<uint8_t> name_;
  std::string provider_;
};

}  // namespace aclvmm::dev::emu::fabric
