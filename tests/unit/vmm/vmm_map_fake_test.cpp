// vmm::Vmm's reservations, mappings and access rights (src/vmm/vmm_map.cpp) over the fake
// backend: a reservation is a range of the fake's windows, a mapping one entry of its MMU over
// the handle's object (the bytes the fake holds are what the test's CPU reads there), access
// changes and peer grants the MMU's rights; the handle's references follow the mappings, so each
// refusal of the fake is worded and leaves the handle, the object, the range and the MMU as they
// were; the product rules and the runtime's own checks answer before the fake is asked anything.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;
using dev::Access;
using dev::Location;

using testing::hex;

class VmmMapFakeTest : public ::testing::Test {
 protected:
  uint64_t handle_on(int device, uint64_t bytes = 4 * kMiB) {
    vmm::PhysicalSpec spec;
    spec.device = device;
    auto h = f_.vmm.malloc_physical(bytes, spec);
    EXPECT_TRUE(h.ok()) << h.status().message();
    return h.ok() ? *h : 0;
  }
  uint64_t reservation(uint64_t bytes = 4 * kMiB) {
    auto va = f_.vmm.reserve(bytes, 0, 0, false);
    EXPECT_TRUE(va.ok()) << va.status().message();
    return va.ok() ? *va : 0;
  }
  Access access(uint64_t va, Location who) {
    Access a = Access::kNone;
    EXPECT_TRUE(f_.device().device()->mmu().access(va, who, &a).ok());
    return a;
  }
  testing::FakeRuntime f_;
};

TEST_F(VmmMapFakeTest, AMappingShowsTheHandlesObjectThroughTheFakesMmu) {
  const uint64_t handle = handle_on(0);
  const uint64_t va = reservation();
  EXPECT_TRUE(f_.layout().device.contains(va));
  EXPECT_EQ(f_.fake().live_ranges(), 1u);
  ASSERT_TRUE(f_.vmm.map(va, 4 * kMiB, 0, handle, false).ok());
  EXPECT_EQ(f_.fake().live_mappings(), 1u);
  dev::AddressInfo info;
  ASSERT_TRUE(f_.device().device()->mmu().query(va + kMiB, &info).ok());
  EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kMapping);
  EXPECT_EQ(info.range.base, va);
  EXPECT_EQ(info.range.size, 4 * kMiB);
  EXPECT_EQ(info.offset, kMiB);
  EXPECT_EQ(info.memory.value, f_.physical.find(handle)->device_memory.id().value);
  EXPECT_EQ(access(va, Location::device(0)), Access::kReadWrite) << "the owner's rights";
  EXPECT_EQ(access(va, Location::device(1)), Access::kNone);

  // The CPU (the MMU's HOST rights) sees the object's bytes once the host is granted access.
  const char text[] = "mapped through the fake";
  ASSERT_TRUE(f_.fake()
                  .write_physical(f_.physical.find(handle)->device_memory.id(), 3 * kMiB, text,
                                  sizeof text)
                  .ok());
  char seen[sizeof text] = {};
  EXPECT_FALSE(f_.fake().cpu_access(va + 3 * kMiB, seen, sizeof seen, false).ok())
      << "no HOST rights yet";
  AccessChange host;
  host.host = true;
  host.flags = 3;
  ASSERT_TRUE(f_.vmm.set_access(va, 4 * kMiB, {host}).ok());
  EXPECT_EQ(access(va, Location::host()), Access::kReadWrite);
  ASSERT_TRUE(f_.fake().cpu_access(va + 3 * kMiB, seen, sizeof seen, false).ok());
  EXPECT_STREQ(seen, text);
  EXPECT_EQ(*f_.vmm.get_access(va, true, 0), 3);

  // aclrtMemP2PMap of a reservation: the MMU grants the peer, the records follow.
  ASSERT_TRUE(f_.vmm.p2p_map(va, 4 * kMiB, 1).ok());
  EXPECT_EQ(access(va, Location::device(1)), Access::kReadWrite);
  EXPECT_EQ(*f_.vmm.get_access(va, false, 1), 3);

  ASSERT_TRUE(f_.vmm.unmap(va).ok());
  EXPECT_EQ(f_.fake().live_mappings(), 0u);
  EXPECT_EQ(f_.fake().live_physical_objects(), 1u) << "the handle still holds its object";
  ASSERT_TRUE(f_.vmm.free_physical(handle).ok());
  ASSERT_TRUE(f_.vmm.release(va).ok());
  EXPECT_EQ(f_.fake().live_ranges(), 0u);
  EXPECT_EQ(f_.fake().live_physical_objects(), 0u);
  f_.device().expect_no_violations();
}

