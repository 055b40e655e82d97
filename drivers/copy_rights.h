// The rights a copy's executor needs on one endpoint behind the device MMU (copy_engine.h):
// one rule for every backend's copy engine, so emu and the fake cannot drift apart. It is the
// rule the core applied in its own translation before migration step 3
// (src/vmm/address_space_query.cpp): device memory needs READ (source) or READWRITE
// (destination) for the executing device, or, for a device block (aclrtMalloc), peer access from
// the executor to the block's owner; host memory is reached through its host mapping, so the
// HOST location's rights govern it whichever device executes.
//
// Threading: a pure function.
#pragma once

#include "drivers/device_types.h"

namespace aclvmm::dev {

// `rights_of(Location)` answers the endpoint's Access for a location.
template <typename RightsOf>
bool executor_may_reach(const Executor& who, Location owner, bool device_block, bool write,
                        RightsOf rights_of) {
  auto enough = [write](Access a) {
    return write ? a == Access::kReadWrite : (static_cast<uint8_t>(a) & 1) != 0;
  };
  if (owner.kind != Location::Kind::kDevice) return enough(rights_of(Location::host()));
  if (who.device < 0 || who.device >= kMaxDevices) return false;  // the core's 107002 first
  if (device_block && owner.id >= 0 && owner.id < kMaxDevices &&
      ((who.peer_mask >> owner.id) & 1) != 0) {
    return true;
  }
  return enough(rights_of(Location::device(who.device)));
}

}  // namespace aclvmm::dev
