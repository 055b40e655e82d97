// PodService: CrossHost over the control port (control_socket.h) and libfabric RMA
// (rma_endpoint.h, remote_memory.h). The contract is in cross_host.h.
#include "drivers/emu/fabric/cross_host.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <utility>

#include "drivers/emu/fabric/control_socket.h"
#include "drivers/emu/fabric/control_wire.h"
#include "drivers/emu/fabric/remote_memory.h"
#include "drivers/emu/fabric/rma_endpoint.h"
#include "drivers/emu/sharing/counters.h"
#include "drivers/emu/sharing/token.h"

namespace aclvmm::dev::emu::fabric {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kConnectMs = 5000;  // to another server's control port
constexpr int kReplyMs = 10000;   // the exporter maps and registers the memory before it answers
constexpr int kSendMs = 2000;     // a reply to a peer that stopped reading
constexpr auto kRequestDeadline = std::chrono::milliseconds(2000);  // after accept
constexpr auto kRmaBound = std::chrono::milliseconds(5000);         // each piece of a copy or fill
constexpr size_t kPendingMax = 64;  // accepted connections whose request has not come yet
constexpr int kAcceptBurst = 32;

Result fail(int errno_value) { return Result::from_errno(errno_value); }

// The importer's control connection: closing it tells the exporter one holder fewer.
struct ControlConnection {
  explicit ControlConnection(int fd) : fd(fd) {}
  ~ControlConnection() { ::close(fd); }
  const int fd;
};

class PodService final : public CrossHost {
 public:
  PodService(std::vector<PodAddress> pod, int32_t own_server, ExportDirectory& directory,
             BackendListener& listener)
      : pod_(std::move(pod)), own_server_(own_server), directory_(directory), listener_(listener) {}
  ~PodService() override;

  Result serve() override;
  void take_relayed(int conn, const wire::Request& req) override;
  Result import(int32_t server_id, uint64_t token, int32_t tgid, DeviceIndex device,
                RemoteImport* out) override;
  void forget_after_fork() override;

 private:
  struct Pending {
    int fd = -1;
    Clock::time_point deadline;
  };
  struct Region {
    std::unique_ptr<ExportedRegion> registered;
    std::vector<uint8_t> endpoint_name;  // of the endpoint it is registered with
    size_t holders = 0;
  };

  const PodAddress* member(int32_t server) const;
  // The endpoint for new operations, opened on first use (a broken one is replaced).
  Result endpoint(std::shared_ptr<RmaEndpoint>* out);
  void log(Severity severity, const std::string& line) {
    listener_.log(severity, "SHARE", line.c_str());
  }
  void run();
  void accept_all();
  void read_request(size_t pending_index);
  void handle(int fd, const wire::Request& req, bool relayed);
  void answer(int fd, const wire::Request& req);
  void drop_holder(int fd);
  void close_all();

  const std::vector<PodAddress> pod_;
  const int32_t own_server_;
  ExportDirectory& directory_;
  BackendListener& listener_;

  std::mutex mu_;  // endpoint_, peers_, relayed_, the thread's start and stop
  std::shared_ptr<RmaEndpoint> endpoint_;
  std::map<std::vector<uint8_t>, PeerId> peers_;  // inserted into endpoint_
  std::vector<std::pair<int, wire::Request>> relayed_;
  int control_fd_ = -1;
  int wake_fd_ = -1;
  std::thread* thread_ = nullptr;
  bool stop_ = false;

