// The text of an IPC memory key (runtime-extra.md §3.1): the vendor's v2 driver layout, used by
// every backend here on every SoC, so that keys look the same whoever made them:
//   %08x   the exporter's bare tgid (aclrtDeviceGetBareTgid)
//   %016llx a per-process export counter, from 1, never reused within the process
//   %02x   the exporting device's physical id
//   00     the VF id
//   '0' up to 64 lowercase hex characters, then NUL: 65 bytes in all.
// Applications treat the key as opaque; the core parses it only to refuse text no driver could
// have made (107000), and a backend to find the exporter.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace aclvmm::dev {

inline constexpr size_t kIpcKeyLength = 64;  // characters, without the NUL
inline constexpr size_t kIpcKeyBytes = 65;

struct IpcKey {
  char text[kIpcKeyBytes] = {};

  bool operator<(const IpcKey& o) const { return std::strcmp(text, o.text) < 0; }
  bool operator==(const IpcKey& o) const { return std::strcmp(text, o.text) == 0; }
};

struct IpcKeyFields {
  uint32_t tgid = 0;
  uint64_t counter = 0;
  uint32_t device = 0;  // physical id
  uint32_t vf = 0;
};

inline IpcKey format_ipc_key(const IpcKeyFields& f) {
  IpcKey key;
  int n = std::snprintf(key.text, sizeof key.text, "%08x%016llx%02x%02x", f.tgid,
                        static_cast<unsigned long long>(f.counter), f.device & 0xff, f.vf & 0xff);
  for (size_t i = static_cast<size_t>(n); i < kIpcKeyLength; ++i) key.text[i] = '0';
  key.text[kIpcKeyLength] = '\0';
  return key;
}

// Whether `text` (NUL-terminated, its length checked by the caller) is a key of this layout.
inline bool parse_ipc_key(const char* text, IpcKeyFields* out) {
  if (std::strlen(text) != kIpcKeyLength) return false;
  auto hex = [&](size_t from, size_t n, uint64_t* v) {
    *v = 0;
    for (size_t i = from; i < from + n; ++i) {
      const char c = text[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      *v = *v << 4 | static_cast<uint64_t>(d);
    }
    return true;
  };
  uint64_t tgid = 0, counter = 0, device = 0, vf = 0;
  if (!hex(0, 8, &tgid) || !hex(8, 16, &counter) || !hex(24, 2, &device) || !hex(26, 2, &vf)) {
    return false;
  }
  for (size_t i = 28; i < kIpcKeyLength; ++i) {
    if (text[i] != '0') return false;
  }
  if (tgid == 0 || counter == 0) return false;
  out->tgid = static_cast<uint32_t>(tgid);
  out->counter = counter;
  out->device = static_cast<uint32_t>(device);
  out->vf = static_cast<uint32_t>(vf);
  return true;
}

}  // namespace aclvmm::dev
