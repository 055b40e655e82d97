#include "runtime/runtime.h"

#include <pthread.h>

#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>

#include "acl/acl_rt.h"
#include "base/json_check.h"
#include "observability/log.h"
#include "observability/trace.h"
#include "runtime/core_listener.h"
#include "runtime/injection.h"
#include "runtime/kernel_registry.h"
#include "runtime/smi_publisher.h"
#include "runtime/stats_snapshot.h"
#include "runtime/vendor_runtime.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

// Set while this thread's runtime start loads the kernel libraries (start_locked).
thread_local bool t_loading_kernel_libraries = false;

// The calling thread's current context (the vendor keeps it per thread too).
thread_local std::shared_ptr<Context> t_context;

// The process's runtime: replaced only in a forked child, by the fork handler, while the child
// has a single thread.
std::atomic<Runtime*> g_runtime{nullptr};
// atexit handlers are inherited over fork: one registration serves every runtime of the image.
std::atomic<bool> g_exit_registered{false};
// Set when the exit handlers start: from then on nothing starts the runtime again. A thread still
// inside an API call while another thread runs exit() (a kernel calling exit(), say) would
// otherwise open a new backend with the C library's and libnuma's state already going away.
std::atomic<bool> g_process_exiting{false};

Context* live_context() {
  Context* c = t_context.get();
  return c && c->alive.load(std::memory_order_acquire) ? c : nullptr;
}

// An atexit callback takes no argument: the process-wide hook is the one place besides the
// singleton's own accessor and the fork handlers where the core looks the runtime up.
void at_exit() {
  g_process_exiting.store(true, std::memory_order_release);
  Runtime& rt = Runtime::get();
  write_stats_file_at_exit(rt);
  rt.teardown("process exit without aclFinalize");
  SmiPublisher::get().remove();
}

// A table's tag for the runtime `generation` forks below the first: the low byte names the table
// (distinct for all three), the high byte counts forks, so no token a parent issued is ever a
// token of its child's tables (until 256 nested forks).
uint16_t fork_tag(uint16_t tag, uint32_t generation) {
  return static_cast<uint16_t>((tag & 0xffu) | ((((tag >> 8) + generation) & 0xffu) << 8));
}

// Beside the vendor runtime, the calling thread's current device and context are the vendor's
// (hal.md §6.2 rule 2).
VendorFunction g_vendor_get_device{"aclrtGetDevice"};
VendorFunction g_vendor_get_context{"aclrtGetCurrentContext"};

ShareService& process_sharing() {
  static ShareService* service = new ShareService();  // never destroyed, like the runtime
  return *service;
}

// Aborts streams taken out of the tables (after mu_ is released). A stream whose task is the
// caller (exit() from a kernel) is kept alive: its worker's frames are still on this stack.
void abort_streams(std::vector<std::shared_ptr<Stream>>& streams) {
  for (auto& stream : streams) {
    stream->abort();
    if (Stream::running() == stream.get()) new std::shared_ptr<Stream>(stream);  // leaked on purpose
  }
  streams.clear();
}

}  // namespace

Runtime::Runtime(uint32_t generation)
    : generation_(generation),
      physical_(fork_tag(0x7a11, generation)),
      contexts_(fork_tag(0xc0c1, generation)),
      streams_(fork_tag(0x57e4, generation)),
      sharing_(process_sharing()),
      managed_(*this),
      host_registrations_(*this),
      ipc_keys_(*this, space_),
      vmm_(*this, space_, physical_, sharing_, managed_, &host_registrations_, &ipc_keys_),
      memory_ops_(*this, space_, managed_),
      kernels_(*this, fork_tag(0xb1b1, generation), fork_tag(0xf0f0, generation),
               fork_tag(0xa9a9, generation)) {}

ProductRules Runtime::rules() const {
  const Config& cfg = config();  // one snapshot for every answer
  ProductRules r;
  r.soc = &cfg.product.soc;
  r.no_uc_reserve = cfg.product.supports(Feature::kNoUcReserve);
  r.expect_ptr = cfg.product.supports(Feature::kExpectPtr);
  r.no_access_mappings = cfg.interconnect != Interconnect::kPcie ||
                         cfg.product.supports(Feature::kNoAccessOverPcie);
  r.huge_1g_pages = cfg.product.supports(Feature::kHuge1GPages);
  r.quirks = cfg.quirks_vendor;
  r.host_register = cfg.product.supports(Feature::kHostRegister);
  r.align32_pads = cfg.product.family == Family::k950;
  r.ipc_memory = cfg.product.supports(Feature::kIpcMemory);
  r.ipc_memory_a3 = cfg.product.supports(Feature::kIpcMemoryA3);
  return r;
}

