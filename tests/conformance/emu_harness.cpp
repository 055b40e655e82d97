// The emu backend's harness: physical bytes through the object's memfd, segments in a private
// temporary directory, descriptors counted in /proc/self/fd.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "conformance/harness.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/memory_recycler.h"
#include "drivers/emu/os/placeholders.h"
#include "unit/testing/fork_settle.h"

namespace aclvmm::conformance {
namespace {

class EmuHarness final : public Harness {
 public:
  EmuHarness() {
    char pattern[] = "/tmp/aclvmm-conformance-XXXXXX";
    if (::mkdtemp(pattern) != nullptr) dir_ = pattern;
  }
  ~EmuHarness() override {
    for (const auto& [base, size] : claims_) (void)dev::emu::os::release_window(base, size);
    if (dir_.empty()) return;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") ::unlink((dir_ + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(dir_.c_str());
  }

  dev::Result open(const BackendSetup& setup, dev::BackendListener* listener,
                   std::unique_ptr<dev::DeviceBackend>* out) override {
    dev::BackendOptions options;
    options.emulation.device_count = setup.device_count;
    options.emulation.device_memory = setup.device_memory;
    return dev::open_device_backend("emu", options, listener, out);
  }
  dev::Result read_physical(dev::PhysicalId memory, uint64_t offset, void* dst,
                            size_t n) override {
    return dev::Result::from_raw(
        dev::emu::EmuPhysical::from_id(memory)->memory().read(offset, dst, n));
  }
  dev::Result write_physical(dev::PhysicalId memory, uint64_t offset, const void* src,
                             size_t n) override {
    return dev::Result::from_raw(
        dev::emu::EmuPhysical::from_id(memory)->memory().write(offset, src, n));
  }
  std::string segment_dir() override { return dir_; }
  std::string missing_dir() override { return dir_ + "/missing"; }
  bool segment_visible(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
  int32_t own_pid() override { return static_cast<int32_t>(::getpid()); }
  uint32_t own_uid() override { return static_cast<uint32_t>(::geteuid()); }
  std::string held_resources() override {
    // Freed device memory kept for reuse is not held by the backend: counted as the backend's
    // close leaves it, drained.
    dev::emu::os::recycler::drain();
    int fds = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (::readdir(d) != nullptr) ++fds;
      ::closedir(d);
    }
    int files = 0;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (::readdir(d) != nullptr) ++files;
      ::closedir(d);
    }
    return "descriptors " + std::to_string(fds) + ", segment files " + std::to_string(files);
  }
  std::string machine_resources() override {
    // Kernel mappings of memfds are CPU views of emulated memory; the rest of /proc/self/maps
    // also moves with the C library's thread arenas and stack cache, which are not the backend's.
    int views = 0;
    std::ifstream in("/proc/self/maps");
    for (std::string line; std::getline(in, line);) views += line.find("/memfd:") != std::string::npos;
    return held_resources() + ", memfd mappings " + std::to_string(views) + ", threads " +
           std::to_string(thread_count());
  }
  uint64_t reserve_va(uint64_t size) override {
    uint64_t base = 0;
    if (dev::emu::os::claim_window(0, size, dev::kGiB, &base) != 0) return 0;
    claims_.emplace_back(base, size);
    return base;
  }
  dev::Result cpu_access(uint64_t va, void* buffer, size_t n, bool write) override {
    void* at = reinterpret_cast<void*>(va);
    aclvmm_test::settle_threads_before_fork();
    const pid_t child = ::fork();
    if (child < 0) return dev::Result::from_errno(errno);
    if (child == 0) {
      // The same bytes as the parent then writes: a shared mapping shows them either way.
      if (write) {
        std::memcpy(at, buffer, n);
      } else {
        std::vector<char> sink(n);
        std::memcpy(sink.data(), at, n);
      }
      ::_exit(0);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return dev::Result::from_errno(ECHILD);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return dev::Result::from_errno(EFAULT);
    if (write) {
      std::memcpy(at, buffer, n);
    } else {
      std::memcpy(buffer, at, n);
    }
    return dev::Result::success();
  }
  std::unique_ptr<PeerProcess> start_peer(const BackendSetup& setup,
                                          dev::DeviceBackend& current) override {
    return start_emu_peer(setup, current);
  }

 private:
  std::string dir_;
  std::vector<std::pair<uint64_t, uint64_t>> claims_;
};

}  // namespace

std::unique_ptr<Harness> make_emu_harness() { return std::make_unique<EmuHarness>(); }

}  // namespace aclvmm::conformance
