// ShareToken: the vendor's layout of a shareable handle (behavior.md section 7).
//   V1 / V2 DEFAULT: a uint64_t, bits 0-31 share id, bits 32-39 exporting device, bits 40-63 zero.
//   The share id is aclvmm's own: bits 0-17 name the exporting process (its pid in its own pid
//   namespace, low 18 bits), bits 18-31 are a serial of that process. An importer accepts memory
//   only from the process the token names (docs/sharing.md, "Trust model").
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

// 18 pid bits are exact up to pid_max 262144 (the kernel default on up to 256 CPUs) and leave
// 16384 serials: live exports per process, with room for applications that hold thousands.
inline constexpr uint32_t kSharePidBits = 18;
inline constexpr uint32_t kSharePidMask = (1u << kSharePidBits) - 1;
inline constexpr uint32_t kShareSerials = 1u << (32 - kSharePidBits);

inline uint32_t make_share_id(uint32_t pid, uint32_t serial) {
  return ((serial % kShareSerials) << kSharePidBits) | (pid & kSharePidMask);
}
// Whether `pid` is the process a share id names (as far as 18 bits can tell).
inline bool share_id_names(uint32_t share_id, int pid) {
  return pid > 0 && (static_cast<uint32_t>(pid) & kSharePidMask) == (share_id & kSharePidMask);
}

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
