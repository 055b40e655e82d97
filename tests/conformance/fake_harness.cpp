// The fake backend's harness: its own hooks (byte stores, published names, live objects).
#include <string>

#include "conformance/harness.h"
#include "drivers/fake/fake_backend.h"

namespace aclvmm::conformance {
namespace {

class FakeHarness final : public Harness {
 public:
  dev::Result open(const BackendSetup& setup, dev::BackendListener* listener,
                   std::unique_ptr<dev::DeviceBackend>* out) override {
    config_.device_count = setup.device_count;
    config_.device_memory = setup.device_memory;
    return dev::fake::open_fake_backend(config_, listener, out, &fake_);
  }
  dev::Result read_physical(dev::PhysicalId memory, uint64_t offset, void* dst,
                            size_t n) override {
    return fake_->read_physical(memory, offset, dst, n);
  }
  dev::Result write_physical(dev::PhysicalId memory, uint64_t offset, const void* src,
                             size_t n) override {
    return fake_->write_physical(memory, offset, src, n);
  }
  std::string segment_dir() override { return config_.segment_dirs.front(); }
  std::string missing_dir() override { return "/fake/missing"; }
  bool segment_visible(const std::string& path) override { return fake_->segment_published(path); }
  int32_t own_pid() override { return config_.pid; }
  uint32_t own_uid() override { return config_.uid; }
  std::string held_resources() override {
    return "objects " + std::to_string(fake_->live_physical_objects()) + ", mappings " +
           std::to_string(fake_->live_mappings());
  }
  uint64_t reserve_va(uint64_t size) override {
    const uint64_t base = next_va_;
    next_va_ += (size + dev::kGiB - 1) / dev::kGiB * dev::kGiB;
    return base;
  }
  dev::Result cpu_access(uint64_t va, void* buffer, size_t n, bool write) override {
    return fake_->cpu_access(va, buffer, n, write);
  }
  // The fake has no Sharing unit yet (its world of processes comes with it).
  std::unique_ptr<PeerProcess> start_peer(const BackendSetup&, dev::DeviceBackend&) override {
    return nullptr;
  }

 private:
  dev::fake::FakeConfig config_;
  dev::fake::FakeBackend* fake_ = nullptr;
  uint64_t next_va_ = 0x100000000000;  // the vendor's device window, as plain numbers
};

}  // namespace

std::unique_ptr<Harness> make_fake_harness() { return std::make_unique<FakeHarness>(); }

}  // namespace aclvmm::conformance
