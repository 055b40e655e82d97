#include "vmm/managed.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "drivers/unsupported_units.h"
#include "observability/log.h"
#include "vmm/device_error.h"

namespace aclvmm {
namespace {

constexpr uint64_t kPage = kManagedPage;
constexpr int32_t kMixed = -2;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Collects the "managed" group of the backend's statistics into aclvmmStatsJson's object.
// The group "managed" of a backend's statistics, in the order it gives them; counters plus what
// earlier backends of the process counted (`carried`: the statistics are process totals). Names
// are the backend's string literals; nothing here allocates but the JSON text.
class ManagedStatistics final : public dev::StatisticsVisitor {
 public:
  using Count = ManagedCount;
  static constexpr size_t kMaxCounters = kManagedCounters;

  explicit ManagedStatistics(const Count* carried = nullptr, size_t carried_count = 0)
      : carried_(carried), carried_count_(carried_count) {}
  void counter(const char* group, const char* name, uint64_t value) override {
    if (std::strcmp(group, "managed") != 0) return;
    for (size_t i = 0; i < carried_count_; ++i) {
      if (std::strcmp(carried_[i].name, name) == 0) value += carried_[i].value;
    }
    if (count_ < kMaxCounters) counters_[count_++] = Count{name, value};
    add(name, std::to_string(value));
  }
  void flag(const char* group, const char* name, bool value) override {
    if (std::strcmp(group, "managed") == 0) add(name, value ? "true" : "false");
  }
  std::string json() const { return "{" + body_ + "}"; }
  const Count* counters() const { return counters_; }
  size_t count() const { return count_; }

 private:
  void add(const char* name, const std::string& value) {
    if (!body_.empty()) body_ += ", ";
    body_ += fmt::format("\"{}\": {}", name, value);
  }
  const Count* carried_;
  size_t carried_count_;
  Count counters_[kMaxCounters];
  size_t count_ = 0;
  std::string body_;
};

}  // namespace

dev::Location ManagedMemory::driver_location(const ManagedLocation& l) {
  switch (l.type) {
    case 1: return dev::Location::device(l.id);
    case 2: return dev::Location::host();
    case 3: return dev::Location::host_numa(l.id);
    default: return dev::Location{};
  }
}

Status ManagedMemory::not_allocated(uint64_t va) {
  return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               fmt::format("0x{:x} is not inside a managed allocation", va));
}

StatusOr<std::shared_ptr<dev::DeviceBackend>> ManagedMemory::backend() const {
  std::shared_ptr<dev::DeviceBackend> device = devices_.device();
  if (!device) return Error(kAclInternalError, "managed memory found no device backend (the runtime is stopped)");
  return device;
}

Status ManagedMemory::covered(uint64_t va, uint64_t size) const {
  if (size > window_.size || va + size < va) return not_allocated(va);  // no wrap-around
  Lock lock(mu_);
  const uint64_t end = round_up(va + size, kPage);
  for (uint64_t page = va / kPage * kPage; page < end; page += kPage) {
    auto it = ranges_.upper_bound(page);
    if (it == ranges_.begin() || page - std::prev(it)->first >= std::prev(it)->second.size) {
      return not_allocated(page);
    }
  }
  return Status::Ok();
}

Status ManagedMemory::answer(dev::Result r, uint64_t va, uint64_t size, const char* what) const {
  if (r.ok()) return Status::Ok();
  // Freed meanwhile, or never allocated: the first page that is not, as before step 6.
  if (r.condition() == dev::Condition::kBadAddress) {
    Status st = covered(va, size);
    return st.ok() ? not_allocated(va) : st;
  }
  if (r.condition() == dev::Condition::kOutOfMemory) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, fmt::format("{}: a device has no room for a managed page", what));
  }
  return Error(device_code(r), fmt::format("{} failed: errno {}", what, r.errno_value()));
}

