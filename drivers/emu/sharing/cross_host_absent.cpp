// CrossHost in a build without libfabric's headers (CMake defines ACLVMM_WITH_FABRIC when it
// found them and compiles drivers/emu/fabric instead): no cross-server transport; EmuSharing
// answers imports from another server with EOPNOTSUPP and says why.
#ifndef ACLVMM_WITH_FABRIC

#include "drivers/emu/fabric/cross_host.h"

namespace aclvmm::dev::emu::fabric {

std::unique_ptr<CrossHost> CrossHost::create(std::vector<PodAddress>, int32_t, ExportDirectory&,
                                             BackendListener&) {
  return nullptr;
}

}  // namespace aclvmm::dev::emu::fabric

#endif
