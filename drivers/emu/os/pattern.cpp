#include "drivers/emu/os/pattern.h"

#include <cstring>
#include <memory>
#include <new>

namespace aclvmm::dev::emu::os {
namespace {

// Per thread so that concurrent fills with different values never share bytes. Heap-backed rather
// than a thread_local array: a 1 MiB static TLS block would break dlopen() of the library.
struct Pattern {
  std::unique_ptr<uint8_t[]> bytes;
  uint8_t value = 0;
  size_t valid = 0;  // bytes [0, valid) hold `value`
};

thread_local Pattern t_pattern;

}  // namespace

const uint8_t* pattern_buffer(uint8_t value, size_t need) {
  Pattern& p = t_pattern;
  if (need > kPatternBytes) need = kPatternBytes;
  if (!p.bytes) {
    p.bytes.reset(new (std::nothrow) uint8_t[kPatternBytes]);
    if (!p.bytes) return nullptr;
    p.valid = 0;
  }
  if (p.value != value) {
    p.value = value;
    p.valid = 0;
  }
  // Small fills only pay for the bytes they use.
  if (p.valid < need) {
    std::memset(p.bytes.get() + p.valid, value, need - p.valid);
    p.valid = need;
  }
  return p.bytes.get();
}

}  // namespace aclvmm::dev::emu::os
