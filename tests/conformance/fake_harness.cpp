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
    return "objects " + std::to_string(fake_->live_physical_objects());
  }

 private:
  dev::fake::FakeConfig config_;
  dev::fake::FakeBackend* fake_ = nullptr;
};

}  // namespace

std::unique_ptr<Harness> make_fake_harness() { return std::make_unique<FakeHarness>(); }

}  // namespace aclvmm::conformance