Runtime& Runtime::get() {
  if (Runtime* rt = g_runtime.load(std::memory_order_acquire)) return *rt;
  // Never destroyed: calls may come from late destructors.
  static const bool created = [] {
    g_runtime.store(new Runtime(0), std::memory_order_release);
    pthread_atfork(&Runtime::fork_prepare, &Runtime::fork_parent, &Runtime::fork_child);
    return true;
  }();
  (void)created;
  return *g_runtime.load(std::memory_order_acquire);
}

void Runtime::replace_in_forked_child() {
  Runtime* inherited = g_runtime.load(std::memory_order_relaxed);
  if (!inherited) return;
  Runtime* fresh = new Runtime(inherited->generation_ + 1);
  fresh->inherited_ = inherited;
  g_runtime.store(fresh, std::memory_order_release);
  // The forking thread's current context is the parent's; every other thread is gone.
  (void)new std::shared_ptr<Context>(std::move(t_context));  // leaked: the object is the parent's
}

void Runtime::release_inherited() {
  // The backends give back the windows and no-UC ranges they claimed (emu remembers where they
  // were, so that the child's new backend claims them there).
  for (Runtime* r = inherited_; r; r = r->inherited_) {
    if (r->device_) r->device_->release_inherited();
  }
  inherited_ = nullptr;
}

// Every entry that takes the runtime's lock asks this first: the thread that starts the runtime
// holds it while a kernel library's constructor runs, so a call from there would wait for itself.
static Status refuse_from_kernel_library_constructor() {
  if (!t_loading_kernel_libraries) return Status::Ok();
  return Error(kAclInvalidParam,
               "called from the constructor of an ACLVMM_KERNEL_LIBS library while the runtime "
               "starts: such a constructor may only register kernels (aclvmmRegisterKernel)");
}

Status Runtime::start() {
  if (started_.load(std::memory_order_acquire)) return Status::Ok();
  ACLVMM_RETURN_IF_ERROR(refuse_from_kernel_library_constructor());
  std::lock_guard lock(mu_);
  return start_locked();
}

Status Runtime::start_locked() {
  mu_.assert_held();
  if (started_.load()) return Status::Ok();
  if (g_process_exiting.load(std::memory_order_acquire)) {
    return Error(kAclInternalError, "the process is exiting: the runtime does not start again");
  }
  log::reconfigure();
  ACLVMM_ASSIGN_OR_RETURN(Config cfg, load_config());
  // Armed before the backend's first steps, so that ACLVMM_FAULTS reaches the window claims too.
  injection_reset(cfg.injections);
  // The kernel libraries' constructors register kernels; one that makes another ACL call waits
  // for this start, so such a call fails at once instead (start()).
  t_loading_kernel_libraries = true;
  Status loaded = KernelRegistry::get().load_libraries(cfg.kernel_libs);
  t_loading_kernel_libraries = false;
  ACLVMM_RETURN_IF_ERROR(loaded);
  if (!attached_) {
    // This object's first start (a forked child's included): the parent's windows go first, so
    // that ours land where the parent's were (the vendor's addresses, unless a sanitizer had
    // them placed elsewhere).
    release_inherited();
    sharing_.attach(&physical_, this);
    attached_ = true;
    if (!g_exit_registered.exchange(true)) std::atexit(at_exit);
  }
  // The device backend follows each start's configuration (device count and memory, open mode);
  // it opens before the snapshot is published, so a refused open publishes nothing. Its open
  // places the windows (the process's first open claims them, D9).
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<dev::DeviceBackend> opened, open_device(cfg));
  if (opened->capabilities().driver_reports_machine) {
    // A real driver (hal) says how many devices there are and what they are.
    dev::DeviceProperties first;
    std::string soc;
    if (opened->devices().properties(0, &first).ok()) soc = first.soc_name;
    ACLVMM_RETURN_IF_ERROR(adopt_driver_machine(cfg, opened->devices().device_count(), soc));
    // The chips' own numbers, which the id conversions give (runtime-extra.md §4).
    cfg.physical_ids.clear();
    for (int d = 0; d < cfg.device_count; ++d) {
      dev::DeviceProperties p;
      cfg.physical_ids.push_back(
          opened->devices().properties(d, &p).ok() ? static_cast<int>(p.physical_id) : d);
    }
  }
  const bool beside_vendor = opened->capabilities().beside_vendor_runtime;
  {
    std::lock_guard device_lock(device_mu_);
    device_ = std::move(opened);
  }
  ACLVMM_ASSIGN_OR_RETURN(const Config* published, config_.publish(std::move(cfg)));
  beside_vendor_.store(beside_vendor, std::memory_order_release);
  driver_reports_machine_.store(device_->capabilities().driver_reports_machine,
                                std::memory_order_release);
  // The vendor opens the devices, and until it has the driver itself answers the VMM calls with
  // its own "no device opened" code (hal.md §2): the core adds no check of its own.
  if (beside_vendor) set_svm_ready(true);
  const Config& config = *published;
  space_.attach_device(device_);
  managed_.attach(device_->windows().layout().managed);
  devices_.assign(config.device_count, Device{});
  // Best effort: without a segment the pools simply have no mirror.
  std::vector<UsageMirror> mirrors = SmiPublisher::get().publish(device_->host(), config);
  {
    std::lock_guard pools_lock(pools_mu_);
    pools_.clear();
    for (size_t i = 0; i < devices_.size(); ++i) {
      devices_[i].pool = std::make_shared<MemoryPool>(config.device_memory, std::move(mirrors[i]));
      pools_.push_back(devices_[i].pool);
    }
    host_pool_ = std::make_shared<MemoryPool>(device_->host().memory_total());
    connect_pools(device_, pools_, host_pool_);  // the device's ledger is their authority (D8)
  }
  trace::open(config.trace_file);
  started_.store(true, std::memory_order_release);
  ACLVMM_LOG_INFO("RUNTIME", "started: soc {} ({}), {} device(s) of {} bytes, driver {}",
                  config.product.soc, config.product.family_name(), config.device_count,
                  config.device_memory, config.driver);
  return Status::Ok();
}

