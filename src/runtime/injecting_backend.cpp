#include "runtime/injecting_backend.h"

#include <unistd.h>

#include "runtime/injection.h"

namespace aclvmm {
namespace {

// -errno of the rule armed for `step` when it fires now, else 0.
inline int injected(const char* step) { return -injection_check(step); }

class InjectingMemory final : public drv::PhysicalMemory {
 public:
  explicit InjectingMemory(std::shared_ptr<drv::PhysicalMemory> inner)
      : inner_(std::move(inner)) {}
  uint64_t size() const override { return inner_->size(); }
  int read(uint64_t offset, void* dst, size_t n) const override {
    if (int e = injected("drv.read")) return e;
    return inner_->read(offset, dst, n);
  }
  int write(uint64_t offset, const void* src, size_t n) override {
    if (int e = injected("drv.write")) return e;
    return inner_->write(offset, src, n);
  }
  int fill(uint64_t offset, uint8_t value, size_t n) override {
    if (int e = injected("drv.fill")) return e;
    return inner_->fill(offset, value, n);
  }
  int fd() const override { return inner_->fd(); }
  int populate(uint64_t offset, size_t n) override {
    if (int e = injected("drv.populate")) return e;
    return inner_->populate(offset, n);
  }
  // The destination stays the wrapper: its write() is the "drv.write" step.
  int copy_to(uint64_t offset, drv::PhysicalMemory& dst, uint64_t dst_offset, size_t n) const override {
    if (int e = injected("drv.read")) return e;
    return inner_->copy_to(offset, dst, dst_offset, n);
  }

 private:
  std::shared_ptr<drv::PhysicalMemory> inner_;
};

class InjectingFaultTracker final : public drv::FaultTracker {
 public:
  explicit InjectingFaultTracker(drv::FaultTracker& inner) : inner_(inner) {}
  int start() override {
    if (int e = injected("drv.uffd_start")) return e;
    return inner_.start();
  }
  bool started() const override { return inner_.started(); }
  void stop() override { inner_.stop(); }
  void abandon() override { inner_.abandon(); }
  int watch(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_watch")) return e;
    return inner_.watch(va, size);
  }
  int unwatch(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_unwatch")) return e;
    return inner_.unwatch(va, size);
  }
  int revoke(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_revoke")) return e;
    return inner_.revoke(va, size);
  }
  int resolve(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_resolve")) return e;
    return inner_.resolve(va, size);
  }
  int next_fault(int timeout_ms, drv::CpuFault* fault) override {
    if (int e = injected("drv.uffd_next_fault")) return e;
    return inner_.next_fault(timeout_ms, fault);
  }
  bool tracks_writes() const override { return inner_.tracks_writes(); }
  int protect_writes(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_protect_writes")) return e;
    return inner_.protect_writes(va, size);
  }
  int allow_writes(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_allow_writes")) return e;
    return inner_.allow_writes(va, size);
  }
  int resolve_read_only(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.uffd_resolve_read_only")) return e;
    return inner_.resolve_read_only(va, size);
  }

 private:
  drv::FaultTracker& inner_;
};

class InjectingBackend final : public drv::Backend {
 public:
  explicit InjectingBackend(std::unique_ptr<drv::Backend> inner)
      : inner_(std::move(inner)),
        tracker_(inner_->fault_tracker()) {}

  const char* name() const override { return inner_->name(); }

  int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) override {
    if (int e = injected("drv.claim_window")) return e;
    return inner_->claim_window(preferred, size, align, base);
  }
  int claim_fixed(uint64_t addr, uint64_t size) override {
    if (int e = injected("drv.claim_fixed")) return e;
    return inner_->claim_fixed(addr, size);
  }
  int release_window(uint64_t base, uint64_t size) override {
    if (int e = injected("drv.release_window")) return e;
    return inner_->release_window(base, size);
  }

  int create_physical(const drv::PhysicalRequest& req,
                      std::shared_ptr<drv::PhysicalMemory>* out) override {
    if (int e = injected("drv.create_physical")) return e;
    return wrap(inner_->create_physical(req, out), out);
  }
  int adopt_physical(int fd, uint64_t size, std::shared_ptr<drv::PhysicalMemory>* out) override {
    if (int e = injected("drv.adopt_physical")) {
      ::close(fd);  // the call owns the descriptor, whatever the result
      return e;
    }
    return wrap(inner_->adopt_physical(fd, size, out), out);
  }

  std::shared_ptr<drv::PhysicalMemory> instrument(
      std::shared_ptr<drv::PhysicalMemory> memory) override {
    if (!memory) return memory;
    return std::make_shared<InjectingMemory>(inner_->instrument(std::move(memory)));
  }

  int map_cpu(uint64_t va, uint64_t size, drv::PhysicalMemory& mem, uint64_t offset,
              drv::CpuAccess access) override {
    if (int e = injected("drv.map_cpu")) {
      // What a failed mmap(MAP_FIXED) leaves: the old mapping may be gone, and the emu backend
      // then puts the placeholder back. The core must not assume the old mapping survived.
      (void)inner_->unmap_cpu(va, size);
      return e;
    }
    return inner_->map_cpu(va, size, mem, offset, access);
  }
  int unmap_cpu(uint64_t va, uint64_t size) override {
    if (int e = injected("drv.unmap_cpu")) return e;
    return inner_->unmap_cpu(va, size);
  }
  int bind_numa(uint64_t va, uint64_t size, int node) override {
    if (int e = injected("drv.bind_numa")) return e;
    return inner_->bind_numa(va, size, node);
  }

  int host_copy(void* dst, const void* src, size_t n) override {
    if (int e = injected("drv.host_copy")) return e;
    return inner_->host_copy(dst, src, n);
  }
  int host_fill(void* dst, uint8_t value, size_t n) override {
    if (int e = injected("drv.host_fill")) return e;
    return inner_->host_fill(dst, value, n);
  }

  drv::FaultTracker& fault_tracker() override { return tracker_; }

  int create_stats_segment(const std::string& dir, const std::string& prefix, size_t size,
                           std::shared_ptr<drv::StatsSegment>* out) override {
    if (int e = injected("drv.stats_segment")) return e;
    return inner_->create_stats_segment(dir, prefix, size, out);
  }

  uint64_t host_memory_total() override { return inner_->host_memory_total(); }
  uint64_t host_memory_free() override { return inner_->host_memory_free(); }
  int numa_node_count() override { return inner_->numa_node_count(); }
  int current_numa_node() override { return inner_->current_numa_node(); }
  size_t host_page_size() override { return inner_->host_page_size(); }
  void* allocate_table(uint64_t bytes) override {
    if (injected("drv.allocate_table")) return nullptr;
    return inner_->allocate_table(bytes);
  }

 private:
  // Every piece of physical memory the core gets is wrapped too: its steps can fail as well.
  static int wrap(int rc, std::shared_ptr<drv::PhysicalMemory>* out) {
    if (rc == 0) *out = std::make_shared<InjectingMemory>(std::move(*out));
    return rc;
  }

  std::unique_ptr<drv::Backend> inner_;
  InjectingFaultTracker tracker_;
};

}  // namespace

std::unique_ptr<drv::Backend> with_injection(std::unique_ptr<drv::Backend> inner) {
  if (!inner) return nullptr;
  return std::make_unique<InjectingBackend>(std::move(inner));
}

}  // namespace aclvmm
