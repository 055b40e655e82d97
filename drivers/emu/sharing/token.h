// The share token's layout as emu's driver packs it (behavior.md section 7; the HAL packs it on
// hardware, drivers/sharing.h):
//   V1 / V2 DEFAULT: a uint64_t, bits 0-31 share id, bits 32-39 exporting device, bits 40-63 zero.
//   The share id is emu's own: bits 0-17 name the exporting process (its pid in its own pid
//   namespace, low 18 bits), bits 18-31 are a serial of that process. An importer accepts memory
//   only from the process the token names (docs/sharing.md, "Trust model").
//   V2 FABRIC: a 128-byte blob whose first 20 bytes are five u32: handle type (1), super-pod
//   device id (SDID: bits 0-15 the device, 16-17 the die, 18-21 the chip, 22-31 the exporter's
//   server id, 0x3FF for none; docs/fabric.md), exporting logical device, exporting physical
//   device (65, the driver's host id, for host memory), share id; the rest is left as given.
#pragma once

#include <cstdint>
#include <cstring>

namespace aclvmm::dev::emu::share {

struct TokenFields {
  uint32_t share_id = 0;
  uint32_t device = 0;  // the exporter's device id as the token carries it

  uint64_t pack() const { return (static_cast<uint64_t>(device & 0xff) << 32) | share_id; }
  static TokenFields unpack(uint64_t v) {
    return TokenFields{static_cast<uint32_t>(v), static_cast<uint32_t>((v >> 32) & 0xff)};
  }
  // Bits 40-63 are zero in every token the vendor produces.
  static bool well_formed(uint64_t v) { return (v >> 40) == 0 && static_cast<uint32_t>(v) != 0; }
};

// 18 pid bits are exact up to pid_max 262144 (the kernel default on up to 256 CPUs) and leave
// 16384 serials: live exports per process, with room for applications that hold thousands.
inline constexpr uint32_t kPidBits = 18;
inline constexpr uint32_t kPidMask = (1u << kPidBits) - 1;
inline constexpr uint32_t kSerials = 1u << (32 - kPidBits);

// Exports are served in groups of 256 consecutive serials, each group on one endpoint (whose id
// is the group's first share id, serial bits 18-25 zero): a process with thousands of live exports
// then holds a few dozen listening sockets, and the kernel's refusal of a second bind still keeps
// every group, and so every share id in it, to one live process.
inline constexpr uint32_t kGroupSerialBits = 8;
inline constexpr uint32_t kGroupSize = 1u << kGroupSerialBits;
inline constexpr uint32_t endpoint_of(uint32_t share_id) {
  return share_id & ~((kGroupSize - 1) << kPidBits);
}

inline uint32_t make_share_id(uint32_t pid, uint32_t serial) {
  return ((serial % kSerials) << kPidBits) | (pid & kPidMask);
}
// Whether `pid` is the process a share id names (as far as 18 bits can tell).
inline bool share_id_names(uint32_t share_id, int pid) {
  return pid > 0 && (static_cast<uint32_t>(pid) & kPidMask) == (share_id & kPidMask);
}

inline constexpr uint32_t kFabricHandleType = 1;
inline constexpr uint32_t kHostDevice = 65;  // the driver's host id, in word 3 for host memory

inline uint32_t make_sdid(uint32_t server_id, uint32_t device) {
  return ((server_id & 0x3FFu) << 22) | (device & 0xFFFFu);
}
inline uint32_t sdid_server(uint32_t sdid) { return sdid >> 22; }

// What a FABRIC handle says beyond its V1 fields.
struct FabricFields {
  TokenFields token;
  uint32_t server_id = 0;  // the exporter's server (from the SDID)
  bool host = false;       // host memory
};

inline void write_fabric(uint8_t* blob, const FabricFields& f, uint32_t physical_device) {
  const uint32_t words[5] = {kFabricHandleType, make_sdid(f.server_id, f.token.device),
                             f.token.device, f.host ? kHostDevice : physical_device,
                             f.token.share_id};
  std::memcpy(blob, words, sizeof words);
}

// false when the blob is not a fabric handle.
inline bool read_fabric(const uint8_t* blob, FabricFields* f) {
  uint32_t words[5];
  std::memcpy(words, blob, sizeof words);
  if (words[0] != kFabricHandleType || words[4] == 0) return false;
  f->server_id = sdid_server(words[1]);
  f->token.device = words[2];
  f->host = words[3] == kHostDevice;
  f->token.share_id = words[4];
  return true;
}

}  // namespace aclvmm::dev::emu::share