TEST_F(VmmMapFakeTest, ANoAccessMappingGivesTheOwnerNothing) {
  f_.rt.product.no_access_mappings = true;
  const uint64_t handle = handle_on(1);
  const uint64_t va = reservation();
  ASSERT_TRUE(f_.vmm.map(va, 4 * kMiB, 0, handle, true).ok());
  EXPECT_EQ(access(va, Location::device(1)), Access::kNone);
  ASSERT_TRUE(f_.vmm.unmap(va).ok());
  ASSERT_TRUE(f_.vmm.free_physical(handle).ok());
  ASSERT_TRUE(f_.vmm.release(va).ok());
  f_.device().expect_no_violations();
}

// Each refusal of the fake, with the handle's references and everyone's records as they were.
TEST_F(VmmMapFakeTest, EachRefusalOfTheFakeIsWordedAndLeavesNothing) {
  const uint64_t handle = handle_on(0);
  const uint64_t va = reservation();
  AccessChange peer;
  peer.device = 1;
  peer.flags = 3;
  const struct {
    const char* what;
    const char* step;
    bool mapped;  // the call finds the mapping made
    Status (*call)(vmm::Vmm&, uint64_t va, uint64_t handle, const AccessChange&);
    int code;
    std::string words;
  } cases[] = {
      {"map", steps::kMmuMap, false,
       [](vmm::Vmm& v, uint64_t at, uint64_t h, const AccessChange&) {
         return v.map(at, 4 * kMiB, 0, h, false);
       },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the mapping at " + hex(va) + " could not be made: "},
      {"unmap", steps::kMmuUnmap, true,
       [](vmm::Vmm& v, uint64_t at, uint64_t, const AccessChange&) { return v.unmap(at); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "the mapping at " + hex(va) + " could not be removed: "},
      {"set_access", steps::kMmuSetAccess, true,
       [](vmm::Vmm& v, uint64_t at, uint64_t, const AccessChange& c) {
         return v.set_access(at, 4 * kMiB, {c});
       },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "the access of the mapping at " + hex(va) + " could not be set: "},
      {"p2p_map", steps::kMmuGrantPeer, true,
       [](vmm::Vmm& v, uint64_t at, uint64_t, const AccessChange&) {
         return v.p2p_map(at, 4 * kMiB, 1);
       },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "peer access to the range at " + hex(va) + " could not be given: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    if (c.mapped) {
      ASSERT_TRUE(f_.vmm.map(va, 4 * kMiB, 0, handle, false).ok());
    }
    const int refs = f_.physical.find(handle)->ref.load();
    f_.recorder().arm(c.step, 1, EIO);
    const Status st = c.call(f_.vmm, va, handle, peer);
    EXPECT_FALSE(f_.recorder().armed(c.step)) << "the fake was not asked";
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_EQ(st.message().rfind(c.words, 0), 0u) << st.message();
    EXPECT_GT(st.message().size(), c.words.size()) << "the fake's reason follows";
    EXPECT_EQ(f_.physical.find(handle)->ref.load(), refs) << "the handle's references";
    EXPECT_EQ(f_.fake().live_mappings(), c.mapped ? 1u : 0u);
    EXPECT_EQ(f_.space.mapping_count(), c.mapped ? 1u : 0u);
    if (c.mapped) {
      EXPECT_EQ(access(va, Location::device(1)), Access::kNone) << "no right was left";
      EXPECT_EQ(*f_.vmm.get_access(va, false, 1), 0) << "the records did not change";
      ASSERT_TRUE(f_.vmm.unmap(va).ok());
    }
    EXPECT_EQ(f_.physical.find(handle)->ref.load(), 1);
  }
  // A reservation the windows refuse leaves no region.
  f_.recorder().arm(steps::kWindowReserve, 1, ENOMEM);
  EXPECT_FALSE(f_.vmm.reserve(2 * kMiB, 0, 0, false).ok());
  EXPECT_FALSE(f_.recorder().armed(steps::kWindowReserve));
  EXPECT_EQ(f_.fake().live_ranges(), 1u);
  EXPECT_EQ(f_.space.region_count(RegionKind::kReservation), 1u);
  ASSERT_TRUE(f_.vmm.free_physical(handle).ok());
  ASSERT_TRUE(f_.vmm.release(va).ok());
  f_.device().expect_no_violations();
}

// The handle freed while its mapping failed: the mapping's reference was the last one, and the
// failure releases the handle and its object.
TEST_F(VmmMapFakeTest, AFailedMapDropsTheReferenceItTook) {
  const uint64_t handle = handle_on(0);
  const uint64_t va = reservation();
  f_.recorder().arm(steps::kMmuMap, 1, EIO);
  ASSERT_FALSE(f_.vmm.map(va, 4 * kMiB, 0, handle, false).ok());
  EXPECT_EQ(f_.physical.find(handle)->map_ref.load(), 0);
  ASSERT_TRUE(f_.vmm.free_physical(handle).ok()) << "not \"still mapped\"";
  EXPECT_EQ(f_.physical.size(), 0u);
  EXPECT_EQ(f_.fake().live_physical_objects(), 0u);
  ASSERT_TRUE(f_.vmm.release(va).ok());
  f_.device().expect_no_violations();
}

TEST_F(VmmMapFakeTest, TheRuntimesOwnChecksNeverReachTheFake) {
  const uint64_t handle = handle_on(0);
  const uint64_t va = reservation();
  const size_t ranges = f_.fake().live_ranges();
  const struct {
    const char* what;
    void (*setup)(testing::StandInRuntime&);
    Status (*call)(vmm::Vmm&, uint64_t va, uint64_t handle);
    int code;
    const char* words;
  } cases[] = {
      {"no-UC reservation ruled out", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t, uint64_t) {
         return v.reserve(kGiB, 0, 0x100000000000ull, true).status();
       },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "not supported on StandInSoc"},
      {"reserve before a device", [](testing::StandInRuntime& rt) { rt.set_svm(false); },
       [](vmm::Vmm& v, uint64_t, uint64_t) { return v.reserve(2 * kMiB, 0, 0, false).status(); },
       ACL_ERROR_RT_INVALID_HANDLE, "aclrtSetDevice"},
      {"alignment not 0", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t, uint64_t) { return v.reserve(2 * kMiB, 4096, 0, false).status(); },
       ACL_ERROR_RT_PARAM_INVALID, "alignment is reserved"},
      {"no-UC without expectPtr", [](testing::StandInRuntime& rt) { rt.product.no_uc_reserve = true; },
       [](vmm::Vmm& v, uint64_t, uint64_t) { return v.reserve(kGiB, 0, 0, true).status(); },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "pass expectPtr"},
      {"expectPtr ruled out", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t, uint64_t) {
         return v.reserve(2 * kMiB, 0, 0x100000000000ull, false).status();
       },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "expectPtr must be NULL on StandInSoc"},
      {"release before a device", [](testing::StandInRuntime& rt) { rt.set_svm(false); },
       [](vmm::Vmm& v, uint64_t at, uint64_t) { return v.release(at); },
       ACL_ERROR_RT_INVALID_HANDLE, "aclrtSetDevice"},
      {"no-access mapping over PCIe",
       [](testing::StandInRuntime& rt) { rt.product.no_access_mappings = false; },
       [](vmm::Vmm& v, uint64_t at, uint64_t h) { return v.map(at, 4 * kMiB, 0, h, true); },
       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "(ACLVMM_INTERCONNECT=pcie)"},
      {"offset not 0", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t at, uint64_t h) { return v.map(at, 2 * kMiB, 2 * kMiB, h, false); },
       ACL_ERROR_RT_PARAM_INVALID, "offset is reserved"},
      {"a forged handle", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t at, uint64_t h) { return v.map(at, 4 * kMiB, 0, h + 1, false); },
       ACL_ERROR_RT_PARAM_INVALID, "not a live physical memory handle"},
      {"past the reservation", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t at, uint64_t h) { return v.map(at, 6 * kMiB, 0, h, false); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "runs past the end of its reservation"},
      {"unmap of nothing mapped", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t at, uint64_t) { return v.unmap(at); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "is not the start of a mapping"},
      {"retain before a device", [](testing::StandInRuntime& rt) { rt.set_svm(false); },
       [](vmm::Vmm& v, uint64_t at, uint64_t) { return v.retain(at).status(); },
       ACL_ERROR_RT_INVALID_HANDLE, "aclrtSetDevice"},
      {"retain of nothing mapped", [](testing::StandInRuntime&) {},
       [](vmm::Vmm& v, uint64_t at, uint64_t) { return v.retain(at).status(); },
       ACL_ERROR_RT_INVALID_HANDLE, "nothing is mapped there"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const ProductRules product = f_.rt.product;
    c.setup(f_.rt);
    const Status st = c.call(f_.vmm, va, handle);
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_NE(st.message().find(c.words), std::string::npos) << st.message();
    EXPECT_EQ(f_.fake().live_ranges(), ranges);
    EXPECT_EQ(f_.fake().live_mappings(), 0u);
    EXPECT_EQ(f_.physical.find(handle)->ref.load(), 1);
    EXPECT_EQ(f_.physical.find(handle)->map_ref.load(), 0);
    f_.rt.product = product;
    f_.rt.set_svm(true);
    f_.device().expect_no_violations();
  }
  ASSERT_TRUE(f_.vmm.free_physical(handle).ok());
  ASSERT_TRUE(f_.vmm.release(va).ok());
}

}  // namespace
}  // namespace aclvmm
