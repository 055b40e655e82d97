#include "bench_fabric_raw.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace bench {
namespace {


// One RDM endpoint of tcp;ofi_rxm with the hints aclvmm's RmaEndpoint gives.
struct Raw {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* tx = nullptr;
  fid_cq* rx = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;

  bool open(const char* address) {
    fi_info* hints = fi_allocinfo();
    hints->caps = FI_RMA;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
    const int rc = fi_getinfo(FI_VERSION(1, 17), address, "0", FI_SOURCE, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0) return false;
    fi_cq_attr txa{};
    txa.format = FI_CQ_FORMAT_CONTEXT;
    txa.wait_obj = FI_WAIT_NONE;
    fi_cq_attr rxa{};
    rxa.format = FI_CQ_FORMAT_CONTEXT;
    rxa.wait_obj = FI_WAIT_UNSPEC;
    fi_av_attr ava{};
    ava.type = FI_AV_TABLE;
    return fi_fabric(info->fabric_attr, &fabric, nullptr) == 0 &&
           fi_domain(fabric, info, &domain, nullptr) == 0 &&
           fi_cq_open(domain, &txa, &tx, nullptr) == 0 &&
           fi_cq_open(domain, &rxa, &rx, nullptr) == 0 &&
           fi_av_open(domain, &ava, &av, nullptr) == 0 &&
           fi_endpoint(domain, info, &ep, nullptr) == 0 && fi_ep_bind(ep, &av->fid, 0) == 0 &&
           fi_ep_bind(ep, &tx->fid, FI_TRANSMIT) == 0 && fi_ep_bind(ep, &rx->fid, FI_RECV) == 0 &&
           fi_enable(ep) == 0;
  }
  bool virt_addr() const { return (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0; }
  bool local_mr() const { return (info->domain_attr->mr_mode & FI_MR_LOCAL) != 0; }
};

std::string hex(const std::vector<uint8_t>& v) {
  std::string s;
  char b[3];
  for (uint8_t c : v) {
    std::snprintf(b, sizeof b, "%02x", c);
    s += b;
  }
  return s;
}

std::vector<uint8_t> unhex(const char* h) {
  std::vector<uint8_t> v;
  for (size_t i = 0; h[i] && h[i + 1]; i += 2) {
    v.push_back(static_cast<uint8_t>(std::strtoul(std::string(h + i, 2).c_str(), nullptr, 16)));
  }
  return v;
}

}  // namespace

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

int run_raw_target(const char* address, long size) {
  Raw r;
  if (!r.open(address)) return 1;
  std::vector<uint8_t> memory(static_cast<size_t>(size), 0x5A);
  fid_mr* mr = nullptr;
  if (fi_mr_reg(r.domain, memory.data(), memory.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0,
                &mr, nullptr) != 0) {
    return 1;
  }
  size_t len = 0;
  (void)fi_getname(&r.ep->fid, nullptr, &len);
  std::vector<uint8_t> name(len);
  if (fi_getname(&r.ep->fid, name.data(), &len) != 0) return 1;
  name.resize(len);
  const uint64_t base = r.virt_addr() ? reinterpret_cast<uint64_t>(memory.data()) : 0;
  std::printf("%s %llu %llu\n", hex(name).c_str(), static_cast<unsigned long long>(fi_mr_key(mr)),
              static_cast<unsigned long long>(base));
  std::fflush(stdout);
  // The provider's manual progress, driven the way aclvmm's exporter drives it.
  std::atomic<bool> stop{false};
  std::thread progress([&] {
    fi_cq_entry e;
    while (!stop.load()) {
      if (fi_cq_sread(r.rx, &e, 1, nullptr, 1000) == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        (void)fi_cq_readerr(r.rx, &err, 0);
      }
    }
  });
  char b;
  while (read(STDIN_FILENO, &b, 1) > 0) {
  }
  stop.store(true);
  (void)fi_cq_signal(r.rx);
  progress.join();
  _exit(0);  // the provider's objects go with the process
}

int run_raw_reader(const char* address, const char* name_hex, const char* key_text,
                   const char* base_text) {
  Raw r;
  if (!r.open(address)) return 1;
  const std::vector<uint8_t> name = unhex(name_hex);
  fi_addr_t peer = FI_ADDR_UNSPEC;
  if (fi_av_insert(r.av, name.data(), 1, &peer, 0, nullptr) != 1) return 1;
  const uint64_t key = std::strtoull(key_text, nullptr, 10);
  const uint64_t base = std::strtoull(base_text, nullptr, 10);
  std::vector<uint8_t> local(64u << 20);
  fid_mr* mr = nullptr;
  if (r.local_mr() && fi_mr_reg(r.domain, local.data(), local.size(), FI_READ | FI_WRITE, 0, 2, 0,
                                &mr, nullptr) != 0) {
    return 1;
  }
  void* desc = mr != nullptr ? fi_mr_desc(mr) : nullptr;
  std::string op;
  size_t n = 0;
  while (std::cin >> op >> n) {
    if (n == 0 || n > local.size()) return 1;
    const bool write = op == "write";
    const uint64_t t0 = now_ns();
    ssize_t rc;
    do {
      rc = write ? fi_write(r.ep, local.data(), n, desc, peer, base, key, nullptr)
                 : fi_read(r.ep, local.data(), n, desc, peer, base, key, nullptr);
      if (rc == -FI_EAGAIN) {
        fi_cq_entry e;
        (void)fi_cq_read(r.tx, &e, 1);
      }
    } while (rc == -FI_EAGAIN);
    int status = rc == 0 ? 0 : 1;
    for (fi_cq_entry e; rc == 0;) {
      const ssize_t got = fi_cq_read(r.tx, &e, 1);
      if (got == 1) break;
      if (got == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        (void)fi_cq_readerr(r.tx, &err, 0);
        status = 1;
        break;
      }
    }
    std::printf("%d %llu\n", status, static_cast<unsigned long long>(now_ns() - t0));
    std::fflush(stdout);
  }
  _exit(0);
}

}  // namespace bench