Status Runtime::init(const char* config_path) {
  ACLVMM_RETURN_IF_ERROR(refuse_from_kernel_library_constructor());
  std::lock_guard lock(mu_);
  std::string content;
  if (config_path) {
    std::ifstream in(config_path);
    if (!in) return Error(kAclInvalidFile, std::string("cannot read the config file ") + config_path);
    std::stringstream ss;
    ss << in.rdbuf();
    content = ss.str();
  }
  if (init_refs_ > 0) {
    if (content != init_config_) {
      return Error(kAclInvalidParam,
                   "aclInit was already called with another configuration; call aclFinalize first");
    }
    ++init_refs_;
    return Error(kAclRepeatInitialize, "aclInit was already called; the call is counted");
  }
  if (!content.empty()) {
    std::string why;
    if (!json_config_valid(content, &why)) {
      return Error(kAclParseFile, std::string("the config file ") + config_path +
                                                    " is not valid JSON: " + why);
    }
  }
  ACLVMM_RETURN_IF_ERROR(start_locked());
  init_config_ = content;
  init_refs_ = 1;
  return Status::Ok();
}

Status Runtime::finalize() {
  // Finalising joins every stream's worker, the caller's own included.
  if (Stream::running()) return Stream::refuse_from_task(Stream::kWouldDestroy);
  ACLVMM_RETURN_IF_ERROR(refuse_from_kernel_library_constructor());
  std::unique_lock lock(mu_);
  if (init_refs_ == 0) {
    return Error(kAclRepeatFinalize, "aclFinalize without a matching aclInit");
  }
  if (--init_refs_ > 0) return Status::Ok();
  teardown_locked(lock, "aclFinalize");
  return Status::Ok();
}

void Runtime::teardown(const char* why) {
  std::unique_lock lock(mu_);
  teardown_locked(lock, why);
}

