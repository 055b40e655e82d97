// What the sharing cases (sharing_test.cpp, C28-C36; ipc_key_test.cpp, C51-C55) share: device
// memory of known bytes that the case releases at its end, a second process, and a byte read
// through that process's import.
#pragma once

#include <memory>
#include <vector>

#include "conformance/harness.h"

namespace aclvmm::conformance {

class SharingCase : public BackendTest {
 protected:
  void TearDown() override {
    for (dev::PhysicalId id : held_) EXPECT_TRUE(be().physical().release(id).ok());
    BackendTest::TearDown();
  }

  // `size` bytes of device memory of `device`, every byte `value`, released at the end of the
  // case.
  dev::PhysicalId make_filled(dev::DeviceIndex device, uint64_t size, uint8_t value) {
    dev::PhysicalId id;
    EXPECT_TRUE(be().physical()
                    .create(dev::PhysicalSpec{dev::Location::device(device), dev::PageType::kHuge,
                                              dev::MemType::kHbm, size},
                            &id)
                    .ok());
    std::vector<uint8_t> bytes(size, value);
    EXPECT_TRUE(harness().write_physical(id, 0, bytes.data(), bytes.size()).ok());
    held_.push_back(id);
    return id;
  }
  std::unique_ptr<PeerProcess> peer() {
    auto p = harness().start_peer(setup(), be());
    EXPECT_NE(p, nullptr) << "the harness could not start a second process";
    return p;
  }
  // Forgets an id released by the case itself.
  void released(dev::PhysicalId id) {
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (*it == id) {
        held_.erase(it);
        return;
      }
    }
  }

  std::vector<dev::PhysicalId> held_;
};

// The byte at `offset` of the peer's import.
inline uint8_t peer_byte(PeerProcess& p, uint64_t offset) {
  uint8_t b = 0;
  EXPECT_TRUE(p.read(offset, &b, 1).ok());
  return b;
}

}  // namespace aclvmm::conformance
