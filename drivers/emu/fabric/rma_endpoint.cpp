#include "drivers/emu/fabric/rma_endpoint.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "drivers/emu/fabric/libfabric.h"

namespace aclvmm::dev::emu::fabric {

struct RmaEndpoint::Fabric {
  const LibFabric* lib = nullptr;
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* tx_cq = nullptr;  // the callers' completions, read under op_mu
  fid_cq* rx_cq = nullptr;  // the progress thread sleeps on it
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  bool local_mr = false;   // FI_MR_LOCAL: local buffers are registered too
  bool virt_addr = false;  // FI_MR_VIRT_ADDR: remote addresses are virtual
  bool prov_key = false;   // FI_MR_PROV_KEY: the provider picks keys
  std::atomic<uint64_t> next_key{1};
  std::mutex op_mu;  // one operation at a time: its completion is its caller's
  std::mutex mr_mu;
  std::vector<fid_mr*> regions;
  std::thread progress;
  std::atomic<bool> stop{false};
  std::atomic<bool> broken{false};  // an operation timed out: the endpoint takes no more
  // Every operation's bytes (rma_endpoint.h), under op_mu; registered when the provider asks
  // for local registration. Freed with the endpoint unless an operation was lost on it.
  uint8_t* staging = nullptr;
  fid_mr* staging_mr = nullptr;

  Result ensure_staging() {
    if (staging != nullptr) return Result::success();
    auto* buffer = new (std::nothrow) uint8_t[RmaEndpoint::kStaging];
    if (buffer == nullptr) return Result::from_errno(ENOMEM);
    std::memset(buffer, 0, RmaEndpoint::kStaging);  // its pages exist from now on
    if (local_mr) {
      const int rc = fi_mr_reg(domain, buffer, RmaEndpoint::kStaging, FI_READ | FI_WRITE, 0,
                               next_key.fetch_add(1), 0, &staging_mr, nullptr);
      if (rc != 0) {
        delete[] buffer;
        const int e = rc < 0 ? -rc : rc;
        return Result::from_errno(e > 0 && e < 256 ? e : EIO);
      }
    }
    staging = buffer;
    return Result::success();
  }

