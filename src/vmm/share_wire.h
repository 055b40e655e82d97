// The messages between an importer and an exporter (docs/sharing.md section 5), and the checks
// an importer applies to a reply before it believes any of it: the reply may come from a hostile
// process, so every field must be one this library could have sent.
#pragma once

#include <cstdint>

#include "acl/error_codes/rt_error_codes.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm::share_wire {

// Same machine, same library: no versioning beyond the magic, which also rejects stray connections.
inline constexpr uint32_t kMagic = 0x4d4d5641;  // "AVMM"
inline constexpr uint32_t kImport = 1;
inline constexpr uint32_t kProbe = 2;  // "is this token live?" (set-pid by another process)

struct Request {
  uint32_t magic;
  uint32_t kind;   // kImport or kProbe
  uint64_t token;  // the whole token: a share id with another device field is not this export
  int32_t device;  // the importer's physical device, for the same-device check
  int32_t pad;
};

struct Reply {
  uint32_t magic;
  int32_t code;  // 0, or the aclError the importer returns
  uint64_t size;
  uint32_t side;
  int32_t device;  // exporter's physical device (NUMA node for HOST_NUMA memory, else 0 for host)
  uint32_t page_type;
  uint32_t mem_type;
};

static_assert(sizeof(Request) == 24 && sizeof(Reply) == 32, "the wire layout of docs/sharing.md");

// Why a complete reply (right length and magic) cannot be used, or nullptr when every field is
// one an exporter of this library sends. `device_count` is this process's physical device count.
inline const char* reply_defect(const Reply& r, int device_count) {
  if (r.code != 0) {
    // Only the refusals an exporter makes; anything else is no answer this library gives.
    if (r.code == ACL_ERROR_RT_INVALID_HANDLE || r.code == ACL_ERROR_RT_DRV_INTERNAL_ERROR) return nullptr;
    return "an unknown result code";
  }
  if (r.size == 0 || r.size % kChunk != 0) return "a size that is no physical allocation's";
  const int devices = device_count < 64 ? device_count : 64;
  switch (static_cast<Side>(r.side)) {
    case Side::kDevice:
      if (r.device < 0 || r.device >= devices) return "a device this process does not have";
      break;
    case Side::kHost:
    case Side::kHostNuma:
      if (r.device < 0 || r.device >= 64) return "a host node out of range";
      break;
    default:
      return "an unknown memory side";
  }
  if (r.page_type != kNormalPage && r.page_type != kHugePage && r.page_type != kHuge1GPage) {
    return "an unknown page type";
  }
  if (r.mem_type > kP2PDdr) return "an unknown memory type";
  return nullptr;
}

}  // namespace aclvmm::share_wire
