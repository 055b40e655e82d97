// aclrtValueWrite / aclrtValueWait (runtime-extra.md §8): a 64-bit word of device memory written,
// or waited for, in a stream's order. The checks are here; the queued work is the stream's
// (Stream::enqueue_value_write / enqueue_value_wait).
#pragma once

#include <cstdint>

#include "base/status.h"

namespace aclvmm {

class Runtime;

// After the ACL layer's NULL check, in the order of runtime-extra.md §8: the product (207000),
// the stream (107017), the flag (107000), the address's attributes (their code; not DEVICE:
// 107000), the context (107002, another context's stream 107003), 8-byte alignment (107000).
Status value_write(Runtime& rt, uint64_t address, uint64_t value, uint32_t flag, uint64_t stream);
// flag: ACL_STREAM_WAIT_VALUE_GEQ, _EQ, _AND or _NOR.
Status value_wait(Runtime& rt, uint64_t address, uint64_t value, uint32_t flag, uint64_t stream);

// Whether `word` satisfies wait condition `flag` against `value` (flag <= 3).
bool value_wait_ready(uint32_t flag, uint64_t word, uint64_t value);

}  // namespace aclvmm