void Runtime::teardown_locked(std::unique_lock<LifetimeMutex>& lock, const char* why) {
  mu_.assert_held();
  if (!started_.load() || tearing_down_) return;
  tearing_down_ = true;  // a teardown racing this one (exit during aclFinalize) leaves it alone
  // Exports end first so that no importer is served from memory being torn down.
  for (const std::string& line : ipc_keys_.release_all()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: {}", why, line);
  }
  if (size_t n = sharing_.live_exports()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: ending {} export(s) still open", why, n);
  }
  sharing_.shutdown();
  // Streams stop before any memory goes: their tasks may be using it. Their workers are joined
  // with mu_ released, since a task may be calling back into the runtime and waiting for mu_;
  // streams such a task creates meanwhile are taken by the next round.
  for (auto streams = streams_.snapshot(); !streams.empty(); streams = streams_.snapshot()) {
    std::vector<std::shared_ptr<Stream>> doomed;
    for (auto& [token, stream] : streams) {
      streams_.remove(token);
      doomed.push_back(std::move(stream));
    }
    lock.unlock();
    abort_streams(doomed);
    lock.lock();
  }
  for (auto& [token, ctx] : contexts_.snapshot()) {
    ctx->alive.store(false);
    contexts_.remove(token);
  }
  for (auto& mask : peer_masks_) mask.store(0);
  for (const HostRegistration& r : host_registrations_.release_all()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: unregistering host memory of {} bytes at 0x{:x} registered by "
                    "aclrtHostRegister for device {}", why, r.size, r.base, r.device);
  }
  for (const std::string& path : kernels_.release_all()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: unloading kernel binary {} loaded by aclrtBinaryLoadFromFile",
                    why, path);
  }
  trace::flush();
  for (const AddressRange& r : managed_.release_all()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: releasing managed allocation of {} bytes at 0x{:x} created by "
                    "aclrtMemAllocManaged", why, r.size, r.base);
  }
  for (auto& region : space_.clear()) {
    const bool vmm = region->kind == RegionKind::kReservation ||
                     region->kind == RegionKind::kNoUcReservation;
    if (vmm) {
      // One line per mapping, but a million leaked mappings must not flood the log.
      constexpr size_t kListed = 64;
      size_t n = 0;
      for (const auto& [va, m] : region->mappings) {
        if (n++ == kListed) break;
        ACLVMM_LOG_WARN("RUNTIME", "{}: unmapping mapping of {} bytes at 0x{:x} created by {}", why,
                        m.size, m.va, m.created_by);
      }
      if (region->mappings.size() > kListed) {
        ACLVMM_LOG_WARN("RUNTIME", "{}: ... and {} more mapping(s) in the reservation at 0x{:x}", why,
                        region->mappings.size() - kListed, region->base);
      }
    }
    ACLVMM_LOG_WARN("RUNTIME", "{}: releasing {} of {} bytes at 0x{:x} created by {}", why,
                    vmm ? "reservation" : "allocation", region->size, region->base,
                    region->created_by);
  }
  for (auto& [token, phys] : physical_.snapshot()) {
    ACLVMM_LOG_WARN("RUNTIME", "{}: releasing physical handle of {} bytes created by {}", why,
                    phys->size, phys->created_by);
    physical_.remove(token);
  }
  for (size_t i = 0; i < devices_.size(); ++i) close_device_locked(static_cast<int>(i));
  devices_.clear();
  {
    std::lock_guard pools_lock(pools_mu_);
    pools_.clear();
  }
  std::shared_ptr<dev::DeviceBackend> closing;
  {
    std::lock_guard device_lock(device_mu_);
    closing = std::move(device_);
  }
  closing.reset();  // closed with the last memory that still holds it
  SmiPublisher::get().deactivate();
  set_svm_ready(false);
  beside_vendor_.store(false, std::memory_order_release);
  driver_reports_machine_.store(false, std::memory_order_release);
  handle_aliases_.clear();
  init_refs_ = 0;
  init_config_.clear();
  tearing_down_ = false;
  started_.store(false);
}

StatusOr<int> Runtime::physical_device(int32_t user_id) const {
  const Config& cfg = config();  // one snapshot for the check and the answer
  if (!cfg.visible_error.empty()) return Error(ACL_ERROR_RT_INVALID_DEVICEID, cfg.visible_error);
  const int count = static_cast<int>(cfg.visible.size());
  if (user_id < 0 || user_id >= count) {
    return Error(ACL_ERROR_RT_INVALID_DEVICEID, "device id " + std::to_string(user_id) +
                                                    " is out of range [0, " +
                                                    std::to_string(count) + ")");
  }
  return cfg.visible[user_id];
}

int Runtime::user_device(int physical_id) const {
  const Config& cfg = config();
  for (size_t i = 0; i < cfg.visible.size(); ++i) {
    if (cfg.visible[i] == physical_id) return static_cast<int>(i);
  }
  return physical_id;
}

std::shared_ptr<MemoryPool> Runtime::pool(int physical_id) const {
  std::shared_lock lock(pools_mu_);
  if (physical_id < 0 || physical_id >= static_cast<int>(pools_.size())) return nullptr;
  return pools_[physical_id];
}

