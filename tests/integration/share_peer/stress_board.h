// The board of stress_share_test.cpp: a small shared file in which the exporting test process
// publishes its current tokens and the importer peers (share_peer.cpp, command "stress") read
// them. One 64-bit word per slot, stored and loaded atomically so that a token and the pattern
// seed of its bytes are always seen together: token in bits 0-39, seed in bits 40-55, who may
// import in bits 56-63.
#pragma once

#include <cstddef>
#include <cstdint>

namespace share_peer {

constexpr size_t kBoardSlots = 8;
constexpr size_t kBoardBytes = 4096;

enum BoardAccess : unsigned {
  kBoardEmpty = 0,       // nothing published in the slot
  kBoardOpen = 1,        // exported with DISABLE_PID_VALIDATION
  kBoardAllListed = 2,   // every importer is on the whitelist
  kBoardEvenListed = 3,  // only the importers with an even index are on the whitelist
};

inline uint64_t board_word(uint64_t token, unsigned seed, unsigned access) {
  return (token & ((uint64_t(1) << 40) - 1)) | (uint64_t(seed & 0xffff) << 40) | (uint64_t(access) << 56);
}
inline uint64_t board_token(uint64_t w) { return w & ((uint64_t(1) << 40) - 1); }
inline unsigned board_seed(uint64_t w) { return static_cast<unsigned>((w >> 40) & 0xffff); }
inline unsigned board_access(uint64_t w) { return static_cast<unsigned>(w >> 56); }
inline bool board_allows(unsigned access, int importer) {
  return access == kBoardOpen || access == kBoardAllListed || (access == kBoardEvenListed && importer % 2 == 0);
}

}  // namespace share_peer
