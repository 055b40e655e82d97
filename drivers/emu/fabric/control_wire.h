// The messages of the pod's control port (docs/fabric.md §3.3): an importer on another server
// asks for an export by its token; the exporter answers with where the bytes can be read and
// written over the fabric. The same request travels, with the importer's connection attached,
// from whichever process of the exporter's host accepted it to the exporter (over the local
// share transport, drivers/emu/sharing/transport.h).
//
// The reply may come from anything listening on a pod address, so the importer believes no field
// before reply_defect() found nothing wrong with it.
#pragma once

#include <cstdint>

#include "drivers/device_types.h"
#include "drivers/emu/sharing/wire.h"

namespace aclvmm::dev::emu::fabric::wire {

inline constexpr uint32_t kMagic = share::wire::kMagic;
inline constexpr uint32_t kFabricImport = 5;  // after the local kinds (sharing/wire.h)
inline constexpr uint32_t kNameMax = 128;     // an endpoint's name (tcp: a socket address)

struct Request {
  uint32_t magic;
  uint32_t kind;      // kFabricImport
  uint64_t token;     // the export's token (share id, exporter's device), as the handle says
  int32_t tgid;       // the importing process's bare tgid, as its host's kernel reports it
  int32_t server_id;  // the importer's server
  int32_t device;     // the importer's device
  uint32_t pad;
};

struct Reply {
  uint32_t magic;
  int32_t code;  // 0, share::wire::kUnknownToken or kRefused
  uint64_t size;
  uint32_t page_type;
  uint32_t mem_type;
  int32_t device;  // the exporter's device on its server
  uint32_t name_len;
  uint64_t key;  // the registered region (rma_endpoint.h RemoteRegion)
  uint64_t base;
  uint8_t name[kNameMax];  // the exporter's endpoint
};

// Distinct from the local request sizes (24 and 88 bytes), which the exporter's listener tells
// messages apart by.
static_assert(sizeof(Request) == 32 && sizeof(Reply) == 176, "the control port's layout");

inline bool well_formed(const Request& r) { return r.magic == kMagic && r.kind == kFabricImport; }

// Why a complete reply cannot be used, or nullptr.
inline const char* reply_defect(const Reply& r) {
  if (r.magic != kMagic) return "not a reply";
  if (r.code != 0) {
    if (r.code == share::wire::kUnknownToken || r.code == share::wire::kRefused) return nullptr;
    return "an unknown result code";
  }
  if (r.size == 0 || r.size % share::wire::kGranule != 0)
    return "a size that is no physical allocation's";
  if (r.device < 0 || r.device >= kMaxDevices) return "a device no server has";
  if (r.page_type > static_cast<uint32_t>(PageType::kGiant)) return "an unknown page type";
  if (r.mem_type > static_cast<uint32_t>(MemType::kP2pDdr)) return "an unknown memory type";
  if (r.name_len == 0 || r.name_len > kNameMax) return "an endpoint name of impossible length";
  return nullptr;
}

}  // namespace aclvmm::dev::emu::fabric::wire
