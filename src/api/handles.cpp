#include "api/handles.h"

#include "api/api_common.h"
#include "runtime/runtime.h"

namespace aclvmm::api {

aclrtDrvMemHandle handle_out(uint64_t token) {
  Runtime& rt = Runtime::get();
  if (!rt.beside_vendor()) return static_cast<aclrtDrvMemHandle>(from_token(token));
  const std::shared_ptr<PhysicalAllocation> phys = rt.physical().find(token);
  const uint64_t driver_handle = phys ? phys->device_memory.id().value : 0;
  // Without the driver's handle, or memory to remember it, the core's token still works in every
  // aclvmm call; only a vendor call would not know it.
  if (driver_handle == 0 || !rt.handle_aliases().bind(driver_handle, token)) {
    return static_cast<aclrtDrvMemHandle>(from_token(token));
  }
  return static_cast<aclrtDrvMemHandle>(from_token(driver_handle));
}

uint64_t handle_in(aclrtDrvMemHandle handle) {
  Runtime& rt = Runtime::get();
  if (!rt.beside_vendor()) return api::token(handle);
  return rt.handle_aliases().token_of(api::token(handle));
}

}  // namespace aclvmm::api
