#include "api/access_desc.h"

#include <cstring>

#include "runtime/runtime.h"

namespace aclvmm::api {

Status check_location(const aclrtMemLocation& loc, AccessChange* out) {
  int type;
  std::memcpy(&type, &loc.type, sizeof type);  // any int may arrive from C
  if (type == ACL_MEM_LOCATION_TYPE_HOST) {
    if (loc.id != 0) {
      return Error(ACL_ERROR_RT_PARAM_INVALID, "a HOST location has id 0, got " + std::to_string(loc.id));
    }
    out->host = true;
    return Status::Ok();
  }
  if (type == ACL_MEM_LOCATION_TYPE_DEVICE) {
    const int count = Runtime::get().config().device_count;
    if (loc.id >= 64 || static_cast<int>(loc.id) >= count) {
      return Error(ACL_ERROR_RT_PARAM_INVALID,
                   "device id " + std::to_string(loc.id) + " does not exist (" +
                       std::to_string(count) + " devices)");
    }
    out->host = false;
    out->device = static_cast<int>(loc.id);
    return Status::Ok();
  }
  return Error(ACL_ERROR_RT_PARAM_INVALID, "location type " + std::to_string(type) +
                                               " cannot be given access (HOST or DEVICE only)");
}

}  // namespace aclvmm::api