StatusOr<uint64_t> ManagedMemory::allocate(uint64_t size) {
  const uint64_t bytes = round_up(size, kPage);
  if (bytes < size) return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large");
  // More than the window can never fit: answer 207001 before any backing is made (tests/fuzz
  // found such sizes failing with the backend's 507899 when the host refused the backing).
  if (bytes > window_.size) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("managed memory is limited to {} bytes per process", window_.size));
  }
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<dev::DeviceBackend> device, backend());
  std::lock_guard changing(change_mu_);
  uint64_t in_use = 0;
  {
    Lock lock(mu_);
    in_use = reserved_total_;
  }
  auto full = [&] {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("managed memory is limited to {} bytes per process; {} are in use",
                             window_.size, in_use));
  };
  if (bytes > window_.size - in_use) return full();
  uint64_t base = 0;
  const dev::Result r = device->unified_memory().allocate(bytes, &base);
  if (!r.ok()) {
    if (r.errno_value() == EAGAIN) {
      return Error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
                   "the managed-memory fault thread could not be created");
    }
    if (r.errno_value() == ENOMEM) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                   fmt::format("no memory for a managed allocation of {} bytes (no room in the "
                               "{}-byte window, {} in use, or none on the host)", bytes,
                               window_.size, in_use));
    }
    return device_error(*device, r, "the managed range could not be made");
  }
  try {
    Lock lock(mu_);
    ranges_.emplace(base, Range{bytes, size});
    reserved_total_ += bytes;
  } catch (const std::bad_alloc&) {
    (void)device->unified_memory().free(base, dev::FreeMode::kTeardown);
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory to record the managed allocation");
  }
  return base;
}

Status ManagedMemory::free(uint64_t base, bool teardown) {
  // Across the backend's call and the record's removal: an allocation in between could be
  // given the same base before the record is gone.
  std::lock_guard changing(change_mu_);
  {
    Lock lock(mu_);
    if (ranges_.find(base) == ranges_.end()) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   fmt::format("0x{:x} is not the start of a managed allocation", base));
    }
  }
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<dev::DeviceBackend> device, backend());
  const dev::Result r = device->unified_memory().free(
      base, teardown ? dev::FreeMode::kTeardown : dev::FreeMode::kNormal);
  if (!r.ok() && !teardown) {
    return Error(device_code(r), fmt::format("the managed range at 0x{:x} could not be unmapped: "
                                             "errno {}", base, r.errno_value()));
  }
  Lock lock(mu_);
  auto it = ranges_.find(base);
  if (it != ranges_.end()) {
    reserved_total_ -= it->second.size;
    ranges_.erase(it);
  }
  return Status::Ok();
}

StatusOr<AddressRange> ManagedMemory::range_of(uint64_t va) const {
  Lock lock(mu_);
  auto it = ranges_.upper_bound(va);
  if (it == ranges_.begin() || va - std::prev(it)->first >= std::prev(it)->second.size) {
    return not_allocated(va);
  }
  --it;
  return AddressRange{it->first, it->second.size};
}

Status ManagedMemory::advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where) {
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<dev::DeviceBackend> device, backend());
  const dev::Result r = device->unified_memory().advise(
      va, size, static_cast<dev::ManagedAdvice>(advice), driver_location(where));
  if (r.condition() == dev::Condition::kInvalidArgument) {
    return Error(ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                 fmt::format("location type {} id {} is not valid for this advice", where.type,
                             where.id));
  }
  return answer(r, va, size, "managed advice");
}

Status ManagedMemory::prefetch(uint64_t va, uint64_t size, const ManagedLocation& where) {
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<dev::DeviceBackend> device, backend());
  return answer(device->unified_memory().prefetch(va, size, driver_location(where)), va, size,
                "managed prefetch");
}

