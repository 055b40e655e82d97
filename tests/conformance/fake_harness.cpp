// The fake backend's harness: its own hooks (byte stores, published names, live objects).
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conformance/harness.h"
#include "drivers/fake/fake_backend.h"
#include "drivers/fake/fake_world.h"

namespace aclvmm::conformance {
namespace {

// A second "process": another fake backend in the same world, called directly. exit() destroys
// it, which is its process ending.
class FakePeer final : public PeerProcess {
 public:
  explicit FakePeer(const dev::fake::FakeConfig& config) {
    opened_ = dev::fake::open_fake_backend(config, &listener_, &be_, &bare_);
    pid_ = config.pid;
  }
  bool ok() const { return opened_.ok(); }

  int32_t pid() override { return pid_; }
  dev::Result import(dev::ShareToken token, dev::DeviceIndex device) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    dev::ImportedMemory got;
    const dev::Result r = be_->sharing().import_memory(token, device, &got);
    if (r.ok()) imported_ = got.memory;
    return r;
  }
  dev::Result read(uint64_t offset, void* dst, size_t n) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    return bare_->read_physical(imported_, offset, dst, n);
  }
  dev::Result fill(uint64_t offset, size_t n, uint8_t value) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    std::vector<uint8_t> bytes(n, value);
    return bare_->write_physical(imported_, offset, bytes.data(), n);
  }
  dev::Result set_pids(dev::ShareToken token, int32_t pid) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    return be_->sharing().set_pids(token, &pid, 1);
  }
  dev::Result export_new(dev::DeviceIndex device, uint64_t size, uint8_t value, int32_t pid,
                         dev::ShareToken* out) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    dev::PhysicalId id;
    dev::Result r = be_->physical().create(
        dev::PhysicalSpec{dev::Location::device(device), dev::PageType::kHuge,
                          dev::MemType::kHbm, size},
        &id);
    if (!r.ok()) return r;
    std::vector<uint8_t> bytes(size, value);
    r = bare_->write_physical(id, 0, bytes.data(), bytes.size());
    if (r.ok()) r = be_->sharing().export_memory(id, out);
    if (r.ok()) r = be_->sharing().set_pids(*out, &pid, 1);
    return r;
  }
  dev::Result import_key(const dev::IpcKey& key, dev::DeviceIndex device,
                         uint64_t* offset) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    dev::IpcImported got;
    const dev::Result r = be_->sharing().ipc_import(key, device, &got);
    if (r.ok()) {
      imported_ = got.memory.memory;
      *offset = got.offset;
    }
    return r;
  }
  dev::Result set_key_pids(const dev::IpcKey& key, int32_t pid) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    return be_->sharing().ipc_set_pids(key, &pid, 1);
  }
  dev::Result close_key(const dev::IpcKey& key) override {
    if (!be_) return dev::Result::from_errno(ESRCH);
    return be_->sharing().ipc_close_export(key);
  }
  void exit() override { be_.reset(); }

 private:
  testing::RecordingListener listener_;
  std::unique_ptr<dev::DeviceBackend> be_;
  dev::fake::FakeBackend* bare_ = nullptr;
  dev::Result opened_;
  int32_t pid_ = 0;
  dev::PhysicalId imported_;
};

class FakeHarness final : public Harness {
 public:
  FakeHarness() { config_.world = std::make_shared<dev::fake::FakeWorld>(); }
  dev::Result open(const BackendSetup& setup, dev::BackendListener* listener,
                   std::unique_ptr<dev::DeviceBackend>* out) override {
    config_.device_count = setup.device_count;
    config_.device_memory = setup.device_memory;
    config_.managed_residency = setup.managed_residency;
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
  std::string machine_resources() override {
    size_t exports = 0;
    {
      std::lock_guard lock(config_.world->mutex());
      for (const auto& [token, e] : config_.world->exports) exports += e.exporter == config_.pid;
    }
    return "threads " + std::to_string(thread_count()) + ", exports " + std::to_string(exports);
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
  std::unique_ptr<PeerProcess> start_peer(const BackendSetup& setup, dev::DeviceBackend&) override {
    dev::fake::FakeConfig config = config_;
    config.device_count = setup.device_count;
    config.device_memory = setup.device_memory;
    config.pid = next_peer_pid();
    ++peers_;
    auto peer = std::make_unique<FakePeer>(config);
    if (!peer->ok()) return nullptr;
    return peer;
  }
  int32_t next_peer_pid() override { return config_.pid + 1 + peers_; }

 private:
  dev::fake::FakeConfig config_;
  dev::fake::FakeBackend* fake_ = nullptr;
  uint64_t next_va_ = 0x100000000000;  // the vendor's device window, as plain numbers
  int32_t peers_ = 0;
};

}  // namespace

std::unique_ptr<Harness> make_fake_harness() { return std::make_unique<FakeHarness>(); }

}  // namespace aclvmm::conformance
