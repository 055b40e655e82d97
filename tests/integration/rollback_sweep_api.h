// What the API reports about the objects a swept call touches (rollback_sweep.h compares it before
// and after every failed call, and after an absorbed failure with a clean run): the access rights
// of the host and of devices 0 and 1 (aclrtMemGetAccess), aclrtPointerGetAttributes and
// aclrtMemGetAddressRange at every 2 MiB of each range, the managed range attributes, the
// properties of each handle (aclrtMemGetAllocationPropertiesFromHandle), and the bytes as a
// device copy and as the CPU read them.
//
// Looking must not change what the call will find, or the steps it runs would differ from the
// counted ones: device bytes are read in pieces below 32 KiB, which go through pread and make no
// CPU view of the memory; the CPU reads with process_vm_readv, which reports an inaccessible page
// as EFAULT instead of faulting; managed bytes are read only after the call (any read moves
// managed pages), and compared with what a setup without the call shows.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "api/test_util.h"

namespace rollback_sweep {

using namespace aclvmm_test;

// The objects one call touches, named after its setup made them.
struct Watch {
  struct Range {
    const void* addr = nullptr;
    size_t size = 0;
    bool managed = false;  // managed memory: its bytes are read after the call only
    bool bytes = true;     // false for a copy's destination, which a failed copy may have written in part
  };
  std::vector<Range> ranges;
  std::vector<aclrtDrvMemHandle> handles;
};

// "what was asked" -> "what the API answered". Keys and answers hold no absolute address (each
// setup places its objects anew), so views of different setups compare.
using ApiView = std::map<std::string, std::string>;

inline uint64_t fnv1a(const char* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}
inline std::string hex_of(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The bytes a device copy (current device) reads: the code of the first refused piece, and a hash
// of what was read before it.
inline std::string device_bytes(const void* addr, size_t size, size_t piece) {
  std::string buf(piece, '\0');
  uint64_t h = fnv1a(nullptr, 0);
  for (size_t off = 0; off < size; off += piece) {
    const size_t n = std::min(piece, size - off);
    const aclError rc = aclrtMemcpy(&buf[0], n, static_cast<const char*>(addr) + off, n,
                                    ACL_MEMCPY_DEVICE_TO_HOST);
    if (rc != kOk) return "refused with " + std::to_string(rc) + " at +" + hex_of(off) + " after " + hex_of(h);
    h = fnv1a(buf.data(), n, h);
  }
  return "read " + hex_of(h);
}

// The bytes the CPU reads (process_vm_readv on this process: an inaccessible page ends the read
// instead of raising SIGSEGV).
inline std::string cpu_bytes(const void* addr, size_t size) {
  std::string buf(size, '\0');
  size_t done = 0;
  while (done < size) {
    iovec local{&buf[done], size - done};
    iovec remote{const_cast<char*>(static_cast<const char*>(addr)) + done, size - done};
    const ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return "readable for " + hex_of(done) + " bytes, " + hex_of(fnv1a(buf.data(), done));
}

inline std::string code_text(aclError rc) { return "rc " + std::to_string(rc); }

// Everything the API reports at one address.
inline void view_address(const std::string& key, void* p, bool managed, ApiView* out) {
  const aclrtMemLocation where[] = {host(), dev(0), dev(1)};
  const char* names[] = {"host", "device 0", "device 1"};
  for (int i = 0; i < 3; ++i) {
    aclrtMemLocation l = where[i];
    uint64_t flags = 0xdead;
    const aclError rc = aclrtMemGetAccess(p, &l, &flags);
    (*out)[key + " access " + names[i]] = code_text(rc) + (rc == kOk ? " flags " + std::to_string(flags) : "");
  }
  aclrtPtrAttributes attr{};
  aclError rc = aclrtPointerGetAttributes(p, &attr);
  (*out)[key + " pointer"] =
      code_text(rc) + (rc == kOk ? " type " + std::to_string(load_raw(attr.location.type)) + " id " +
                                       std::to_string(attr.location.id) + " page " +
                                       std::to_string(attr.pageSize)
                                 : "");
  void* base = nullptr;
  size_t size = 0;
  rc = aclrtMemGetAddressRange(p, &base, &size);
  (*out)[key + " address range"] =
      code_text(rc) + (rc == kOk ? " from -" + hex_of(u64(p) - u64(base)) + " size " + hex_of(size) : "");
  if (!managed) return;
  for (int a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; a <= ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID; ++a) {
    int32_t v[4] = {7, 7, 7, 7};
    const size_t n = a == ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY ? sizeof v : sizeof v[0];
    aclrtMemManagedRangeAttribute attribute;
    store_raw(attribute, a);
    rc = aclrtMemManagedGetAttr(attribute, p, k2M, v, n);
    std::string text = code_text(rc);
    for (size_t i = 0; rc == kOk && i < n / 4; ++i) text += " " + std::to_string(v[i]);
    (*out)[key + " managed attribute " + std::to_string(a)] = text;
  }
}

// What the API reports about `w`. Managed bytes only with `managed_bytes` (see above).
inline ApiView api_view(const Watch& w, bool managed_bytes) {
  ApiView out;
  for (size_t i = 0; i < w.ranges.size(); ++i) {
    const Watch::Range& r = w.ranges[i];
    const std::string name = "range " + std::to_string(i);
    // Every 2 MiB for the first 8 MiB, and the last 2 MiB (no-UC reservations are 1 GiB).
    std::vector<size_t> offsets;
    for (size_t off = 0; off < r.size && off < 8 * kMiB; off += k2M) offsets.push_back(off);
    if (r.size > 8 * kMiB) offsets.push_back(r.size - k2M);
    for (size_t off : offsets) {
      view_address(name + " +" + hex_of(off), const_cast<char*>(static_cast<const char*>(r.addr)) + off,
                   r.managed, &out);
    }
    if (!r.bytes || (r.managed && !managed_bytes)) continue;
    out[name + " bytes, device view"] = device_bytes(r.addr, r.size, r.managed ? r.size : 16 * 1024);
    if (!r.managed) out[name + " bytes, CPU view"] = cpu_bytes(r.addr, r.size);
  }
  for (size_t i = 0; i < w.handles.size(); ++i) {
    aclrtPhysicalMemProp prop{};
    const aclError rc = aclrtMemGetAllocationPropertiesFromHandle(w.handles[i], &prop);
    std::string text = code_text(rc);
    if (rc == kOk) {
      text += " " + hex_of(fnv1a(reinterpret_cast<const char*>(&prop), sizeof prop));
      text += " type " + std::to_string(load_raw(prop.location.type)) + " id " + std::to_string(prop.location.id);
    }
    out["handle " + std::to_string(i) + " properties"] = text;
  }
  (void)aclGetRecentErrMsg();  // the refused queries leave messages that are not the call's
  return out;
}

// "" when `got` answers every question of `want` the same way.
inline std::string api_differences(const ApiView& want, const ApiView& got) {
  std::string s;
  for (const auto& [key, answer] : want) {
    auto it = got.find(key);
    const std::string now = it == got.end() ? "(not asked)" : it->second;
    if (now != answer) s += "\n  " + key + ": " + answer + " -> " + now;
  }
  return s;
}

// `base` with the answers only `extra` has (the managed bytes of a view without them).
inline ApiView with_missing(ApiView base, const ApiView& extra) {
  for (const auto& [key, answer] : extra) base.emplace(key, answer);
  return base;
}

}  // namespace rollback_sweep
