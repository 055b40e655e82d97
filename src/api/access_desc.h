// Validation of memory locations named by aclrtMemSetAccess / aclrtMemGetAccess descriptors.
#pragma once

#include "acl/acl.h"
#include "base/status.h"
#include "vmm/address_space.h"

namespace aclvmm::api {

// The driver's location checks: HOST needs id 0, DEVICE an existing device id (the driver's id,
// which the vendor passes through unconverted), anything else is rejected (107000).
Status check_location(const aclrtMemLocation& loc, AccessChange* out);

}  // namespace aclvmm::api