bool Runtime::pool_space(int physical_id, uint64_t* total, uint64_t* free) const {
  std::shared_lock lock(pools_mu_);
  if (physical_id < 0 || physical_id >= static_cast<int>(pools_.size())) return false;
  const MemoryPool& pool = *pools_[physical_id];
  *total = pool.total();
  *free = pool.total() - pool.used();
  return true;
}

std::shared_ptr<MemoryPool> Runtime::host_pool() const {
  std::shared_lock lock(pools_mu_);
  return host_pool_;
}

Status Runtime::set_device(int32_t user_id) {
  std::lock_guard lock(mu_);
  ACLVMM_ASSIGN_OR_RETURN(const int phys, physical_device(user_id));
  Device& d = devices_[phys];
  if (!contexts_.find(d.primary_context)) {
    ACLVMM_ASSIGN_OR_RETURN(d.primary_context, create_context_locked(phys, true));
  }
  ++d.open_count;
  t_context = contexts_.find(d.primary_context);
  set_svm_ready(true);
  return Status::Ok();
}

Status Runtime::reset_device(int32_t user_id, bool force) {
  std::vector<std::shared_ptr<Stream>> doomed;
  {
    std::lock_guard lock(mu_);
    ACLVMM_ASSIGN_OR_RETURN(const int phys, physical_device(user_id));
    Device& d = devices_[phys];
    const int remaining = force || d.open_count <= 1 ? 0 : d.open_count - 1;
    if (remaining == 0 && d.primary_context != 0 && Stream::running() &&
        Stream::running()->context() == d.primary_context) {
      return Stream::refuse_from_task(Stream::kWouldDestroy);
    }
    d.open_count = remaining;
    if (d.open_count == 0 && d.primary_context != 0) {
      doomed = destroy_context_locked(d.primary_context);
      d.primary_context = 0;
      peer_masks_[phys].store(0);
      // The device's last reference: its host registrations go (runtime-extra.md §5).
      (void)host_registrations_.release_device(phys);
      // Its IPC imports close and the keys exported from it end (runtime-extra.md §3.6).
      ipc_keys_.release_device(phys);
      close_device_locked(phys);
    }
  }
  abort_streams(doomed);
  return Status::Ok();
}

Status Runtime::forwarded_set_device(int32_t user_id) {
  std::lock_guard lock(mu_);
  ACLVMM_ASSIGN_OR_RETURN(const int phys, physical_device(user_id));
  ++devices_[phys].vendor_refs;
  return Status::Ok();
}

Status Runtime::forwarded_reset_device(int32_t user_id, bool force) {
  std::lock_guard lock(mu_);
  ACLVMM_ASSIGN_OR_RETURN(const int phys, physical_device(user_id));
  Device& d = devices_[phys];
  d.vendor_refs = force || d.vendor_refs <= 1 ? 0 : d.vendor_refs - 1;
  if (d.vendor_refs == 0) {
    // The vendor's close destroyed the device's state in the driver (hal.md §2): what aclvmm
    // remembers about the device goes with it.
    peer_masks_[phys].store(0);
    (void)host_registrations_.release_device(phys);
    ipc_keys_.release_device(phys);
  }
  return Status::Ok();
}

StatusOr<int> Runtime::vendor_current_device() const {
  const auto get_device = g_vendor_get_device.as<int (*)(int32_t*)>();
  if (get_device == nullptr) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "the vendor runtime beside aclvmm has no aclrtGetDevice to give the current "
                 "device");
  }
  int32_t user_id = -1;
  if (const int code = get_device(&user_id); code != ACL_SUCCESS) {
    return Error(code, "the vendor runtime gives the calling thread no current device (" +
                           std::to_string(code) + "); call aclrtSetDevice first");
  }
  return physical_device(user_id);
}

StatusOr<uint64_t> Runtime::current_context() const {
  if (beside_vendor_.load(std::memory_order_acquire)) {
    const auto get_context = g_vendor_get_context.as<int (*)(void**)>();
    void* context = nullptr;
    const int code = get_context == nullptr ? ACL_ERROR_RT_CONTEXT_NULL : get_context(&context);
    if (code == ACL_SUCCESS && context != nullptr) return reinterpret_cast<uint64_t>(context);
    return Error(code == ACL_SUCCESS ? ACL_ERROR_RT_CONTEXT_NULL : code,
                 "the vendor runtime gives the calling thread no current context; call "
                 "aclrtSetDevice or aclrtSetCurrentContext first");
  }
  if (Context* c = live_context()) return c->token;
  return Error(ACL_ERROR_RT_CONTEXT_NULL,
               "the calling thread has no current context; call aclrtSetDevice or "
               "aclrtSetCurrentContext first");
}

