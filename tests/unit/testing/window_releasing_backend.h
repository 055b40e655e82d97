// The real emu backend behind a forwarding decorator that remembers the windows claimed through it
// and gives them back at destruction. An AddressSpace claims 12 TiB of address space and never
// releases it, which would exhaust the process's address space after a few fresh AddressSpace
// objects in one test binary. Tests derive from it to change single steps.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "drivers/driver.h"

namespace aclvmm {

class WindowReleasingBackend : public drv::Backend {
 public:
  WindowReleasingBackend() : real_(drv::create_backend("emu")) {}
  ~WindowReleasingBackend() override {
    for (auto& [base, size] : windows_) real_->release_window(base, size);
  }
  bool ok() const { return real_ != nullptr; }
  size_t windows_claimed() const { return windows_.size(); }
  const std::vector<std::pair<uint64_t, uint64_t>>& windows() const { return windows_; }
  // The window of `size` bytes claimed through this backend (0 if none).
  uint64_t window(uint64_t size) const {
    for (auto& [base, s] : windows_) {
      if (s == size) return base;
    }
    return 0;
  }
  drv::Backend* real() { return real_.get(); }

  const char* name() const override { return real_->name(); }
  int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) override {
    const int rc = real_->claim_window(preferred, size, align, base);
    if (rc == 0) windows_.emplace_back(*base, size);
    return rc;
  }
  int claim_fixed(uint64_t a, uint64_t size) override { return real_->claim_fixed(a, size); }
  int release_window(uint64_t b, uint64_t size) override { return real_->release_window(b, size); }
  int create_physical(const drv::PhysicalRequest& r, std::shared_ptr<drv::PhysicalMemory>* out) override {
    return real_->create_physical(r, out);
  }
  int adopt_physical(int fd, uint64_t size, std::shared_ptr<drv::PhysicalMemory>* out) override {
    return real_->adopt_physical(fd, size, out);
  }
  int map_cpu(uint64_t va, uint64_t size, drv::PhysicalMemory& m, uint64_t off,
              drv::CpuAccess a) override {
    return real_->map_cpu(va, size, m, off, a);
  }
  int unmap_cpu(uint64_t va, uint64_t size) override { return real_->unmap_cpu(va, size); }
  int bind_numa(uint64_t va, uint64_t size, int n) override { return real_->bind_numa(va, size, n); }
  int host_copy(void* d, const void* s, size_t n) override { return real_->host_copy(d, s, n); }
  int host_fill(void* d, uint8_t v, size_t n) override { return real_->host_fill(d, v, n); }
  drv::FaultTracker& fault_tracker() override { return real_->fault_tracker(); }
  uint64_t host_memory_total() override { return real_->host_memory_total(); }
  uint64_t host_memory_free() override { return real_->host_memory_free(); }
  int numa_node_count() override { return real_->numa_node_count(); }
  int current_numa_node() override { return real_->current_numa_node(); }
  size_t host_page_size() override { return real_->host_page_size(); }
  void* allocate_table(uint64_t bytes) override { return real_->allocate_table(bytes); }

 private:
  std::unique_ptr<drv::Backend> real_;
  std::vector<std::pair<uint64_t, uint64_t>> windows_;
};

}  // namespace aclvmm
