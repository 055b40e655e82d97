// The byte pattern both sides of the sharing tests write and check: the peer program and the gtest
// process must agree on it, and the peer does not link gtest, so it lives here (the same formula as
// aclvmm_test::pattern in api/test_util.h).
#pragma once

#include <cstddef>
#include <string>

namespace share_peer {

inline std::string peer_pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  return s;
}

}  // namespace share_peer
