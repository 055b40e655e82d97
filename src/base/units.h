// Byte units of the core. The device interface has its own (drivers/device_types.h, namespace
// dev), since a backend includes nothing of src/ beyond base/status.h.
#pragma once

#include <cstdint>

namespace aclvmm {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kTiB = uint64_t{1} << 40;

}  // namespace aclvmm
