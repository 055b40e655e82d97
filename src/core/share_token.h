// ShareToken: the vendor's layout of a shareable handle (behavior.md section 7).
//   V1 / V2 DEFAULT: a uint64_t, bits 0-31 share id, bits 32-39 exporting device, bits 40-63 zero.
//   V2 FABRIC: a 128-byte blob whose first 20 bytes are five u32: handle type (1), super-pod id,
//   exporting logical device, exporting physical device, share id; the rest is left as given.
#pragma once

#include <cstdint>
#include <cstring>

namespace aclvmm {

struct ShareToken {
  uint32_t share_id = 0;
  uint32_t device = 0;  // the exporter's device id as the token carries it

  uint64_t pack() const { return (static_cast<uint64_t>(device & 0xff) << 32) | share_id; }
  static ShareToken unpack(uint64_t v) {
    return ShareToken{static_cast<uint32_t>(v), static_cast<uint32_t>((v >> 32) & 0xff)};
  }
  // Bits 40-63 are zero in every token the vendor produces.
  static bool well_formed(uint64_t v) { return (v >> 40) == 0 && static_cast<uint32_t>(v) != 0; }
};

inline constexpr uint32_t kFabricHandleType = 1;
inline constexpr uint32_t kSuperPodId = 0;  // one emulated super-pod per host

inline void write_fabric(uint8_t* blob, const ShareToken& t, uint32_t physical_device) {
  const uint32_t words[5] = {kFabricHandleType, kSuperPodId, t.device, physical_device, t.share_id};
  std::memcpy(blob, words, sizeof words);
}

// false when the blob is not a fabric handle.
inline bool read_fabric(const uint8_t* blob, ShareToken* t) {
  uint32_t words[5];
  std::memcpy(words, blob, sizeof words);
  if (words[0] != kFabricHandleType || words[4] == 0) return false;
  t->device = words[2];
  t->share_id = words[4];
  return true;
}

}  // namespace aclvmm