  // Stops the progress thread, then closes the endpoint: the provider does not take an endpoint
  // closed under a thread progressing it (a crash inside rxm, seen with a cut link).
  void shut_down() {
    if (progress.joinable()) {
      stop.store(true, std::memory_order_release);
      if (rx_cq != nullptr) (void)fi_cq_signal(rx_cq);
      progress.join();
    }
    // An endpoint with an operation that timed out is left open (see transfer).
    if (ep != nullptr && !broken) (void)fi_close(&ep->fid);
    ep = nullptr;
  }
  ~Fabric() {
    shut_down();
    if (broken) return;  // the provider still owns what the lost operation uses
    if (staging_mr != nullptr) (void)fi_close(&staging_mr->fid);
    delete[] staging;
    for (fid_mr* mr : regions) (void)fi_close(&mr->fid);
    if (av != nullptr) (void)fi_close(&av->fid);
    if (rx_cq != nullptr) (void)fi_close(&rx_cq->fid);
    if (tx_cq != nullptr) (void)fi_close(&tx_cq->fid);
    if (domain != nullptr) (void)fi_close(&domain->fid);
    if (fabric != nullptr) (void)fi_close(&fabric->fid);
    if (info != nullptr) lib->freeinfo(info);
  }
};

namespace {

Result provider_error(int rc) {
  // The provider's errors are negative errnos (FI_E* above 255 have no errno: EIO).
  const int e = rc < 0 ? -rc : rc;
  return Result::from_errno(e > 0 && e < 256 ? e : EIO);
}

std::string said(const LibFabric& lib, const char* what, int rc) {
  return std::string(what) + ": " + lib.strerror(rc < 0 ? -rc : rc);
}

}  // namespace

RmaEndpoint::RmaEndpoint() : f_(new Fabric()) {}

RmaEndpoint::~RmaEndpoint() = default;  // Fabric's destructor stops the thread first

bool RmaEndpoint::broken() const { return f_->broken.load(); }

Result RmaEndpoint::open(const std::string& address, uint16_t port,
                         std::unique_ptr<RmaEndpoint>* out, std::string* why) {
  const LibFabric* lib = libfabric(why);
  if (lib == nullptr) return Result::from_errno(EOPNOTSUPP);
  std::unique_ptr<RmaEndpoint> e(new RmaEndpoint());
  Fabric& f = *e->f_;
  f.lib = lib;
  fi_info* hints = lib->dupinfo(nullptr);
  if (hints == nullptr) return Result::from_errno(ENOMEM);
  hints->caps = FI_RMA;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  if (std::getenv("FI_PROVIDER") == nullptr) hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
  const std::string service = std::to_string(port);
  int rc =
      lib->getinfo(FI_VERSION(1, 17), address.c_str(), service.c_str(), FI_SOURCE, hints, &f.info);
  lib->freeinfo(hints);
  if (rc != 0) {
    *why = said(*lib, ("no fabric provider for " + address).c_str(), rc);
    return provider_error(rc);
  }
  f.local_mr = (f.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  f.virt_addr = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  f.prov_key = (f.info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
  e->provider_ = f.info->fabric_attr->prov_name != nullptr ? f.info->fabric_attr->prov_name : "";
  fi_cq_attr tx{};
  tx.format = FI_CQ_FORMAT_CONTEXT;
  tx.wait_obj = FI_WAIT_NONE;
  fi_cq_attr rx{};
  rx.format = FI_CQ_FORMAT_CONTEXT;
  rx.wait_obj = FI_WAIT_UNSPEC;
  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  if ((rc = lib->open_fabric(f.info->fabric_attr, &f.fabric, nullptr)) != 0 ||
      (rc = fi_domain(f.fabric, f.info, &f.domain, nullptr)) != 0 ||
      (rc = fi_cq_open(f.domain, &tx, &f.tx_cq, nullptr)) != 0 ||
      (rc = fi_cq_open(f.domain, &rx, &f.rx_cq, nullptr)) != 0 ||
      (rc = fi_av_open(f.domain, &av, &f.av, nullptr)) != 0 ||
      (rc = fi_endpoint(f.domain, f.info, &f.ep, nullptr)) != 0 ||
      (rc = fi_ep_bind(f.ep, &f.av->fid, 0)) != 0 ||
      (rc = fi_ep_bind(f.ep, &f.tx_cq->fid, FI_TRANSMIT)) != 0 ||
      (rc = fi_ep_bind(f.ep, &f.rx_cq->fid, FI_RECV)) != 0 || (rc = fi_enable(f.ep)) != 0) {
    *why = said(*lib, "the fabric endpoint could not be set up", rc);
    return provider_error(rc);
  }
  size_t len = 0;
  (void)fi_getname(&f.ep->fid, nullptr, &len);
  e->name_.resize(len);
  if ((rc = fi_getname(&f.ep->fid, e->name_.data(), &len)) != 0) {
    *why = said(*lib, "the endpoint has no name", rc);
    return provider_error(rc);
  }
  e->name_.resize(len);
  *out = std::move(e);
  return Result::success();
}

// The provider makes progress on this host's memory only while someone calls it: this thread
// does, asleep in the provider's wait object while nothing happens.
void RmaEndpoint::progress() {
  fi_cq_entry entry;
  while (!f_->stop.load(std::memory_order_acquire)) {
    const ssize_t rc = fi_cq_sread(f_->rx_cq, &entry, 1, nullptr, 1000);
    if (rc == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      (void)fi_cq_readerr(f_->rx_cq, &err, 0);
    }
  }
}

Result RmaEndpoint::register_memory(void* base, size_t size, RemoteRegion* out) {
  if (base == nullptr || size == 0 || out == nullptr) return Result::from_errno(EINVAL);
  std::lock_guard lock(f_->mr_mu);
  // Peers' operations on this host's memory complete only while someone drives the provider:
  // from the first registration on, a thread does. An endpoint that only reads and writes
  // others' memory drives it itself while it waits, and needs none.
  if (!f_->progress.joinable()) {
    try {
      f_->progress = std::thread([this] { progress(); });
    } catch (const std::system_error&) {
      return Result::from_errno(EAGAIN);
    }
  }
  const uint64_t requested = f_->next_key.fetch_add(1);
  fid_mr* mr = nullptr;
  const int rc = fi_mr_reg(f_->domain, base, size, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, requested,
                           0, &mr, nullptr);
  if (rc != 0) return provider_error(rc);
  try {
    f_->regions.push_back(mr);
  } catch (const std::bad_alloc&) {
    (void)fi_close(&mr->fid);
    return Result::from_errno(ENOMEM);
  }
  out->key = fi_mr_key(mr);
  out->base = f_->virt_addr ? reinterpret_cast<uint64_t>(base) : 0;
  return Result::success();
}

Result RmaEndpoint::deregister(uint64_t key) {
  std::lock_guard lock(f_->mr_mu);
  for (auto it = f_->regions.begin(); it != f_->regions.end(); ++it) {
    if (fi_mr_key(*it) != key) continue;
    (void)fi_close(&(*it)->fid);
    f_->regions.erase(it);
    return Result::success();
  }
  return Result::from_errno(ENOENT);
}

Result RmaEndpoint::add_peer(const std::vector<uint8_t>& name, PeerId* out) {
  if (name.empty() || out == nullptr) return Result::from_errno(EINVAL);
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int n = fi_av_insert(f_->av, name.data(), 1, &addr, 0, nullptr);
  if (n != 1) return Result::from_errno(EINVAL);
  *out = addr;
  return Result::success();
}

Result RmaEndpoint::read(PeerId peer, void* local, size_t size, const RemoteRegion& region,
                         uint64_t offset, std::chrono::milliseconds timeout) {
  if (local == nullptr || size == 0) return Result::from_errno(EINVAL);
  auto* out = static_cast<uint8_t*>(local);
  for (size_t done = 0; done < size;) {
    const size_t piece = std::min(kStaging, size - done);
    Result r =
        read_to(peer, piece, region, offset + done, timeout, [&](const uint8_t* data, size_t n) {
          std::memcpy(out + done, data, n);
          return 0;
        });
    if (!r.ok()) return r;
    done += piece;
  }
  return Result::success();
}

Result RmaEndpoint::write(PeerId peer, const void* local, size_t size, const RemoteRegion& region,
                          uint64_t offset, std::chrono::milliseconds timeout) {
  if (local == nullptr || size == 0) return Result::from_errno(EINVAL);
  const auto* in = static_cast<const uint8_t*>(local);
  for (size_t done = 0; done < size;) {
    const size_t piece = std::min(kStaging, size - done);
    Result r = write_from(peer, piece, region, offset + done, timeout,
                          [&](uint8_t* data, size_t n) { std::memcpy(data, in + done, n); });
    if (!r.ok()) return r;
    done += piece;
  }
  return Result::success();
}

Result RmaEndpoint::read_to(PeerId peer, size_t size, const RemoteRegion& region, uint64_t offset,
                            std::chrono::milliseconds timeout, const Consumer& consume) {
  return transfer(false, peer, size, region, offset, timeout, nullptr, &consume);
}

Result RmaEndpoint::write_from(PeerId peer, size_t size, const RemoteRegion& region,
                               uint64_t offset, std::chrono::milliseconds timeout,
                               const Producer& produce) {
  return transfer(true, peer, size, region, offset, timeout, &produce, nullptr);
}

Result RmaEndpoint::transfer(bool is_write, PeerId peer, size_t size, const RemoteRegion& region,
                             uint64_t offset, std::chrono::milliseconds timeout,
                             const Producer* produce, const Consumer* consume) {
  if (size == 0 || size > kStaging) return Result::from_errno(EINVAL);
  Fabric& f = *f_;
  std::lock_guard lock(f.op_mu);
  if (f.broken) return Result::from_errno(ETIMEDOUT);
  // The provider moves the bytes through the endpoint's staging buffer, never the caller's: an
  // operation that outlives its bound (a cut link) may still complete later, and must not touch
  // memory the caller has reused by then (the staging buffer is then left to it). One buffer,
  // touched and registered once, serves every operation: fresh pages cost a fault each, which
  // on a virtual machine is more than the transfer of the page.
  if (Result r = f.ensure_staging(); !r.ok()) return r;
  uint8_t* const staging = f.staging;
  if (is_write) (*produce)(staging, size);
  void* desc = f.staging_mr != nullptr ? fi_mr_desc(f.staging_mr) : nullptr;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  const uint64_t remote = region.base + offset;
  Result result = Result::success();
  bool posted = false;
  for (;;) {
    const ssize_t rc = is_write ? fi_write(f.ep, staging, size, desc, peer, remote, region.key, &f)
                                : fi_read(f.ep, staging, size, desc, peer, remote, region.key, &f);
    if (rc == 0) {
      posted = true;
      break;
    }
    if (rc != -FI_EAGAIN) {
      result = provider_error(static_cast<int>(rc));
      break;
    }
    fi_cq_entry entry;
    (void)fi_cq_read(f.tx_cq, &entry, 1);  // drives progress
    if (std::chrono::steady_clock::now() >= deadline) {
      result = Result::from_errno(ETIMEDOUT);
      break;
    }
  }
  while (posted) {
    fi_cq_entry entry;
    const ssize_t rc = fi_cq_read(f.tx_cq, &entry, 1);
    if (rc == 1) {
      if (!is_write) {
        if (int e = (*consume)(staging, size); e != 0) result = Result::from_raw(e);
      }
      break;
    }
    if (rc == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      (void)fi_cq_readerr(f.tx_cq, &err, 0);
      result = provider_error(err.err != 0 ? -err.err : -EIO);
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      // Still outstanding: the staging buffer and its registration stay with it, and the
      // endpoint takes no more operations (closing it with the operation in flight crashes the
      // rxm provider).
      f.broken = true;
      return Result::from_errno(ETIMEDOUT);
    }
    // Spin while a completion is likely soon (a small operation's round trip), then nap so that
    // a long one leaves the CPU to the provider's threads and the peer.
    if (now - start > kSpin) {
      timespec nap{0, 20 * 1000};
      nanosleep(&nap, nullptr);
    }
  }
  return result;
}

}  // namespace aclvmm::dev::emu::fabric
