// The messages between an importer and an exporter (docs/sharing.md section 5), and the checks
// an importer applies to a reply before it believes any of it: the reply may come from a hostile
// process, so every field must be one this backend could have sent. The numbers on the wire are
// the ones earlier versions sent (a refusal carries the aclError the importer reported then), so
// processes of either build understand each other.
#pragma once

#include <cstdint>

#include "drivers/device_types.h"

namespace aclvmm::dev::emu::share::wire {

// Same machine, same library: no versioning beyond the magic, which also rejects stray connections.
inline constexpr uint32_t kMagic = 0x4d4d5641;  // "AVMM"
inline constexpr uint32_t kImport = 1;
inline constexpr uint32_t kProbe = 2;  // "is this token live?" (set-pid by another process)
inline constexpr uint32_t kKeyOpen = 3;   // import by IPC key (KeyRequest / KeyReply)
inline constexpr uint32_t kKeyProbe = 4;  // "is this key live, and is its whitelist on?"

// Reply::code: the two refusals an exporter makes.
inline constexpr int32_t kUnknownToken = 107017;  // no live export has this token
inline constexpr int32_t kRefused = 507899;       // not whitelisted, or own export, same device

// Reply::side
inline constexpr uint32_t kSideDevice = 0;
inline constexpr uint32_t kSideHost = 1;
inline constexpr uint32_t kSideHostNuma = 2;

inline constexpr uint64_t kGranule = 2 * kMiB;  // every physical allocation is a multiple

struct Request {
  uint32_t magic;
  uint32_t kind;   // kImport or kProbe
  uint64_t token;  // the whole token: a share id with another device field is not this export
  int32_t device;  // the importer's device, for the same-device check
  int32_t pad;
};

struct Reply {
  uint32_t magic;
  int32_t code;  // 0, kUnknownToken or kRefused
  uint64_t size;
  uint32_t side;
  int32_t device;  // exporter's device; 0 for host memory (HOST_NUMA too)
  uint32_t page_type;
  uint32_t mem_type;
};

static_assert(sizeof(Request) == 24 && sizeof(Reply) == 32, "the wire layout of docs/sharing.md");

// IPC memory by key (runtime-extra.md §3), on the key's own endpoint.
struct KeyRequest {
  uint32_t magic;
  uint32_t kind;   // kKeyOpen or kKeyProbe
  int32_t device;  // the importer's device
  int32_t pad;
  char key[72];  // the 64 characters, NUL-terminated, zero-filled
};

// KeyReply::base.code adds kNoWhitelist (a probe of a live key exported with
// DISABLE_PID_VALIDATION); kRefused and kUnknownToken as for tokens (unknown: no live key, or its
// memory was freed).
inline constexpr int32_t kNoWhitelist = 207006;

struct KeyReply {
  Reply base;       // the exporter's whole object, as for a token
  uint64_t offset;  // the key's range in it
  uint64_t range_size;
  uint32_t page_size;
  uint32_t pad;
};

static_assert(sizeof(KeyRequest) == 88 && sizeof(KeyReply) == 56, "the key messages");

// Why a complete key reply cannot be used (after reply_defect of its base), or nullptr.
inline const char* key_reply_defect(const KeyReply& r) {
  if (r.base.code != 0) return nullptr;
  const uint64_t page = r.page_size;
  if (page < 4096 || (page & (page - 1)) != 0 || page > (1ull << 30)) return "an unknown page size";
  if (r.range_size == 0 || r.range_size % page != 0 || r.offset % page != 0 ||
      r.offset > r.base.size || r.range_size > r.base.size - r.offset) {
    return "a range outside the memory sent";
  }
  return nullptr;
}

inline uint32_t side_of(Location where) {
  switch (where.kind) {
    case Location::Kind::kDevice: return kSideDevice;
    case Location::Kind::kHostNuma: return kSideHostNuma;
    default: return kSideHost;
  }
}

inline Location location_of(uint32_t side, int32_t device) {
  switch (side) {
    case kSideDevice: return Location::device(device);
    case kSideHostNuma: return Location::host_numa(device);
    default: return Location::host();
  }
}

// Why a complete reply (right length and magic) cannot be used, or nullptr when every field is
// one an exporter of this backend sends. `device_count` is this process's device count; `unit`
// what every size is a multiple of (physical allocations: 2 MiB; the aclrtMalloc blocks IPC keys
// name: 4 KiB).
inline const char* reply_defect(const Reply& r, int device_count, uint64_t unit = kGranule) {
  if (r.code != 0) {
    // Only the refusals an exporter makes; anything else is no answer this backend gives.
    if (r.code == kUnknownToken || r.code == kRefused) return nullptr;
    return "an unknown result code";
  }
  if (r.size == 0 || r.size % unit != 0) return "a size that is no physical allocation's";
  const int devices = device_count < kMaxDevices ? device_count : kMaxDevices;
  switch (r.side) {
    case kSideDevice:
      if (r.device < 0 || r.device >= devices) return "a device this process does not have";
      break;
    case kSideHost:
    case kSideHostNuma:
      if (r.device < 0 || r.device >= 64) return "a host node out of range";
      break;
    default:
      return "an unknown memory side";
  }
  if (r.page_type > static_cast<uint32_t>(PageType::kGiant)) return "an unknown page type";
  if (r.mem_type > static_cast<uint32_t>(MemType::kP2pDdr)) return "an unknown memory type";
  return nullptr;
}

}  // namespace aclvmm::dev::emu::share::wire
