// The super-pod this process belongs to (docs/fabric.md): its own server id and the address of
// every server, from ACLVMM_SERVER_ID and ACLVMM_POD_FILE.
//
// A FABRIC handle names the server that exported it (in the top bits of its super-pod device
// id); an import is routed by what the handle says, to the address the pod file gives for that
// server. Without a pod file the pod is this host alone.
//
// The pod file: one `server_id address` line per server, `#` starts a comment, blank lines are
// skipped. server_id is 0..1022 (1023, 0x3FF, is the driver's "none") and appears once; address
// is a numeric IPv4 or IPv6 address, optionally with a port (`10.0.0.2:7017`, `[fd00::2]:7017`;
// default kDefaultPodPort). The process's own server id must have a line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace aclvmm {

inline constexpr int kMaxServerId = 1022;
inline constexpr uint16_t kDefaultPodPort = 7017;

struct PodMember {
  int server_id = 0;
  std::string address;  // numeric, without brackets
  uint16_t port = kDefaultPodPort;
  friend bool operator==(const PodMember& a, const PodMember& b) {
    return a.server_id == b.server_id && a.address == b.address && a.port == b.port;
  }
};

// The members listed in `text` (a pod file's content), in file order. An error names the line
// and what is wrong with it; `own_server` must be listed.
StatusOr<std::vector<PodMember>> parse_pod(const std::string& text, int own_server);

}  // namespace aclvmm
