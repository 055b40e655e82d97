// Physical-memory handles as the application sees them (aclrtDrvMemHandle).
//
// Normally the core's tokens (base/handle_table.h). Beside the vendor runtime they are the
// driver's own handles, so that a handle aclvmm made works in a vendor call (hal.md §6.2 rule 4;
// vmm/handle_aliases.h): every function that hands a handle out or takes one in goes through
// these two.
#pragma once

#include <cstdint>

#include "acl/acl.h"

namespace aclvmm::api {

// The handle to give the application for the core's `token` of a live physical allocation.
aclrtDrvMemHandle handle_out(uint64_t token);
// The core's token for a handle the application passed.
uint64_t handle_in(aclrtDrvMemHandle handle);

}  // namespace aclvmm::api