StatusOr<int> Runtime::current_device() const {
  if (beside_vendor_.load(std::memory_order_acquire)) return vendor_current_device();
  Context* ctx = live_context();
  if (!ctx) {
    return Error(ACL_ERROR_RT_CONTEXT_NULL,
                 "the calling thread has no current device; call aclrtSetDevice first");
  }
  return ctx->device;
}

Accessor Runtime::accessor() const {
  Accessor a;
  if (beside_vendor_.load(std::memory_order_acquire)) {
    const StatusOr<int> device = vendor_current_device();
    if (!device.ok()) return a;
    return accessor_for(*device);
  }
  Context* ctx = live_context();
  if (!ctx) return a;
  a.device = ctx->device;
  a.peer_mask = peer_masks_[a.device].load(std::memory_order_relaxed);
  return a;
}

Accessor Runtime::accessor_for(int physical_device) const {
  Accessor a;
  a.device = physical_device;
  a.peer_mask = peer_masks_[physical_device].load(std::memory_order_relaxed);
  return a;
}

StatusOr<uint64_t> Runtime::create_context(int physical_device, bool primary) {
  std::lock_guard lock(mu_);
  return create_context_locked(physical_device, primary);
}

StatusOr<uint64_t> Runtime::create_context_locked(int physical_device, bool primary) {
  mu_.assert_held();
  // The first context on a device opens it in the driver (hal.md §2: what the vendor runtime
  // does at its first aclrtSetDevice); a refused open leaves no context behind.
  Device& d = devices_[physical_device];
  if (!d.driver_open) {
    const dev::Result opened = device_->devices().open(physical_device);
    if (!opened.ok()) {
      return device_error(*device_, opened,
                          "device " + std::to_string(physical_device) + " could not be opened");
    }
    d.driver_open = true;
  }
  auto ctx = std::make_shared<Context>();
  ctx->device = physical_device;
  ctx->primary = primary;
  uint64_t token = contexts_.insert(ctx);
  ctx->token = token;
  set_svm_ready(true);
  if (!primary) t_context = ctx;
  return token;
}

bool Runtime::driver_memory_info(int physical_device, int attr, size_t* free, size_t* total,
                                 Status* error) const {
  if (!driver_reports_machine()) return false;  // no shared_ptr copy on the software backends
  const std::shared_ptr<dev::DeviceBackend> backend = device_;
  if (!backend || !backend->capabilities().driver_reports_machine) return false;
  // hal.md §3.10: which MEM_INFO_TYPE an aclrtMemAttr asks for, and which fields answer it.
  dev::MemoryKind kind = dev::MemoryKind::kHbm;
  switch (attr) {
    case 0: case 2: case 3: kind = dev::MemoryKind::kDdr; break;
    case 6: case 7: kind = dev::MemoryKind::kP2pDdr; break;
    case 8: case 9: case 11: case 15: case 16: case 17: kind = dev::MemoryKind::kP2pHbm; break;
    default: kind = dev::MemoryKind::kHbm; break;
  }
  dev::MemoryInfo info;
  const dev::Result r = backend->devices().memory_info(physical_device, kind, &info);
  if (!r.ok()) {
    *error = device_error(*backend, r, "the driver reported no memory information");
    return true;
  }
  // The interface's total/free are both pools together (the backend added the driver's normal
  // and huge pools), so the normal pool alone is what the huge one leaves.
  switch (attr) {
    case 0: case 1:  // DDR, HBM: both page pools
      *free = info.free;
      *total = info.total;
      break;
    case 2: case 4: case 6: case 8: case 13: case 16:  // the *_HUGE attributes
      *free = info.huge_free;
      *total = info.huge_total;
      break;
    case 10: case 11: case 14: case 17:  // the *_HUGE1G attributes
      *free = info.giant_free;
      *total = info.giant_total;
      break;
    default:  // the *_NORMAL attributes: the normal pool
      *free = info.free - info.huge_free;
      *total = info.total - info.huge_total;
      break;
  }
  *error = Status::Ok();
  return true;
}

