// Conformance of DeviceManager (docs/device-interface.md §9, C1-C4).
#include <cerrno>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::kMiB;
using dev::Location;
using dev::MemoryInfo;
using dev::MemoryKind;
using dev::PhysicalId;
using dev::PhysicalSpec;

class DevicesConformance : public BackendTest {
 protected:
  BackendSetup setup() const override { return BackendSetup{3, 64 * kMiB}; }

  uint64_t free_hbm(dev::DeviceIndex d) {
    MemoryInfo info;
    EXPECT_TRUE(be().devices().memory_info(d, MemoryKind::kHbm, &info).ok());
    return info.free;
  }
};

// C1: count and a SoC name per device; out-of-range ids kInvalidArgument.
TEST_P(DevicesConformance, C1_CountAndPropertiesOfEveryDevice) {
  dev::DeviceManager& devices = be().devices();
  ASSERT_EQ(devices.device_count(), 3);
  for (dev::DeviceIndex d = 0; d < devices.device_count(); ++d) {
    dev::DeviceProperties p;
    ASSERT_TRUE(devices.properties(d, &p).ok()) << d;
    EXPECT_FALSE(p.soc_name.empty()) << d;
    if (harness().traits().memory_in_properties) {
      EXPECT_EQ(p.memory_total, 64 * kMiB) << d;
    }
    MemoryInfo info;
    ASSERT_TRUE(devices.memory_info(d, MemoryKind::kHbm, &info).ok()) << d;
    EXPECT_EQ(info.total, 64 * kMiB) << d;
    EXPECT_EQ(info.free, 64 * kMiB) << d;
  }
  EXPECT_GT(devices.bare_tgid(), 0);
  dev::DeviceProperties p;
  MemoryInfo info;
  for (dev::DeviceIndex bad : {-1, 3, 64, 1000}) {
    EXPECT_EQ(devices.properties(bad, &p).condition(), Condition::kInvalidArgument) << bad;
    EXPECT_EQ(devices.open(bad).condition(), Condition::kInvalidArgument) << bad;
    EXPECT_EQ(devices.close(bad).condition(), Condition::kInvalidArgument) << bad;
    EXPECT_EQ(devices.memory_info(bad, MemoryKind::kHbm, &info).condition(),
              Condition::kInvalidArgument)
        << bad;
  }
}

// C2: open twice is kBusy; close, and it opens again; devices are independent.
TEST_P(DevicesConformance, C2_SecondOpenIsBusyAndCloseOpensAgain) {
  dev::DeviceManager& devices = be().devices();
  // From closed devices, as emu's and fake's harnesses leave them (hal's opens every device).
  if (harness().traits().devices_open) {
    for (dev::DeviceIndex d = 0; d < 3; ++d) ASSERT_TRUE(devices.close(d).ok()) << d;
  }
  ASSERT_TRUE(devices.open(0).ok());
  EXPECT_EQ(devices.open(0).condition(), Condition::kBusy);
  ASSERT_TRUE(devices.open(1).ok());
  ASSERT_TRUE(devices.close(0).ok());
  EXPECT_EQ(devices.close(0).condition(), Condition::kInvalidArgument);  // not open any more
  EXPECT_EQ(devices.open(1).condition(), Condition::kBusy);
  ASSERT_TRUE(devices.open(0).ok());
  EXPECT_TRUE(devices.close(0).ok());
  EXPECT_TRUE(devices.close(1).ok());
  EXPECT_EQ(devices.close(2).condition(), Condition::kInvalidArgument);  // never opened
}

// C3: free HBM drops by exactly an allocation's size and comes back with its release; the
// usage reports say the same and sum to 0.
TEST_P(DevicesConformance, C3_FreeMemoryFollowsAllocationsExactly) {
  const uint64_t before0 = free_hbm(0), before1 = free_hbm(1);
  PhysicalId a, b, host;
  ASSERT_TRUE(be().physical().create(PhysicalSpec{Location::device(0), dev::PageType::kHuge,
                                                  dev::MemType::kHbm, 6 * kMiB},
                                     &a)
                  .ok());
  EXPECT_EQ(free_hbm(0), before0 - 6 * kMiB);
  EXPECT_EQ(free_hbm(1), before1);
  ASSERT_TRUE(be().physical().create(PhysicalSpec{Location::device(1), dev::PageType::kNormal,
                                                  dev::MemType::kP2pHbm, 2 * kMiB},
                                     &b)
                  .ok());
  ASSERT_TRUE(be().physical().create(PhysicalSpec{Location::host(), dev::PageType::kHuge,
                                                  dev::MemType::kDdr, 4 * kMiB},
                                     &host)
                  .ok());
  EXPECT_EQ(free_hbm(1), before1 - 2 * kMiB);
  EXPECT_EQ(free_hbm(0), before0 - 6 * kMiB) << "host memory is not charged to a device";
  ASSERT_TRUE(be().physical().release(a).ok());
  ASSERT_TRUE(be().physical().release(b).ok());
  ASSERT_TRUE(be().physical().release(host).ok());
  EXPECT_EQ(free_hbm(0), before0);
  EXPECT_EQ(free_hbm(1), before1);

  const auto usage = listener_.usage();
  ASSERT_EQ(usage.size(), 6u);
  EXPECT_EQ(usage[0].device, 0);
  EXPECT_EQ(usage[0].delta, static_cast<int64_t>(6 * kMiB));
  EXPECT_EQ(usage[1].device, 1);
  EXPECT_EQ(usage[1].delta, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(usage[2].device, dev::kNoDevice);
  EXPECT_EQ(usage[2].delta, static_cast<int64_t>(4 * kMiB));
  for (dev::DeviceIndex d : {0, 1, dev::kNoDevice}) EXPECT_EQ(listener_.usage_sum(d), 0) << d;
}

// C4: peer access round trip, one direction at a time.
TEST_P(DevicesConformance, C4_PeerAccessRoundTrip) {
  dev::DeviceManager& devices = be().devices();
  // Where can_access_peer asks the hardware instead (hal), only the calls' results are checked.
  const bool links = harness().traits().peer_links_reported;
  auto linked = [&](dev::DeviceIndex d, dev::DeviceIndex peer, bool expected) {
    if (links) {
      EXPECT_EQ(devices.can_access_peer(d, peer), expected) << d << " -> " << peer;
    }
  };
  linked(0, 1, false);
  ASSERT_TRUE(devices.enable_peer(0, 1).ok());
  linked(0, 1, true);
  linked(1, 0, false);  // one direction only
  linked(0, 2, false);
  EXPECT_TRUE(devices.enable_peer(0, 1).ok()) << "idempotent";
  ASSERT_TRUE(devices.enable_peer(2, 0).ok());
  linked(2, 0, true);
  ASSERT_TRUE(devices.disable_peer(0, 1).ok());
  linked(0, 1, false);
  linked(2, 0, true);  // other links stay
  EXPECT_TRUE(devices.disable_peer(0, 1).ok()) << "idempotent";
  EXPECT_EQ(devices.enable_peer(1, 1).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(devices.enable_peer(0, 3).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(devices.disable_peer(-1, 0).condition(), Condition::kInvalidArgument);
  EXPECT_FALSE(devices.can_access_peer(1, 1));
  EXPECT_FALSE(devices.can_access_peer(0, 3));
}

ACLVMM_CONFORMANCE_SUITE(DevicesConformance);

}  // namespace
}  // namespace aclvmm::conformance
