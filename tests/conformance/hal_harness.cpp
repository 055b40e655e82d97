// The hal backend's harness: the hal backend (drivers/hal) over the fake driver library
// libascend_hal.so that this repository builds on the emulator (drivers/hal/fake, issue 16).
// What a case looks at goes through the driver's own C functions, as a test on hardware would
// reach it: physical bytes by mapping the handle at a scratch reservation and drvMemcpy, ranges
// for the MMU cases from halMemAddressReserve, the CPU's view by touching the address in a forked
// child; nothing peeks into the fake.
//
// The machine. The fake reads ACLVMM_DEVICE_COUNT and ACLVMM_DEVICE_MEMORY once per process, so
// the first case's BackendSetup fixes it (the harness sets the environment and loads the library
// then); a case that asks for another machine skips naming both (run it alone to run it).
//
// Devices. The driver's state is per process and refuses memory calls until a device is opened
// (hal.md §2). Each case's backend therefore comes with every device of the machine opened
// through its DeviceManager, as the core opens them on aclrtSetDevice, and the devices are closed
// when that backend goes, so that the next case starts from a driver with no device open (a
// close destroys the device's blocks and mappings, as the last aclrtResetDevice does).
//
// What the backend holds: the fake keeps every physical object and block as an emulator memfd,
// and CPU views as memfd mappings, so the process's memfd descriptors and mappings show the
// driver objects the backend made; threads show its queues (the fake's own threads are started
// once, before any case counts). The fake's tables themselves are not visible (a real driver's
// are not either).
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "unit/testing/fork_settle.h"
#include "conformance/harness.h"
#include "conformance/pipe_peer.h"
#include "drivers/hal/hal_decls.h"