void Runtime::close_device_locked(int physical_device) {
  mu_.assert_held();
  Device& d = devices_[physical_device];
  if (!d.driver_open) return;
  // Another context still on the device keeps it open (closed at teardown then): a driver close
  // destroys every block of the device (hal.md §2).
  for (auto& [token, ctx] : contexts_.snapshot()) {
    if (ctx->device == physical_device && ctx->alive.load() && !tearing_down_) return;
  }
  d.driver_open = false;
  const dev::Result closed = device_->devices().close(physical_device);
  if (!closed.ok()) {
    ACLVMM_LOG_WARN("RUNTIME", "device {} could not be closed: {}", physical_device,
                    device_->describe(closed));
  }
}

std::vector<std::shared_ptr<Stream>> Runtime::destroy_context_locked(uint64_t token) {
  mu_.assert_held();
  std::vector<std::shared_ptr<Stream>> doomed;
  for (auto& [stoken, stream] : streams_.snapshot()) {
    if (stream->context() == token) {
      streams_.remove(stoken);
      doomed.push_back(std::move(stream));
    }
  }
  if (auto ctx = contexts_.remove(token)) ctx->alive.store(false, std::memory_order_release);
  if (t_context && t_context->token == token) t_context.reset();
  return doomed;
}

Status Runtime::destroy_context(uint64_t token) {
  std::vector<std::shared_ptr<Stream>> doomed;
  {
    std::lock_guard lock(mu_);
    auto ctx = contexts_.find(token);
    if (!ctx) return Error(ACL_ERROR_RT_PARAM_INVALID, "the context is not a live context");
    if (ctx->primary) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "the default context of a device is released by aclrtResetDevice, not "
                   "aclrtDestroyContext");
    }
    if (Stream::running() && Stream::running()->context() == token) {
      return Stream::refuse_from_task(Stream::kWouldDestroy);
    }
    doomed = destroy_context_locked(token);
  }
  abort_streams(doomed);
  return Status::Ok();
}

Status Runtime::set_current_context(uint64_t token) {
  auto ctx = contexts_.find(token);
  if (!ctx) return Error(ACL_ERROR_RT_PARAM_INVALID, "the context is not a live context");
  t_context = std::move(ctx);
  return Status::Ok();
}

StatusOr<std::shared_ptr<Stream>> Runtime::new_stream(const std::shared_ptr<Context>& ctx) {
  // The worker runs with the stream's context current, so that a task's own calls (a kernel
  // copying, allocating or launching more work) act for the stream's device.
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream,
                          Stream::create(device_, ctx->device, ctx->token,
                                         [ctx] { t_context = ctx; }));
  uint64_t token = 0;
  try {
    token = streams_.insert(stream);
  } catch (const std::bad_alloc&) {
    token = 0;
  }
  if (token == 0) {
    stream->abort();  // rollback: the worker goes with the stream
    return Error(ACL_ERROR_RT_NO_STREAM_RESOURCE, "no stream can be created: the stream table is full "
                                                  "or out of memory");
  }
  stream->set_token(token);
  return stream;
}

StatusOr<uint64_t> Runtime::create_stream() {
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t ctx_token, current_context());
  auto ctx = contexts_.find(ctx_token);
  if (!ctx) return Error(ACL_ERROR_RT_CONTEXT_NULL, "the current context was destroyed");
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, new_stream(ctx));
  return stream->token();
}

Status Runtime::destroy_stream(uint64_t token, bool force) {
  auto stream = streams_.find(token);
  if (!stream) return Error(ACL_ERROR_RT_PARAM_INVALID, "the stream is not a live stream");
  // From a task: waiting for any stream, or joining the caller's own worker, would deadlock.
  if (const Stream* running = Stream::running(); running && (!force || running == stream.get())) {
    return Stream::refuse_from_task(force ? Stream::kWouldDestroy : Stream::kWouldWait);
  }
  {
    std::lock_guard lock(mu_);
    auto ctx = contexts_.find(stream->context());
    if (ctx && ctx->default_stream == token) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, "the default stream cannot be destroyed");
    }
  }
  if (!force) (void)stream->synchronize();
  stream->abort();
  streams_.remove(token);
  return Status::Ok();
}

StatusOr<std::shared_ptr<Stream>> Runtime::resolve_stream(uint64_t token) {
  if (beside_vendor_.load(std::memory_order_acquire)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "streams belong to the vendor runtime beside aclvmm: aclvmm runs no stream "
                 "work of its own there");
  }
  if (token != 0) {
    auto stream = streams_.find(token);
    if (!stream) return Error(ACL_ERROR_RT_PARAM_INVALID, "the stream is not a live stream");
    return stream;
  }
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t ctx_token, current_context());
  std::lock_guard lock(mu_);
  auto ctx = contexts_.find(ctx_token);
  if (!ctx) return Error(ACL_ERROR_RT_CONTEXT_NULL, "the current context was destroyed");
  auto stream = streams_.find(ctx->default_stream);
  if (!stream) {
    ACLVMM_ASSIGN_OR_RETURN(stream, new_stream(ctx));
    ctx->default_stream = stream->token();
  }
  return stream;
}

