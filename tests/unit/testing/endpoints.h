// Copy endpoints by kind, for the tests that drive a CopyEngine or UnifiedMemory directly.
#pragma once

#include <cstdint>

#include "drivers/copy_engine.h"

namespace aclvmm::testing {

inline dev::CopyEndpoint mapped(uint64_t va) {
  return dev::CopyEndpoint{va, dev::EndpointKind::kMapped};
}
inline dev::CopyEndpoint managed(uint64_t va) {
  return dev::CopyEndpoint{va, dev::EndpointKind::kManaged};
}
inline dev::CopyEndpoint host(const void* p) {
  return dev::CopyEndpoint{reinterpret_cast<uint64_t>(p), dev::EndpointKind::kHostMemory};
}

}  // namespace aclvmm::testing