namespace aclvmm::conformance {
// Named apart: the suite builds as one unity source, where emu_peer.cpp's anonymous names live.
namespace hal_harness {
namespace {

#ifdef ACLVMM_FAKE_HAL
constexpr const char kFakeHal[] = ACLVMM_FAKE_HAL;
#else
constexpr const char kFakeHal[] = "";
#endif

constexpr uint64_t kHugePage = 2 * dev::kMiB;

// The driver functions the harness calls itself (the backend has its own pointers).
struct Driver {
  decltype(&::drvGetDevNum) drvGetDevNum = nullptr;
  decltype(&::halDeviceClose) halDeviceClose = nullptr;
  decltype(&::halMemAddressReserve) halMemAddressReserve = nullptr;
  decltype(&::halMemAddressFree) halMemAddressFree = nullptr;
  decltype(&::halMemMap) halMemMap = nullptr;
  decltype(&::halMemUnmap) halMemUnmap = nullptr;
  decltype(&::halMemGetAllocationPropertiesFromHandle) halMemGetAllocationPropertiesFromHandle =
      nullptr;
  decltype(&::drvMemcpy) drvMemcpy = nullptr;
};

dev::Result driver_result(drvError_t e) {
  return e == DRV_ERROR_NONE ? dev::Result::success() : dev::Result::from_driver(e);
}

// The machine the fake was loaded with, fixed once per process.
struct Machine {
  std::string error;  // why no case can run here; "" when the library is usable
  int32_t device_count = 0;
  uint64_t device_memory = 0;  // 0: not known (the library was loaded before the harness)
  Driver driver;
};

// Bytes as a plain decimal number, or 0.
uint64_t decimal(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  return *end == '\0' ? v : 0;
}

// A function of the driver library, typed as hal_decls.h declares it (null when it lacks it).
#define ACLVMM_HAL_SYMBOL(library, name) \
  reinterpret_cast<decltype(&::name)>(::dlsym(library, #name))

// The fake's emulator starts a share listener thread at the first export of the process and a
// fault thread at its first managed range, and keeps both (and their descriptors) until the
// process ends, as a driver keeps its process state until exit (hal.md §2). Started here once,
// before any case counts, so that machine_resources() compares what the backend holds only.
void start_driver_threads(void* library) {
  const auto device_open = ACLVMM_HAL_SYMBOL(library, halDeviceOpen);
  const auto device_close = ACLVMM_HAL_SYMBOL(library, halDeviceClose);
  const auto create = ACLVMM_HAL_SYMBOL(library, halMemCreate);
  const auto release = ACLVMM_HAL_SYMBOL(library, halMemRelease);
  const auto export_handle = ACLVMM_HAL_SYMBOL(library, halMemExportToShareableHandle);
  const auto mem_alloc = ACLVMM_HAL_SYMBOL(library, halMemAlloc);
  const auto mem_free = ACLVMM_HAL_SYMBOL(library, halMemFree);
  if (device_open == nullptr || device_close == nullptr) return;
  halDevOpenIn in;
  halDevOpenOut out;
  std::memset(&in, 0, sizeof in);
  std::memset(&out, 0, sizeof out);
  if (device_open(0, &in, &out) != DRV_ERROR_NONE) return;
  if (create != nullptr && release != nullptr && export_handle != nullptr) {
    drv_mem_prop prop;
    std::memset(&prop, 0, sizeof prop);
    prop.side = MEM_DEV_SIDE;
    prop.module_id = APP_MODULE_ID;
    prop.pg_type = MEM_HUGE_PAGE_TYPE;
    drv_mem_handle_t* h = nullptr;
    if (create(&h, kHugePage, &prop, 0) == DRV_ERROR_NONE) {
      uint64_t token = 0;
      (void)export_handle(h, MEM_HANDLE_TYPE_NONE, 0, &token);
      (void)release(h);
    }
  }
  if (mem_alloc != nullptr && mem_free != nullptr) {
    void* p = nullptr;
    if (mem_alloc(&p, kHugePage, MEM_UVM | MEM_PAGE_HUGE) == DRV_ERROR_NONE) (void)mem_free(p);
  }
  halDevCloseIn bye;
  std::memset(&bye, 0, sizeof bye);
  bye.close_type = DEV_CLOSE_HOST_DEVICE;
  (void)device_close(0, &bye);
}

const Machine& machine_for(const BackendSetup& setup) {
  static std::mutex mu;
  static Machine* fixed = nullptr;  // never destroyed: forked peers read it too
  std::lock_guard lock(mu);
  if (fixed != nullptr) return *fixed;
  fixed = new Machine();
  Machine& m = *fixed;
  if (kFakeHal[0] == '\0') {
    m.error = "built without the fake driver library (ACLVMM_FAKE_HAL is not defined)";
    return m;
  }
  // The fake reads its environment once, at its first call: set it before anything loads it,
  // unless something in this process already did (its machine is then what the environment
  // said at that time).
  void* handle = ::dlopen(kFakeHal, RTLD_NOW | RTLD_NOLOAD);
  const bool ours = handle == nullptr;
  if (ours) {
    ::setenv("ACLVMM_DEVICE_COUNT", std::to_string(setup.device_count).c_str(), 1);
    ::setenv("ACLVMM_DEVICE_MEMORY", std::to_string(setup.device_memory).c_str(), 1);
    // RTLD_GLOBAL as the backend's loader opens it (hal.md §1.1): one instance either way.
    handle = ::dlopen(kFakeHal, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      m.error = std::string(kFakeHal) + " does not load: " + (why ? why : "?");
      return m;
    }
  }
  Driver& d = m.driver;
  d.drvGetDevNum = ACLVMM_HAL_SYMBOL(handle, drvGetDevNum);
  d.halDeviceClose = ACLVMM_HAL_SYMBOL(handle, halDeviceClose);
  d.halMemAddressReserve = ACLVMM_HAL_SYMBOL(handle, halMemAddressReserve);
  d.halMemAddressFree = ACLVMM_HAL_SYMBOL(handle, halMemAddressFree);
  d.halMemMap = ACLVMM_HAL_SYMBOL(handle, halMemMap);
  d.halMemUnmap = ACLVMM_HAL_SYMBOL(handle, halMemUnmap);
  d.halMemGetAllocationPropertiesFromHandle =
      ACLVMM_HAL_SYMBOL(handle, halMemGetAllocationPropertiesFromHandle);
  d.drvMemcpy = ACLVMM_HAL_SYMBOL(handle, drvMemcpy);
  const bool complete = d.drvGetDevNum && d.halDeviceClose && d.halMemAddressReserve &&
                        d.halMemAddressFree && d.halMemMap && d.halMemUnmap &&
                        d.halMemGetAllocationPropertiesFromHandle && d.drvMemcpy;
  if (!complete) {
    m.error = std::string(kFakeHal) + " lacks a function the harness calls";
    return m;
  }
  uint32_t count = 0;
  if (m.driver.drvGetDevNum(&count) != DRV_ERROR_NONE || count == 0) {
    m.error = std::string(kFakeHal) + " reports no device (see its [fake-hal] line on stderr)";
    return m;
  }
  m.device_count = static_cast<int32_t>(count);
  m.device_memory = ours ? setup.device_memory : decimal(std::getenv("ACLVMM_DEVICE_MEMORY"));
  if (ours) start_driver_threads(handle);
  return m;
}

std::string describe_machine(int32_t devices, uint64_t memory) {
  return std::to_string(devices) + " device(s) of " +
         (memory == 0 ? std::string("unknown size") : std::to_string(memory / dev::kMiB) + " MiB");
}

// Copies between `buffer` and [offset, offset+n) of the physical memory behind `memory`, as a
// program on hardware reaches it: the handle mapped at a reservation of its own, drvMemcpy, then
// unmapped and the reservation freed. The process must have a device open (the driver's rule).
dev::Result through_mapping(const Driver& d, dev::PhysicalId memory, uint64_t offset,
                            void* buffer, size_t n, bool write) {
  if (!memory) return dev::Result::from_errno(EINVAL);  // a block without a handle, say
  if (n == 0) return dev::Result::success();
  auto* h = reinterpret_cast<drv_mem_handle_t*>(static_cast<uintptr_t>(memory.value));
  drv_mem_prop prop;
  std::memset(&prop, 0, sizeof prop);
  if (dev::Result r = driver_result(d.halMemGetAllocationPropertiesFromHandle(&prop, h));
      !r.ok()) {
    return r;
  }
  // The smallest prefix of whole pages that holds the range: never more than the memory has.
  const uint64_t granule = prop.pg_type == MEM_GIANT_PAGE_TYPE ? dev::kGiB : kHugePage;
  const uint64_t span = (offset + n + granule - 1) / granule * granule;
  void* va = nullptr;
  if (dev::Result r = driver_result(d.halMemAddressReserve(&va, span, 0, nullptr, 1)); !r.ok()) {
    return r;
  }
  dev::Result r = driver_result(d.halMemMap(va, span, 0, h, 0));
  if (r.ok()) {
    const uint64_t at = reinterpret_cast<uint64_t>(va) + offset;
    const uint64_t host = reinterpret_cast<uint64_t>(buffer);
    r = driver_result(write ? d.drvMemcpy(at, n, host, n) : d.drvMemcpy(host, n, at, n));
    const dev::Result unmapped = driver_result(d.halMemUnmap(va));
    if (r.ok()) r = unmapped;
  }
  const dev::Result freed = driver_result(d.halMemAddressFree(va));
  return r.ok() ? freed : r;
}

// What one harness has made in the driver, shared with the backends it hands out (they may
// outlive a call into the harness, never the process).
class Session {
 public:
  explicit Session(const Machine& machine) : machine_(machine) {}

  const Driver& driver() const { return machine_.driver; }
  int32_t device_count() const { return machine_.device_count; }

  // A backend was handed out; true when it is the only one (the devices are to be opened).
  bool backend_came() {
    std::lock_guard lock(mu_);
    return ++live_ == 1;
  }
  // The last backend went: the reservations go back where the driver lets them (one with
  // mappings left stays reserved), then every device closes.
  void backend_gone() {
    std::lock_guard lock(mu_);
    if (--live_ > 0) return;
    for (Range& r : ranges_) {
      if (r.held) {
        r.held = driver().halMemAddressFree(reinterpret_cast<void*>(r.base)) != DRV_ERROR_NONE;
      }
    }
    close_devices();
  }
  // Every device of the machine closed (UNINIT for one that is not open is fine): what an
  // earlier case may have left open, before devices open again.
  void close_devices() {
    for (int32_t d = 0; d < device_count(); ++d) {
      halDevCloseIn in;
      std::memset(&in, 0, sizeof in);
      in.close_type = DEV_CLOSE_HOST_DEVICE;
      (void)driver().halDeviceClose(static_cast<uint32_t>(d), &in);
    }
  }
  // A range the case keeps until the harness goes (Harness::reserve_va).
  uint64_t reserve(uint64_t size) {
    std::lock_guard lock(mu_);
    void* va = nullptr;
    if (driver().halMemAddressReserve(&va, size, 0, nullptr, 1) != DRV_ERROR_NONE) return 0;
    ranges_.push_back(Range{reinterpret_cast<uint64_t>(va), size, true});
    return reinterpret_cast<uint64_t>(va);
  }
  // The ranges given back when the last backend went, reserved again at their addresses for the
  // next backend of the same case (C48 maps into a range it reserved before).
  void restore_ranges() {
    std::lock_guard lock(mu_);
    for (Range& r : ranges_) {
      if (r.held) continue;
      void* va = nullptr;
      r.held = driver().halMemAddressReserve(&va, r.size, 0, reinterpret_cast<void*>(r.base),
                                             1) == DRV_ERROR_NONE;
    }
  }

 private:
  struct Range {
    uint64_t base, size;
    bool held;
  };
  const Machine& machine_;
  std::mutex mu_;
  int live_ = 0;
  std::vector<Range> ranges_;
};

// The case's backend: the hal backend as open_device_backend gave it (behind the injection
// decorator); when it goes, the devices the harness opened close, as at the last reset.
class CaseBackend final : public dev::DeviceBackend {
 public:
  CaseBackend(std::unique_ptr<dev::DeviceBackend> inner, std::shared_ptr<Session> session)
      : inner_(std::move(inner)), session_(std::move(session)) {}
  ~CaseBackend() override {
    inner_.reset();  // its queues' threads end first, as at the core's teardown
    session_->backend_gone();
  }

  const char* name() const override { return inner_->name(); }
  const dev::Capabilities& capabilities() const override { return inner_->capabilities(); }
  dev::DeviceManager& devices() override { return inner_->devices(); }
  dev::AddressWindows& windows() override { return inner_->windows(); }
  dev::PhysicalAllocator& physical() override { return inner_->physical(); }
  dev::BlockAllocator& blocks() override { return inner_->blocks(); }
  dev::DeviceMmu& mmu() override { return inner_->mmu(); }
  dev::CopyEngine& copy_engine() override { return inner_->copy_engine(); }
  dev::Sharing& sharing() override { return inner_->sharing(); }
  dev::UnifiedMemory& unified_memory() override { return inner_->unified_memory(); }
  dev::HostServices& host() override { return inner_->host(); }
  std::string describe(dev::Result result) const override { return inner_->describe(result); }
  void visit_statistics(dev::StatisticsVisitor& visitor) const override {
    inner_->visit_statistics(visitor);
  }
  void prepare_fork() override { inner_->prepare_fork(); }
  void after_fork_parent() override { inner_->after_fork_parent(); }
  void after_fork_child() override { inner_->after_fork_child(); }
  void release_inherited() override { inner_->release_inherited(); }

 private:
  std::unique_ptr<dev::DeviceBackend> inner_;
  std::shared_ptr<Session> session_;
};

// A hal backend with every device of `count` opened, or the failure (nothing left open).
dev::Result open_with_devices(int32_t count, dev::BackendListener* listener,
                              std::unique_ptr<dev::DeviceBackend>* out) {
  dev::BackendOptions options;
  options.hal.library = kFakeHal;
  std::unique_ptr<dev::DeviceBackend> be;
  if (dev::Result r = dev::open_device_backend("hal", options, listener, &be); !r.ok()) return r;
  for (int32_t d = 0; d < count; ++d) {
    if (dev::Result r = be->devices().open(d); !r.ok()) {
      for (int32_t o = 0; o < d; ++o) (void)be->devices().close(o);
      return r;
    }
  }
  *out = std::move(be);
  return dev::Result::success();
}

// ---- the second process (PeerProcess): a forked child that opens a hal backend of its own (the
// fake starts a forked child with no device open, hal.md §1.4) and obeys the parent's calls, one
// fixed-size message each way over two pipes (pipe_peer.h), as for emu.

using pipe_peer::Answer;
using pipe_peer::Call;
using pipe_peer::Op;
using pipe_peer::write_all;

// The child's side: first answers with its backend's result and bare tgid, then serves calls
// until kExit or the parent goes. The process ends without releasing anything.
[[noreturn]] void serve(const Machine& machine, int in, int out) {
  testing::RecordingListener listener;
  std::unique_ptr<dev::DeviceBackend> be;
  const dev::Result opened = open_with_devices(machine.device_count, &listener, &be);
  Answer hello{};
  hello.result = opened.raw();
  hello.value = opened.ok() ? static_cast<uint64_t>(be->devices().bare_tgid()) : 0;
  if (!write_all(out, &hello, sizeof hello) || !opened.ok()) ::_exit(2);
  const Driver& d = machine.driver;
  dev::PhysicalId imported;
  Call call{};
  while (pipe_peer::read_all(in, &call, sizeof call)) {
    Answer answer{};
    dev::Result r;
    switch (call.op) {
      case Op::kImport: {
        dev::ImportedMemory got;
        r = be->sharing().import_memory(dev::ShareToken{call.token}, call.device, &got);
        if (r.ok()) imported = got.memory;
        break;
      }
      case Op::kRead:
        r = through_mapping(d, imported, call.offset, answer.bytes, call.size, false);
        break;
      case Op::kFill: {
        std::vector<uint8_t> bytes(call.size, call.value);
        r = through_mapping(d, imported, call.offset, bytes.data(), bytes.size(), true);
        break;
      }
      case Op::kSetPids:
        r = be->sharing().set_pids(dev::ShareToken{call.token}, &call.pid, 1);
        break;
      case Op::kExportNew: {
        dev::PhysicalId id;
        r = be->physical().create(dev::PhysicalSpec{dev::Location::device(call.device),
                                                     dev::PageType::kHuge, dev::MemType::kHbm,
                                                     call.size},
                                  &id);
        if (!r.ok()) break;
        std::vector<uint8_t> bytes(call.size, call.value);
        r = through_mapping(d, id, 0, bytes.data(), bytes.size(), true);
        dev::ShareToken token;
        if (r.ok()) r = be->sharing().export_memory(id, &token);
        if (r.ok()) r = be->sharing().set_pids(token, &call.pid, 1);
        answer.value = token.value;
        break;
      }
      case Op::kImportKey: {
        dev::IpcImported got;
        r = be->sharing().ipc_import(call.key, call.device, &got);
        if (r.ok()) {
          imported = got.memory.memory;
          answer.value = got.offset;
        }
        break;
      }
      case Op::kSetKeyPids:
        r = be->sharing().ipc_set_pids(call.key, &call.pid, 1);
        break;
      case Op::kCloseKey:
        r = be->sharing().ipc_close_export(call.key);
        break;
      case Op::kExit:
        ::_exit(0);  // nothing released: the process just ends
    }
    answer.result = r.raw();
    if (!write_all(out, &answer, sizeof answer)) break;
  }
  ::_exit(0);
}

std::unique_ptr<PeerProcess> start_hal_peer(const Machine& machine, dev::DeviceBackend& current) {
  // hal's fork hooks hold nothing: the fake driver library resets itself in the child.
  return pipe_peer::start(current, [&machine](int in, int out) { serve(machine, in, out); });
}

// ---- the harness

int count_entries(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

class HalHarness final : public Harness {
 public:
  HalHarness() {
    char pattern[] = "/tmp/aclvmm-conformance-XXXXXX";
    if (::mkdtemp(pattern) != nullptr) dir_ = pattern;
  }
  ~HalHarness() override {
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

  std::string unavailable(const BackendSetup& setup) override {
    const Machine& m = machine_for(setup);
    if (!m.error.empty()) return m.error;
    if (m.device_count == setup.device_count && m.device_memory == setup.device_memory) {
      return "";
    }
    return "the fake driver library reads its machine once per process and was loaded with " +
           describe_machine(m.device_count, m.device_memory) + " by an earlier case; this " +
           "case wants " + describe_machine(setup.device_count, setup.device_memory) +
           " (run it on its own)";
  }

  dev::Result open(const BackendSetup& setup, dev::BackendListener* listener,
                   std::unique_ptr<dev::DeviceBackend>* out) override {
    if (!unavailable(setup).empty()) return dev::Result::from_errno(EOPNOTSUPP);
    Session& s = session(setup);
    std::unique_ptr<dev::DeviceBackend> be;
    if (s.backend_came()) {
      s.close_devices();  // a broken earlier case may have left some open
      dev::Result r = open_with_devices(s.device_count(), listener, &be);
      if (r.ok()) {
        s.restore_ranges();
      } else {
        s.backend_gone();
        return r;
      }
    } else {
      // Another backend of this case lives: the devices are open already.
      dev::BackendOptions options;
      options.hal.library = kFakeHal;
      if (dev::Result r = dev::open_device_backend("hal", options, listener, &be); !r.ok()) {
        s.backend_gone();
        return r;
      }
    }
    *out = std::make_unique<CaseBackend>(std::move(be), session_);
    return dev::Result::success();
  }

  dev::Result read_physical(dev::PhysicalId memory, uint64_t offset, void* dst,
                            size_t n) override {
    if (!session_) return dev::Result::from_errno(ENODEV);
    return through_mapping(session_->driver(), memory, offset, dst, n, false);
  }
  dev::Result write_physical(dev::PhysicalId memory, uint64_t offset, const void* src,
                             size_t n) override {
    if (!session_) return dev::Result::from_errno(ENODEV);
    return through_mapping(session_->driver(), memory, offset, const_cast<void*>(src), n, true);
  }

  // hal's HostServices are the POSIX ones emu uses (drivers/host/).
  std::string segment_dir() override { return dir_; }
  std::string missing_dir() override { return dir_ + "/missing"; }
  bool segment_visible(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
  int32_t own_pid() override { return static_cast<int32_t>(::getpid()); }
  uint32_t own_uid() override { return static_cast<uint32_t>(::geteuid()); }

  std::string held_resources() override {
    // The fake keeps each physical object and block as an emulator memfd (a descriptor) and each
    // CPU view as a memfd mapping: the driver objects the backend made, seen from outside. Its
    // other descriptors (the share listener's socket, userfaultfd) are the driver's own and come
    // and go with its threads, so they are not counted.
    int objects = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (dirent* e = ::readdir(d)) {
        char target[64] = {};
        const std::string link = std::string("/proc/self/fd/") + e->d_name;
        if (::readlink(link.c_str(), target, sizeof target - 1) > 0) {
          objects += std::strncmp(target, "/memfd:", 7) == 0;
        }
      }
      ::closedir(d);
    }
    int views = 0;
    std::ifstream in("/proc/self/maps");
    for (std::string line; std::getline(in, line);) {
      views += line.find("/memfd:") != std::string::npos;
    }
    return "memfd descriptors " + std::to_string(objects) + ", memfd mappings " +
           std::to_string(views) + ", segment files " + std::to_string(count_entries(dir_));
  }
  std::string machine_resources() override {
    return held_resources() + ", threads " + std::to_string(thread_count());
  }

  // From the driver itself, not through the backend: the range must outlive the case's backend
  // (C48 maps into it after a second open) and no "dev.*" rule of the case may refuse it.
  uint64_t reserve_va(uint64_t size) override {
    return session_ ? session_->reserve(size) : 0;
  }

  // As emu's harness: the touch is tried in a forked child first (the fake resets its driver
  // state there and the child touches only memory), so a fault ends the child, not the suite.
  dev::Result cpu_access(uint64_t va, void* buffer, size_t n, bool write) override {
    void* at = reinterpret_cast<void*>(va);
    aclvmm_test::settle_threads_before_fork();
    const pid_t child = ::fork();
    if (child < 0) return dev::Result::from_errno(errno);
    if (child == 0) {
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
    if (!unavailable(setup).empty()) return nullptr;
    return start_hal_peer(machine_for(setup), current);
  }

  const DriverTraits& traits() override {
    static const DriverTraits hal = [] {
      DriverTraits t;
      // The kernel's EACCES reaches the HAL's caller as IOCRL_FAIL(17), like EADDRINUSE, EINTR,
      // EIO and the rest (hal.md §3.0; §3.5 names it for each whitelist refusal).
      t.not_permitted = dev::Condition::kOther;
      // drvMemGetAttribute in a reservation never mapped: INVALID_HANDLE(4) (hal.md §3.7, §3.10).
      t.unmapped_query = dev::Condition::kBadAddress;
      // The HAL's range checks (INVALID_VALUE) and the kernel's EINVAL (PARA_ERROR) (§3.9).
      t.outside_managed = dev::Condition::kInvalidArgument;
      // drvMemcpy / drvMemsetD8 answer one code for the whole request, the kernel's EINVAL as
      // PARA_ERROR (hal.md §3.11, §3.0).
      t.copy_fault = dev::Condition::kInvalidArgument;
      // The driver refuses memory calls before a device is open (hal.md §2): see open().
      t.devices_open = true;
      // halMemGetInfo needs an open device and properties() must work before (hal.md §2,
      // §3.10); the core takes the product's figure.
      t.memory_in_properties = false;
      // halDeviceCanAccessPeer(canAccess, dev, peerPhyId) asks the hardware, by physical id; no
      // call of hal.md reports the links halDeviceEnableP2P made.
      t.peer_links_reported = false;
      // The driver knows the routes of its chip only (NOT_EXIST for the others, hal.md §3.8).
      t.every_route = false;
      // FABRIC export needs a super-pod part's server id (hal.md §3.5: NOT_SUPPORT without).
      t.fabric_needs_server_id = true;
      // halMemMap: offset != 0 is INVALID_VALUE (hal.md §3.3); the core never passes one.
      t.map_offsets = false;
      // halMemGetAllocationPropertiesFromHandle has no size (hal.md §3.7).
      t.import_sizes = false;
      // halMemAlloc gives an address, no handle and no span (hal.md §3.12; docs/hal.md §7), and
      // the driver reports a block's page-rounded size (behavior.md §9).
      t.block_objects = false;
      // halHostRegister is not part of hal.md's interface (docs/hal.md §4).
      t.host_registration = false;
      return t;
    }();
    return hal;
  }

 private:
  Session& session(const BackendSetup& setup) {
    if (!session_) session_ = std::make_shared<Session>(machine_for(setup));
    return *session_;
  }

  std::string dir_;
  std::shared_ptr<Session> session_;
};

}  // namespace
}  // namespace hal_harness

std::unique_ptr<Harness> make_hal_harness() {
  return std::make_unique<hal_harness::HalHarness>();
}

}  // namespace aclvmm::conformance