Status Runtime::synchronize_device(int32_t timeout_ms) {
  if (timeout_ms == 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "the timeout must be -1 (none) or a positive number "
                                             "of milliseconds");
  }
  if (Stream::running()) return Stream::refuse_from_task(Stream::kWouldWait);
  ACLVMM_ASSIGN_OR_RETURN(const int dev, current_device());
  // One deadline for the whole call, not one per stream. Every stream is drained first, so that
  // a timeout takes no stream's failure with it (it stays for a later call); then the failures
  // are collected, the first one returned.
  const Stream::Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  auto streams = streams_.snapshot();
  for (auto& [token, stream] : streams) {
    if (stream->device() != dev) continue;
    ACLVMM_RETURN_IF_ERROR(stream->drain(timeout_ms < 0 ? nullptr : &deadline));
  }
  Status first;
  for (auto& [token, stream] : streams) {
    if (stream->device() != dev) continue;
    Status st = stream->synchronize();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status Runtime::synchronize_stream(uint64_t token, int32_t timeout_ms) {
  if (token != 0 && !streams_.find(token)) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, "the stream is not a live stream");
  }
  if (timeout_ms == 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "the timeout must be -1 (none) or a positive number "
                                             "of milliseconds");
  }
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, resolve_stream(token));
  if (timeout_ms < 0) return stream->synchronize();
  const Stream::Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  return stream->synchronize(&deadline);
}

Status Runtime::abort_stream(uint64_t token) {
  std::shared_ptr<Stream> stream;
  if (token != 0) {
    stream = streams_.find(token);
    if (!stream) return Error(ACL_ERROR_RT_INVALID_HANDLE, "the stream is not a live stream");
  } else {
    if (!current_context().ok()) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "NULL names the current context's default stream, and there is no current "
                   "context");
    }
    ACLVMM_ASSIGN_OR_RETURN(stream, resolve_stream(0));
  }
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t context, current_context());
  if (stream->context() != context) {
    return Error(ACL_ERROR_RT_STREAM_CONTEXT,
                 "the stream belongs to another context than the current one");
  }
  const Config& cfg = config();
  if (!cfg.product.supports(Feature::kStreamAbort)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "aclrtStreamAbort is not supported on " + cfg.product.soc);
  }
  stream->cancel();
  return Status::Ok();
}

StatusOr<uint64_t> Runtime::create_stream_with_flags(uint32_t flags) {
  const Config& cfg = config();
  if ((flags & ACL_STREAM_HUGE) != 0 && !cfg.product.supports(Feature::kHugeStream)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "ACL_STREAM_HUGE streams are not supported on " + cfg.product.soc);
  }
  if ((flags & ACL_STREAM_DEVICE_USE_ONLY) != 0 && (flags & ~ACL_STREAM_DEVICE_USE_ONLY) != 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "ACL_STREAM_DEVICE_USE_ONLY cannot be combined with another flag");
  }
  ACLVMM_RETURN_IF_ERROR(current_context().status());
  constexpr uint32_t kNotEmulated =
      ACL_STREAM_PERSISTENT | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
  if ((flags & kNotEmulated) != 0) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "persistent (model capture), CPU-scheduled and device-only streams are not "
                 "emulated (ACL_STREAM_PERSISTENT, ACL_STREAM_CPU_SCHEDULE, "
                 "ACL_STREAM_DEVICE_USE_ONLY)");
  }
  return create_stream();
}

Status Runtime::enable_peer(int peer_physical, bool enable) {
  ACLVMM_ASSIGN_OR_RETURN(const int dev, current_device());
  uint64_t bit = 1ull << peer_physical;
  if (enable) {
    peer_masks_[dev].fetch_or(bit);
  } else {
    peer_masks_[dev].fetch_and(~bit);
  }
  return Status::Ok();
}

void Runtime::enable_peer_pair(int a, int b) {
  if (a < 0 || b < 0 || a >= kMaxDevices || b >= kMaxDevices) return;
  peer_masks_[a].fetch_or(1ull << b);
  peer_masks_[b].fetch_or(1ull << a);
}

}  // namespace aclvmm
