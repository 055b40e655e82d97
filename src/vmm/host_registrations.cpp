#include "vmm/host_registrations.h"

#include <spdlog/fmt/fmt.h>

#include <mutex>
#include <shared_mutex>

#include "drivers/device_backend.h"
#include "observability/live_counts.h"
#include "observability/log.h"

namespace aclvmm {

Status HostRegistrations::add(const HostRegistration& r) {
  std::lock_guard lock(mu_);
  // The registration of this device that starts at or below r's end: the only one that can
  // overlap r from below; the next one up must start at or after r's end.
  auto next = by_base_.lower_bound({r.device, r.base});
  if (next != by_base_.end() && next->first.first == r.device &&
      next->second.base < r.base + r.size) {
    return Error(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                 fmt::format("[0x{:x}, +{}) overlaps the registration at 0x{:x} of the same device",
                             r.base, r.size, next->second.base));
  }
  if (next != by_base_.begin()) {
    auto prev = std::prev(next);
    if (prev->first.first == r.device && prev->second.base + prev->second.size > r.base) {
      return Error(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                   fmt::format("[0x{:x}, +{}) overlaps the registration at 0x{:x} of the same "
                               "device",
                               r.base, r.size, prev->second.base));
    }
  }
  const std::shared_ptr<dev::DeviceBackend>& device = devices_.device();
  if (!device) {
    return Error(kAclInternalError, "host registration found no device backend (the runtime is stopped)");
  }
  const dev::Result done = device->mmu().register_host(r.base, r.size, r.device, r.pinned);
  if (!done.ok()) {
    if (done.condition() == dev::Condition::kBadAddress) {
      return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                   fmt::format("[0x{:x}, +{}) is not all mapped in the process", r.base, r.size));
    }
    if (done.condition() == dev::Condition::kNotSupported) {
      // hal: the driver library's interface (hal.md) has no host registration function.
      return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   fmt::format("host registration is not supported by the {} backend: {}",
                               device->name(), device->describe(done)));
    }
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 fmt::format("the device could not register [0x{:x}, +{}): {}", r.base, r.size,
                             device->describe(done)));
  }
  try {
    by_base_.emplace(Key{r.device, r.base}, r);
  } catch (...) {
    unregister_in_backend(r);  // rollback: nothing registered
    throw;
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  publish_live_count(LiveCount::kHostRegistrations, by_base_.size());  // under mu_: in order
  return Status::Ok();
}

Status HostRegistrations::remove(uint64_t base, int device) {
  std::lock_guard lock(mu_);
  auto it = by_base_.find({device, base});
  if (it == by_base_.end()) {
    return Error(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                 fmt::format("0x{:x} is not the start of a host registration of the current "
                             "device",
                             base));
  }
  unregister_in_backend(it->second);
  by_base_.erase(it);
  count_.fetch_sub(1, std::memory_order_relaxed);
  publish_live_count(LiveCount::kHostRegistrations, by_base_.size());
  return Status::Ok();
}

StatusOr<uint64_t> HostRegistrations::device_pointer(uint64_t ptr, int device) const {
  std::shared_lock lock(mu_);
  auto it = by_base_.upper_bound({device, ptr});
  if (it != by_base_.begin()) {
    const HostRegistration& r = std::prev(it)->second;
    if (r.device == device && r.mapped && ptr - r.base < r.size) return ptr;  // same address
  }
  return Error(ACL_ERROR_RT_PARAM_INVALID,
               fmt::format("0x{:x} lies in no MAPPED host registration of the current device",
                           ptr));
}

bool HostRegistrations::reachable(uint64_t address, uint64_t size, int device) const {
  if (count_.load(std::memory_order_relaxed) == 0) return false;
  std::shared_lock lock(mu_);
  // Adjacent registrations of one device may together cover the range.
  uint64_t at = address;
  const uint64_t end = address + size;
  while (at < end) {
    auto it = by_base_.upper_bound({device, at});
    if (it == by_base_.begin()) return false;
    const HostRegistration& r = std::prev(it)->second;
    if (r.device != device || !r.mapped || at - r.base >= r.size) return false;
    at = r.base + r.size;
  }
  return true;
}

bool HostRegistrations::registered(uint64_t address) const {
  if (count_.load(std::memory_order_relaxed) == 0) return false;
  std::shared_lock lock(mu_);
  // One search per device that has registrations (registrations of one device never overlap).
  for (auto it = by_base_.begin(); it != by_base_.end();) {
    const int device = it->first.first;
    auto above = by_base_.upper_bound({device, address});
    if (above != by_base_.begin()) {
      const auto& [key, r] = *std::prev(above);
      if (key.first == device && address - r.base < r.size) return true;
    }
    it = by_base_.lower_bound({device + 1, 0});  // the next device's first registration
  }
  return false;
}

void HostRegistrations::unregister_in_backend(const HostRegistration& r) {
  const std::shared_ptr<dev::DeviceBackend>& device = devices_.device();
  if (!device) return;  // the backend went with its registrations
  const dev::Result done = device->mmu().unregister_host(r.base, r.size, r.device, r.pinned);
  if (!done.ok()) {
    ACLVMM_LOG_WARN("VMM", "the device did not undo the host registration at 0x{:x}: {}", r.base,
                    device->describe(done));
  }
}

template <typename Pred>
std::vector<HostRegistration> HostRegistrations::release_if(Pred drop) {
  std::vector<HostRegistration> dropped;
  std::lock_guard lock(mu_);
  for (auto it = by_base_.begin(); it != by_base_.end();) {
    if (!drop(it->second)) {
      ++it;
      continue;
    }
    unregister_in_backend(it->second);
    dropped.push_back(it->second);
    it = by_base_.erase(it);
    count_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!dropped.empty()) publish_live_count(LiveCount::kHostRegistrations, by_base_.size());
  return dropped;
}

std::vector<HostRegistration> HostRegistrations::release_device(int device) {
  return release_if([device](const HostRegistration& r) { return r.device == device; });
}

std::vector<HostRegistration> HostRegistrations::release_inside(uint64_t base, uint64_t size) {
  return release_if([base, size](const HostRegistration& r) {
    return r.base - base < size;  // starts inside the block (registrations never straddle one)
  });
}

std::vector<HostRegistration> HostRegistrations::release_all() {
  return release_if([](const HostRegistration&) { return true; });
}

}  // namespace aclvmm
