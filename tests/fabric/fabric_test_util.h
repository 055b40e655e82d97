// What the fabric tests share: the pipe that stands in for the pod's control path (an exporter's
// offer: its endpoint name and region), exact pipe reads and writes, byte patterns.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "drivers/emu/fabric/rma_endpoint.h"

namespace aclvmm_test {

constexpr uint16_t kFabricPort = 7017;

// What the exporter hands the importer (through a pipe, as the pod's control path would).
struct Offer {
  uint32_t name_size = 0;
  uint8_t name[256] = {};
  aclvmm::dev::emu::fabric::RemoteRegion region;
  uint64_t size = 0;

  bool set_name(const std::vector<uint8_t>& n) {
    if (n.size() > sizeof name) return false;
    name_size = static_cast<uint32_t>(n.size());
    std::memcpy(name, n.data(), n.size());
    return true;
  }
  std::vector<uint8_t> endpoint_name() const {
    return std::vector<uint8_t>(name, name + name_size);
  }
};

inline bool write_all(int fd, const void* p, size_t n) {
  return ::write(fd, p, n) == static_cast<ssize_t>(n);
}
inline bool read_all(int fd, void* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, static_cast<char*>(p) + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

inline std::vector<uint8_t> byte_pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed);
  return v;
}

}  // namespace aclvmm_test
