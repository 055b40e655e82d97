// Addresses in messages: "0x" and lowercase hex, as the vendor's runtime prints them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace aclvmm {

inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace aclvmm
