#include "drivers/hal/hal_backend.h"

#include <dlfcn.h>

#include <cstdio>
#include <new>
#include <utility>

namespace aclvmm::dev::hal {
namespace {

// 1 GiB pages need the chip's support, asked as the vendor runtime asks (hal.md §3.1): a
// missing halMemCtl counts as supported.
bool giant_pages_offered(const HalFunctions& fn) {
  if (fn.halMemCtl == nullptr) return true;
  supportFeaturePara in{};
  in.support_feature = CTRL_SUPPORT_GIANT_PAGE_MASK;
  in.devid = 0;
  uint64_t out = 0;
  size_t out_size = sizeof out;
  return fn.halMemCtl(CTRL_TYPE_SUPPORT_FEATURE, &in, sizeof in, &out, &out_size) == DRV_ERROR_NONE;
}

Capabilities capabilities_of(const HalFunctions& fn, bool standalone, bool giant) {
  Capabilities c;
  c.giant_page = giant ? kGiB : 0;
  c.map_without_access = fn.halMemMapNoAccess != nullptr;
  c.access_none_and_read = false;  // the driver refuses NONE and READ grants (hal.md §3.4)
  c.cpu_visible_device_memory = false;
  c.cpu_visible_host_memory = true;
  c.map_routes = fn.halMemHandleSetAttribute != nullptr;
  c.host_tasks = true;            // on the queues' host threads (hal.md §6.3)
  c.copies_check_access = false;  // drvMemcpy takes no executing device: the core checks
  c.host_numa = fn.halSupportFeature != nullptr &&
                fn.halSupportFeature(0, FEATURE_SVM_VMM_NORMAL_GRANULARITY);
  c.sharing =
      fn.halMemExportToShareableHandle != nullptr && fn.halMemImportFromShareableHandle != nullptr;
  c.fabric_sharing = fn.halMemExportToShareableHandleV2 != nullptr &&
                     fn.halMemImportFromShareableHandleV2 != nullptr &&
                     fn.halMemTransShareableHandle != nullptr;
  c.disable_validation = fn.halMemShareHandleSetAttribute != nullptr;
  c.token_exporter_query = fn.halMemShareHandleInfoGet != nullptr && fn.halGetHostID != nullptr;
  c.ipc_keys = false;  // halShmem* is not part of hal.md
  c.managed_memory = fn.halMemManagedPrefetch != nullptr;
  c.managed_residency = c.managed_memory;
  c.managed_write_tracking = c.managed_memory;
  c.authoritative_queries = !standalone;
  c.beside_vendor_runtime = !standalone;
  c.driver_reports_machine = true;
  return c;
}

}  // namespace

bool vendor_runtime_present() {
  if (void* h = ::dlopen("libruntime.so", RTLD_NOW | RTLD_NOLOAD); h != nullptr) {
    ::dlclose(h);  // drops only the reference NOLOAD took
    return true;
  }
  return ::dlsym(RTLD_DEFAULT, "rtSetDevice") != nullptr;
}

HalBackend::HalBackend(std::unique_ptr<HalLibrary> library, BackendListener& listener,
                       bool standalone)
    : library_(std::move(library)),
      ctx_{&library_->fn(), &listener, standalone, static_cast<int32_t>(library_->device_count())},
      host_(listener, true),
      capabilities_(
          capabilities_of(library_->fn(), standalone, giant_pages_offered(library_->fn()))),
      devices_(ctx_),
      windows_(ctx_, library_->fake_layout()),
      physical_(ctx_, capabilities_.giant_page != 0),
      blocks_(ctx_),
      mmu_(ctx_),
      sharing_(ctx_),
      unified_(ctx_),
      copy_engine_(ctx_, &unified_) {}

HalBackend::~HalBackend() {
  copy_engine_.destroy_all_queues();
  mmu_.unmap_all();
  physical_.release_all();
  blocks_.free_all();
  unified_.free_all();
}

Result HalBackend::open(const BackendOptions& options, BackendListener& listener,
                        std::unique_ptr<DeviceBackend>* out) {
  if (out == nullptr) return Result::from_errno(EINVAL);
  auto library = std::unique_ptr<HalLibrary>(new (std::nothrow) HalLibrary());
  if (library == nullptr) return Result::from_errno(ENOMEM);
  std::string why;
  if (Result r = library->load(options.hal, &why); !r.ok()) {
    // Said once per refused start, where an operator looks first (hal.md §1.1).
    const std::string line = "the hal backend is unavailable: " + why;
    std::fprintf(stderr, "aclvmm: %s\n", line.c_str());
    listener.log(Severity::kError, "DRV", line.c_str());
    return r;
  }
  const bool standalone = !vendor_runtime_present();
  std::unique_ptr<HalBackend> backend(new (std::nothrow)
                                          HalBackend(std::move(library), listener, standalone));
  if (backend == nullptr) return Result::from_errno(ENOMEM);
  const HalLibrary& lib = backend->library();
  char version[32];
  std::snprintf(version, sizeof version, "%d.%d.%d", (lib.api_version() >> 16) & 0xff,
                (lib.api_version() >> 8) & 0xff, lib.api_version() & 0xff);
  const std::string line = "driver library " + lib.path() + " (interface " + version + ", " +
                           std::to_string(lib.device_count()) + " device(s)" +
                           (lib.release().empty() ? "" : ", " + lib.release()) + "), " +
                           (standalone ? "standalone" : "beside the vendor runtime");
  listener.log(Severity::kInfo, "DRV", line.c_str());
  backend->take_statistics_baseline();
  *out = std::move(backend);
  return Result::success();
}

std::string HalBackend::describe(Result result) const {
  if (result.ok()) return "success";
  if (!result.is_driver()) return "errno " + std::to_string(result.errno_value());
  std::string text =
      driver_error_name(result.driver_value()) + " (" + std::to_string(result.driver_value()) + ")";
  // The driver's message code, as the vendor runtime reports it (hal.md §3.0).
  if (const auto map = library_->fn().halMapErrorCode; map != nullptr) {
    const int32_t el = map(static_cast<drvError_t>(result.driver_value()));
    if (el > 0 && el < 9999) {
      char code[16];
      std::snprintf(code, sizeof code, "EL%04d", el);
      text += std::string(", ") + code;
    }
  }
  return text;
}

void HalBackend::take_statistics_baseline() {
  const FakeStatisticsFn fake = library_->fake_statistics();
  if (fake == nullptr) return;
  const FakeCounterVisit visit = [](void* raw, const char* group, const char* name,
                                    uint64_t value, int is_flag) {
    if (is_flag != 0) return;
    try {
      static_cast<std::vector<Baseline>*>(raw)->push_back(Baseline{group, name, value});
    } catch (const std::bad_alloc&) {
      // Without a baseline the counter reads as the process's total.
    }
  };
  (void)fake(visit, &statistics_baseline_);
}

void HalBackend::visit_statistics(StatisticsVisitor& visitor) const {
  // A fake driver library reports the emulator's counters; a real driver keeps its own and
  // offers none, so what the core counts is all there is.
  if (const FakeStatisticsFn fake = library_->fake_statistics(); fake != nullptr) {
    struct Context {
      StatisticsVisitor* visitor;
      const std::vector<Baseline>* baseline;
    } context{&visitor, &statistics_baseline_};
    const FakeCounterVisit visit = [](void* raw, const char* group, const char* name,
                                      uint64_t value, int is_flag) {
      auto* c = static_cast<Context*>(raw);
      if (is_flag != 0) return c->visitor->flag(group, name, value != 0);
      uint64_t since = value;
      for (const Baseline& b : *c->baseline) {  // a dozen counters; no allocation here
        if (b.group == group && b.name == name) since = value >= b.value ? value - b.value : 0;
      }
      c->visitor->counter(group, name, since);
    };
    if (fake(visit, &context) == 0) return;
  }
  const ManagedTracking t = unified_.tracking();
  visitor.flag("managed", "fault_tracking", t.residency);
  visitor.flag("managed", "cpu_write_tracking", t.cpu_writes);
  for (const char* name : {"host_faults", "device_faults", "bytes_to_device", "bytes_to_host",
                           "evictions", "prefetch_bytes", "read_copy_invalidations"}) {
    visitor.counter("managed", name, 0);
  }
  visitor.counter("ipc", "imports_denied", 0);
}

}  // namespace aclvmm::dev::hal
