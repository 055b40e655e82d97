#include "drivers/fake/fake_backend.h"

#include <cerrno>
#include <new>
#include <utility>

#include "drivers/injection/injecting_backend.h"
#include "drivers/result_text.h"

namespace aclvmm::dev::fake {
namespace {

Capabilities capabilities_of(const FakeConfig& config) {
  Capabilities c;
  c.giant_page = config.giant_pages ? kGiB : 0;
  c.map_routes = true;
  c.map_without_access = true;
  c.access_none_and_read = true;
  c.host_numa = config.numa_nodes > 0;
  c.sharing = true;
  c.fabric_sharing = true;
  c.ipc_keys = true;
  c.disable_validation = true;
  c.managed_memory = true;
  c.managed_residency = config.managed_residency;
  c.managed_write_tracking = config.managed_residency && config.managed_write_tracking;
  c.copies_check_access = true;
  return c;
}

}  // namespace

FakeBackend::FakeBackend(const FakeConfig& config, BackendListener& listener)
    : machine_(config, listener),
      capabilities_(capabilities_of(config)),
      devices_(machine_),
      physical_(machine_),
      host_(machine_),
      sharing_(machine_, physical_, config.world),
      mmu_(machine_, physical_),
      windows_(machine_),
      blocks_(machine_, physical_, mmu_, windows_),
      unified_(machine_),
      copy_engine_(machine_, mmu_, unified_) {}

std::string FakeBackend::describe(Result result) const { return "fake: " + result_text(result); }

void FakeBackend::visit_statistics(StatisticsVisitor& visitor) const {
  unified_.visit_statistics(visitor);
  visitor.counter("ipc", "imports_denied", sharing_.imports_denied());
}

Result open_fake_backend(const FakeConfig& config, BackendListener* listener,
                         std::unique_ptr<DeviceBackend>* out, FakeBackend** bare) {
  if (listener == nullptr || out == nullptr || config.device_count < 1 ||
      config.device_count > kMaxDevices || config.numa_nodes < 0) {
    return Result::from_errno(EINVAL);
  }
  try {
    auto fake = std::make_unique<FakeBackend>(config, *listener);
    FakeBackend* raw = fake.get();
    if (Result r = injection::wrap_with_injection(std::move(fake), *listener, out); !r.ok()) {
      return r;
    }
    if (bare != nullptr) *bare = raw;
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
  return Result::success();
}

}  // namespace aclvmm::dev::fake