  // The thread's own (and the destructor's, after the join).
  std::vector<Pending> pending_;
  std::map<const os::PhysicalMemory*, Region> regions_;
  std::map<int, const os::PhysicalMemory*> holders_;  // connection -> its region
};

PodService::~PodService() {
  std::thread* thread = nullptr;
  {
    std::lock_guard lock(mu_);
    thread = thread_;
    thread_ = nullptr;
    stop_ = true;
    if (wake_fd_ >= 0) (void)eventfd_write(wake_fd_, 1);
  }
  if (thread != nullptr) {
    thread->join();
    delete thread;
  }
  close_all();
}

void PodService::close_all() {
  for (const Pending& p : pending_) ::close(p.fd);
  pending_.clear();
  for (const auto& [fd, region] : holders_) ::close(fd);
  share::counters().fabric_holders.fetch_sub(holders_.size());
  holders_.clear();
  regions_.clear();  // deregisters
  for (const auto& [fd, req] : relayed_) ::close(fd);
  relayed_.clear();
  if (control_fd_ >= 0) ::close(control_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  control_fd_ = wake_fd_ = -1;
}

const PodAddress* PodService::member(int32_t server) const {
  for (const PodAddress& m : pod_) {
    if (m.server_id == server) return &m;
  }
  return nullptr;
}

Result PodService::endpoint(std::shared_ptr<RmaEndpoint>* out) {
  // A timed-out operation leaves an endpoint that takes no more (rma_endpoint.h): new imports
  // and registrations get a fresh one; memory imported over the old one keeps failing.
  {
    std::lock_guard lock(mu_);
    if (endpoint_ != nullptr && !endpoint_->broken()) {
      *out = endpoint_;
      return Result::success();
    }
  }
  // Opened without the lock: the first time in a process it takes about half a second.
  const PodAddress* own = member(own_server_);
  if (own == nullptr) return fail(EINVAL);
  std::unique_ptr<RmaEndpoint> opened;
  std::string why;
  if (Result r = RmaEndpoint::open(own->address, 0, &opened, &why); !r.ok()) {
    log(Severity::kError, "the fabric endpoint of server " + std::to_string(own_server_) + " (" +
                              own->address + ") could not be opened: " + why);
    return r;
  }
  std::lock_guard lock(mu_);
  if (endpoint_ == nullptr || endpoint_->broken()) {  // else another thread was quicker
    endpoint_ = std::move(opened);
    peers_.clear();
  }
  *out = endpoint_;
  return Result::success();
}

Result PodService::serve() {
  std::lock_guard lock(mu_);
  if (thread_ != nullptr) return Result::success();
  const PodAddress* own = member(own_server_);
  if (own == nullptr) return fail(EINVAL);
  int control = -1;
  if (int rc = control::listen_shared(own->address, own->port, &control); rc != 0) {
    log(Severity::kError, "FABRIC exports of server " + std::to_string(own_server_) +
                              " cannot be imported by " + "other servers: the control port " +
                              own->address + ":" + std::to_string(own->port) +
                              " could not be opened (" + std::strerror(-rc) +
                              (rc == -EADDRINUSE ? "; another user's process holds it" : "") + ")");
    return Result::from_raw(rc);
  }
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    ::close(control);
    return fail(ENOSPC);
  }
  control_fd_ = control;
  wake_fd_ = wake;
  stop_ = false;
  try {
    thread_ = new std::thread([this] { run(); });
  } catch (const std::system_error&) {
    thread_ = nullptr;
  } catch (const std::bad_alloc&) {
    thread_ = nullptr;
  }
  if (thread_ == nullptr) {
    ::close(control_fd_);
    ::close(wake_fd_);
    control_fd_ = wake_fd_ = -1;
    return fail(ENOSPC);
  }
  return Result::success();
}

void PodService::take_relayed(int conn, const wire::Request& req) {
  if (!control::is_tcp(conn)) {  // a control-port connection is one
    share::counters().dropped.fetch_add(1);
    ::close(conn);
    return;
  }
  std::lock_guard lock(mu_);
  if (thread_ == nullptr) {
    // Not serving (the port could not be opened): the importer sees the connection close.
    ::close(conn);
    return;
  }
  try {
    relayed_.emplace_back(conn, req);
  } catch (const std::bad_alloc&) {
    ::close(conn);
    return;
  }
  (void)eventfd_write(wake_fd_, 1);
}

void PodService::run() {
  {
    // Opening an endpoint costs about half a second the first time in a process (libfabric and
    // the RDMA stack load, the providers start): done now, while nobody waits for it, instead
    // of in the first importer's request.
    std::shared_ptr<RmaEndpoint> ready;
    (void)endpoint(&ready);
  }
  std::vector<pollfd> fds;
  std::vector<std::pair<int, wire::Request>> relayed;
  for (;;) {
    int wake = -1, control = -1;
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      relayed.swap(relayed_);
      wake = wake_fd_;
      control = control_fd_;
    }
    for (const auto& [fd, req] : relayed) handle(fd, req, true);
    relayed.clear();
    const auto now = Clock::now();
    // Connections whose request did not come in time.
    for (size_t i = 0; i < pending_.size();) {
      if (now >= pending_[i].deadline) {
        ::close(pending_[i].fd);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        share::counters().dropped.fetch_add(1);
      } else {
        ++i;
      }
    }
    int timeout_ms = -1;
    fds.clear();
    fds.push_back({wake, POLLIN, 0});
    fds.push_back({control, POLLIN, 0});
    for (const Pending& p : pending_) {
      fds.push_back({p.fd, POLLIN, 0});
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - now).count() + 1;
      if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = static_cast<int>(ms);
    }
    for (const auto& [fd, region] : holders_) fds.push_back({fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    share::counters().wakeups.fetch_add(1, std::memory_order_relaxed);
    if (n <= 0) continue;
    if (fds[0].revents != 0) {
      eventfd_t ignored;
      (void)eventfd_read(wake, &ignored);
    }
    const size_t first_pending = 2, first_holder = 2 + pending_.size();
    // Holders first (their indices do not move), then requests from the back, then new ones.
    for (size_t i = first_holder; i < fds.size(); ++i) {
      if (fds[i].revents != 0) drop_holder(fds[i].fd);
    }
    for (size_t i = first_holder; i-- > first_pending;) {
      if (fds[i].revents != 0) read_request(i - first_pending);
    }
    if (fds[1].revents != 0) accept_all();
  }
}

void PodService::accept_all() {
  for (int i = 0; i < kAcceptBurst; ++i) {
    int conn = -1;
    if (control::accept_one(control_fd_, &conn) != 0) return;
    if (pending_.size() >= kPendingMax) {
      // The oldest goes: a peer that connects and says nothing cannot crowd out the others.
      ::close(pending_.front().fd);
      pending_.erase(pending_.begin());
      share::counters().dropped.fetch_add(1);
    }
    try {
      pending_.push_back(Pending{conn, Clock::now() + kRequestDeadline});
    } catch (const std::bad_alloc&) {
      ::close(conn);
    }
  }
}

void PodService::read_request(size_t index) {
  const int fd = pending_[index].fd;
  wire::Request req{};
  const int n = control::peek(fd, &req, sizeof req);
  if (n >= 0 && n < static_cast<int>(sizeof req)) return;  // the rest is on its way
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
  if (n < 0 || control::recv_all(fd, &req, sizeof req, 0) != 0) {
    ::close(fd);
    return;
  }
  handle(fd, req, false);
}

void PodService::handle(int fd, const wire::Request& req, bool relayed) {
  std::string from;
  const PodAddress* claimed = wire::well_formed(req) ? member(req.server_id) : nullptr;
  if (claimed == nullptr || req.server_id == own_server_ || !control::peer_address(fd, &from) ||
      !control::same_address(from, claimed->address)) {
    // Not an importer of this pod (or one that says it is another server than its address).
    share::counters().dropped.fetch_add(1);
    log(Severity::kWarning, "a control-port request from " + (from.empty() ? "?" : from) +
                                " was dropped: it is no server of the pod file, or not the server "
                                "it names");
    ::close(fd);
    return;
  }
  const uint32_t share_id = share::TokenFields::unpack(req.token).share_id;
  if (relayed || share::share_id_names(share_id, getpid())) {
    answer(fd, req);
    return;
  }
  if (directory_.relay(req, fd)) {
    ::close(fd);  // the exporter has its own descriptor of the connection now
    return;
  }
  wire::Reply rep{};
  rep.magic = wire::kMagic;
  rep.code = share::wire::kUnknownToken;
  (void)control::send_all(fd, &rep, sizeof rep, kSendMs);
  ::close(fd);
}

void PodService::answer(int fd, const wire::Request& req) {
  wire::Reply rep{};
  rep.magic = wire::kMagic;
  RemoteGrant grant = directory_.admit_remote(req.token, req.tgid);
  rep.code = grant.code;
  if (rep.code == 0 && grant.properties.location.kind != Location::Kind::kDevice) {
    rep.code = share::wire::kRefused;  // host memory never leaves its server
  }
  if (rep.code == share::wire::kRefused) {
    share::counters().denied.fetch_add(1);
    char line[200];
    std::snprintf(line, sizeof line,
                  "refused import of token 0x%llx by pid %d of server %d: not whitelisted",
                  static_cast<unsigned long long>(req.token), req.tgid, req.server_id);
    log(Severity::kWarning, line);
  }
  Region* region = nullptr;
  if (rep.code == 0) {
    auto found = regions_.find(grant.bytes.get());
    if (found == regions_.end()) {
      Region fresh;
      std::shared_ptr<RmaEndpoint> ep;
      Result r = endpoint(&ep);
      if (r.ok()) r = ExportedRegion::create(ep, grant.bytes, &fresh.registered);
      if (!r.ok()) {
        log(Severity::kError, "an export could not be registered with the fabric (errno " +
                                  std::to_string(r.errno_value()) +
                                  "); the importer sees its connection close");
        ::close(fd);
        return;
      }
      fresh.endpoint_name = ep->name();
      found = regions_.emplace(grant.bytes.get(), std::move(fresh)).first;
    }
    region = &found->second;
    const PhysicalProperties& p = grant.properties;
    rep.size = p.size;
    // Importers see the page size the memory really has: APP "normal" pages are huge.
    rep.page_type =
        static_cast<uint32_t>(p.page_type == PageType::kNormal ? PageType::kHuge : p.page_type);
    rep.mem_type = static_cast<uint32_t>(p.mem_type);
    rep.device = p.location.id;
    rep.key = region->registered->region().key;
    rep.base = region->registered->region().base;
    rep.name_len =
        static_cast<uint32_t>(std::min<size_t>(region->endpoint_name.size(), wire::kNameMax));
    std::memcpy(rep.name, region->endpoint_name.data(), rep.name_len);
  }
  const bool sent = control::send_all(fd, &rep, sizeof rep, kSendMs) == 0;
  if (rep.code != 0 || !sent) {
    ::close(fd);
    if (region != nullptr && region->holders == 0) regions_.erase(grant.bytes.get());
    return;
  }
  control::keep_alive(fd);
  holders_[fd] = grant.bytes.get();
  ++region->holders;
  share::counters().fabric_holders.fetch_add(1);
  share::counters().fabric_served.fetch_add(1);
}

void PodService::drop_holder(int fd) {
  // The importer never sends after its request: readable means closed (or a broken peer).
  auto it = holders_.find(fd);
  if (it == holders_.end()) return;
  ::close(fd);
  share::counters().fabric_holders.fetch_sub(1);
  auto region = regions_.find(it->second);
  holders_.erase(it);
  if (region != regions_.end() && --region->second.holders == 0) regions_.erase(region);
}

Result PodService::import(int32_t server_id, uint64_t token, int32_t tgid, DeviceIndex device,
                          RemoteImport* out) {
  const PodAddress* m = member(server_id);
  if (m == nullptr) {
    log(Severity::kWarning, "a FABRIC handle of server " + std::to_string(server_id) +
                                ", which the pod file does not list");
    return fail(EFAULT);
  }
  int fd = -1;
  int rc = control::connect_bounded(m->address, m->port, kConnectMs, &fd);
  if (rc == -ECONNREFUSED) {
    log(Severity::kWarning, "no process of server " + std::to_string(server_id) + " (" +
                                m->address + ") serves FABRIC exports");
    return fail(EFAULT);
  }
  if (rc != 0) {
    log(Severity::kError, "server " + std::to_string(server_id) + " (" + m->address +
                              ") could not be reached: " + std::strerror(-rc));
    return fail(rc == -ETIMEDOUT ? ETIMEDOUT : EPROTO);
  }
  std::shared_ptr<ControlConnection> holder;
  try {
    holder = std::make_shared<ControlConnection>(fd);
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return fail(ENOMEM);
  }
  const wire::Request req{wire::kMagic, wire::kFabricImport, token, tgid, own_server_, device, 0};
  wire::Reply rep{};
  rc = control::send_all(fd, &req, sizeof req, kSendMs);
  if (rc == 0) rc = control::recv_all(fd, &rep, sizeof rep, kReplyMs);
  if (rc == -ETIMEDOUT) return fail(ETIMEDOUT);
  if (rc != 0) {
    log(Severity::kError, "server " + std::to_string(server_id) +
                              " closed the import's connection without an answer (" +
                              std::strerror(-rc) + ")");
    return fail(EPROTO);
  }
  if (const char* defect = wire::reply_defect(rep)) {
    share::counters().bad_replies.fetch_add(1);
    log(Severity::kWarning, "the control port of server " + std::to_string(server_id) +
                                " sent a malformed reply (" + defect + "); nothing was imported");
    return fail(EINVAL);
  }
  if (rep.code == share::wire::kUnknownToken) return fail(EFAULT);
  if (rep.code != 0) return fail(EACCES);
  std::shared_ptr<RmaEndpoint> ep;
  if (Result r = endpoint(&ep); !r.ok()) return r;
  PeerId peer = 0;
  {
    std::lock_guard lock(mu_);
    if (ep != endpoint_) return fail(ETIMEDOUT);  // replaced meanwhile: this one failed
    std::vector<uint8_t> name(rep.name, rep.name + rep.name_len);
    auto known = peers_.find(name);
    if (known != peers_.end()) {
      peer = known->second;
    } else {
      if (Result r = ep->add_peer(name, &peer); !r.ok()) {
        share::counters().bad_replies.fetch_add(1);
        return fail(EINVAL);  // no endpoint name this provider understands
      }
      peers_.emplace(std::move(name), peer);
    }
  }
  try {
    out->bytes = std::make_shared<RemoteMemory>(ep, peer, RemoteRegion{rep.key, rep.base}, rep.size,
                                                kRmaBound, holder);
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  out->properties = PhysicalProperties{};
  out->properties.location = Location::device(rep.device);
  out->properties.page_type = static_cast<PageType>(rep.page_type);
  out->properties.mem_type = static_cast<MemType>(rep.mem_type);
  out->properties.size = rep.size;
  out->exporter_device = rep.device;
  share::counters().fabric_imports.fetch_add(1);
  return Result::success();
}

void PodService::forget_after_fork() {
  // One thread, in the child: the parent's thread does not exist here and its objects are the
  // parent's. The endpoint and the registrations are left unreleased (their provider state and
  // progress thread belong to the parent); descriptors are closed (the parent keeps its own).
  new (&mu_) std::mutex();
  thread_ = nullptr;
  stop_ = false;
  if (endpoint_ != nullptr) (void)new std::shared_ptr<RmaEndpoint>(std::move(endpoint_));
  endpoint_.reset();
  peers_.clear();
  for (auto& [bytes, region] : regions_) (void)region.registered.release();
  regions_.clear();
  for (const Pending& p : pending_) ::close(p.fd);
  pending_.clear();
  for (const auto& [fd, region] : holders_) ::close(fd);
  share::counters().fabric_holders.fetch_sub(holders_.size());  // the parent's
  holders_.clear();
  for (const auto& [fd, req] : relayed_) ::close(fd);
  relayed_.clear();
  if (control_fd_ >= 0) ::close(control_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  control_fd_ = wake_fd_ = -1;
}

}  // namespace

std::unique_ptr<CrossHost> CrossHost::create(std::vector<PodAddress> pod, int32_t own_server,
                                             ExportDirectory& directory,
                                             BackendListener& listener) {
  return std::unique_ptr<CrossHost>(
      new (std::nothrow) PodService(std::move(pod), own_server, directory, listener));
}

}  // namespace aclvmm::dev::emu::fabric
