#include "runtime/device_ids.h"

#include <string>

namespace aclvmm::device_ids {
namespace {

Status runtime_miss(const char* what, int id, const std::string& why) {
  return Error(ACL_ERROR_RT_INVALID_DEVICEID,
               std::string(what) + " device id " + std::to_string(id) + " " + why);
}

Status driver_miss(const char* what, int id, int count) {
  return Error(ACL_ERROR_RT_PARAM_INVALID,
               std::string(what) + " device id " + std::to_string(id) +
                   " names no device: the driver has " + std::to_string(count));
}

// The logical id behind a user id: V[u] when ASCEND_RT_VISIBLE_DEVICES is set, else u itself.
StatusOr<int> through_visible(const Config& config, int user) {
  if (!config.visible_set) return user;
  if (!config.visible_error.empty()) {
    return Error(ACL_ERROR_RT_INVALID_DEVICEID, config.visible_error);
  }
  if (user >= static_cast<int>(config.visible.size())) {
    return runtime_miss("user", user,
                        "is not below the " + std::to_string(config.visible.size()) +
                            " devices of ASCEND_RT_VISIBLE_DEVICES");
  }
  return config.visible[user];
}

// The user id of a logical id: its index in V when set, else the id itself.
StatusOr<int> index_in_visible(const Config& config, int logical) {
  if (!config.visible_set) return logical;
  for (size_t i = 0; i < config.visible.size(); ++i) {
    if (config.visible[i] == logical) return static_cast<int>(i);
  }
  return runtime_miss("logical", logical, "is not in ASCEND_RT_VISIBLE_DEVICES");
}

// The driver's physical id of a logical device (below the device count).
int physical_of(const Config& config, int logical) {
  return config.physical_ids.empty() ? logical : config.physical_ids[logical];
}

// The logical device whose physical id is `physical`; the driver's miss when there is none.
StatusOr<int> logical_of(const Config& config, int physical) {
  if (config.physical_ids.empty()) {
    if (physical >= config.device_count) {
      return driver_miss("physical", physical, config.device_count);
    }
    return physical;
  }
  for (size_t l = 0; l < config.physical_ids.size(); ++l) {
    if (config.physical_ids[l] == physical) return static_cast<int>(l);
  }
  return Error(ACL_ERROR_RT_PARAM_INVALID, "physical device id " + std::to_string(physical) +
                                               " is the id of no device the driver has");
}

}  // namespace

StatusOr<int> logical_from_user(const Config& config, int user) {
  ACLVMM_ASSIGN_OR_RETURN(const int logical, through_visible(config, user));
  if (logical >= config.device_count) {
    return runtime_miss("user", user,
                        "is not below the device count " + std::to_string(config.device_count));
  }
  return logical;
}

StatusOr<int> user_from_logical(const Config& config, int logical) {
  if (logical >= config.device_count) {
    return runtime_miss("logical", logical,
                        "is not below the device count " + std::to_string(config.device_count));
  }
  return index_in_visible(config, logical);
}

StatusOr<int> physical_from_user(const Config& config, int user) {
  ACLVMM_ASSIGN_OR_RETURN(const int logical, through_visible(config, user));
  if (logical >= config.device_count) return driver_miss("logical", logical, config.device_count);
  return physical_of(config, logical);
}

StatusOr<int> user_from_physical(const Config& config, int physical) {
  ACLVMM_ASSIGN_OR_RETURN(const int logical, logical_of(config, physical));
  return index_in_visible(config, logical);
}

}  // namespace aclvmm::device_ids
