// A per-thread buffer of one repeated byte, the source for fills of physical and process memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev::emu::os {

constexpr size_t kPatternBytes = size_t{1} << 20;

// Returns a buffer whose first `need` (<= kPatternBytes) bytes equal `value`; nullptr when the
// buffer cannot be allocated. Valid until the calling thread's next call.
const uint8_t* pattern_buffer(uint8_t value, size_t need);

}  // namespace aclvmm::dev::emu::os