StatusOr<std::vector<int32_t>> ManagedMemory::attribute(int attribute, uint64_t va, uint64_t size,
                                                        size_t slots) {
  if (attribute < 1 || attribute > 8) return Error(ACL_ERROR_RT_PARAM_INVALID, "unknown range attribute");
  ACLVMM_RETURN_IF_ERROR(covered(va, size));
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<dev::DeviceBackend> device, backend());
  dev::UnifiedMemory& um = device->unified_memory();
  const auto which = static_cast<dev::ManagedAttribute>(attribute);
  // The caller's dataSize decides how many ACCESSED_BY slots are made: a size no vector can hold
  // is a code, not an exception through the C API.
  std::vector<int32_t> out;
  try {
    out.assign(slots, kMixed);
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("no memory for {} result slots of attribute {}", slots, attribute));
  } catch (const std::length_error&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("{} result slots of attribute {} are more than can be held", slots, attribute));
  }
  ACLVMM_RETURN_IF_ERROR(answer(um.attribute(which, va, size, out.data(), slots), va, size,
                                "the managed range attribute"));
  auto user = [&](int32_t driver_id) { return static_cast<int32_t>(devices_.user_device(driver_id)); };
  switch (which) {
    case dev::ManagedAttribute::kPreferredLocation:
    case dev::ManagedAttribute::kLastPrefetchLocation:
      if (out[0] >= 0) out[0] = user(out[0]);
      break;
    case dev::ManagedAttribute::kPreferredLocationId:
    case dev::ManagedAttribute::kLastPrefetchLocationId: {
      // A device id only when the pages agree on a device; a NUMA node stays as it is.
      const auto type = which == dev::ManagedAttribute::kPreferredLocationId
                            ? dev::ManagedAttribute::kPreferredLocationType
                            : dev::ManagedAttribute::kLastPrefetchLocationType;
      int32_t kind = 0;
      ACLVMM_RETURN_IF_ERROR(answer(um.attribute(type, va, size, &kind, 1), va, size,
                                    "the managed range attribute"));
      if (kind == 1 && out[0] >= 0) out[0] = user(out[0]);
      break;
    }
    case dev::ManagedAttribute::kAccessedBy: {
      // The host (-1) first, then the devices in the application's order: the conversion may
      // reorder them.
      auto devices_begin = std::find_if(out.begin(), out.end(), [](int32_t v) { return v >= 0; });
      auto devices_end = std::find_if(devices_begin, out.end(), [](int32_t v) { return v < 0; });
      for (auto it = devices_begin; it != devices_end; ++it) *it = user(*it);
      std::sort(devices_begin, devices_end);
      break;
    }
    default: break;
  }
  return out;
}

std::vector<AddressRange> ManagedMemory::release_all() {
  std::vector<AddressRange> released;
  {
    Lock lock(mu_);
    for (const auto& [base, r] : ranges_) released.push_back(AddressRange{base, r.size});
  }
  for (const AddressRange& r : released) (void)free(r.base, true);
  Lock lock(mu_);
  ranges_.clear();  // the device backend goes with the runtime: nothing of them is left there
  reserved_total_ = 0;
  // The backend goes too: what it counted is kept, so the counters stay process totals.
  if (std::shared_ptr<dev::DeviceBackend> device = devices_.device()) {
    ManagedStatistics stats(carried_.data(), carried_count_);
    device->visit_statistics(stats);
    std::copy(stats.counters(), stats.counters() + stats.count(), carried_.begin());
    carried_count_ = stats.count();
  }
  return released;
}

size_t ManagedMemory::live() const {
  Lock lock(mu_);
  return ranges_.size();
}

std::string ManagedMemory::stats_json() const {
  std::array<ManagedStatistics::Count, ManagedStatistics::kMaxCounters> carried;
  size_t carried_count = 0;
  {
    Lock lock(mu_);
    carried = carried_;
    carried_count = carried_count_;
  }
  ManagedStatistics stats(carried.data(), carried_count);
  std::shared_ptr<dev::DeviceBackend> device = devices_.device();
  if (device) {
    device->visit_statistics(stats);
  } else {
    dev::visit_unsupported_managed_statistics(stats);
  }
  return stats.json();
}

}  // namespace aclvmm
