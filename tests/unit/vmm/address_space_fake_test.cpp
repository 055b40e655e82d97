// AddressSpace over the fake backend (docs/device-interface.md §8, label `fake`): with no
// emulator, every range it keeps comes from the fake's AddressWindows, every VMM
// mapping and access change is programmed into the fake's DeviceMmu, every aclrtMalloc block is
// the fake's BlockAllocator's, and a refusal of any of those leaves the core's records (and the
// fake's state) as they were. The fake's live counts and its own queries are the witnesses; no
// test may leave a violation (a precondition the core failed to check).
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <string>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_device.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;
using dev::Access;
using dev::Location;

class AddressSpaceFakeTest : public ::testing::Test {
 protected:
  AddressSpaceFakeTest() : device_() {
    space_ = std::make_unique<AddressSpace>();
    space_->attach_device(device_.device());
  }
  ~AddressSpaceFakeTest() override {
    space_.reset();  // clear(): everything back to the fake
    EXPECT_EQ(fake().live_ranges(), 0u) << "a range outlived the address space";
    EXPECT_EQ(fake().live_mappings(), 0u) << "a mapping outlived the address space";
    device_.expect_no_violations();
  }

  dev::fake::FakeBackend& fake() { return device_.fake(); }
  dev::DeviceMmu& mmu() { return device_.device()->mmu(); }
  const dev::WindowLayout& layout() { return device_.device()->windows().layout(); }
  std::shared_ptr<PhysicalAllocation> memory(Location where, uint64_t bytes = 2 * kMiB) {
    return device_.make_allocation(where, bytes);
  }
  Access access(uint64_t va, Location who) {
    Access a = Access::kNone;
    EXPECT_TRUE(mmu().access(va, who, &a).ok());
    return a;
  }

  testing::FakeDevice device_;
  std::unique_ptr<AddressSpace> space_;
};

TEST_F(AddressSpaceFakeTest, ReservationsAreRangesOfTheFakesWindows) {
  const size_t before = fake().live_ranges();
  StatusOr<uint64_t> a = space_->reserve(4 * kMiB, 0, false, "test");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(layout().device.contains(*a));
  EXPECT_EQ(*a % kChunk, 0u);
  EXPECT_EQ(fake().live_ranges(), before + 1);
  // A fixed address where a range already lies is refused by the windows, and nothing is kept.
  StatusOr<uint64_t> again = space_->reserve(2 * kMiB, *a, false, "test");
  EXPECT_EQ(again.status().code(), ACL_ERROR_RT_DRV_INTERNAL_ERROR) << again.status().message();
  EXPECT_EQ(fake().live_ranges(), before + 1);
  EXPECT_EQ(space_->region_count(RegionKind::kReservation), 1u);
  ASSERT_TRUE(space_->release(*a).ok());
  EXPECT_EQ(fake().live_ranges(), before);
  EXPECT_FALSE(space_->release(*a).ok()) << "released twice";
  // The windows' refusal to give a range back keeps the reservation recorded.
  StatusOr<uint64_t> b = space_->reserve(2 * kMiB, 0, false, "test");
  ASSERT_TRUE(b.ok());
  device_.recorder().arm(steps::kWindowRelease, 1, EBUSY);
  EXPECT_FALSE(space_->release(*b).ok());
  EXPECT_EQ(space_->region_count(RegionKind::kReservation), 1u);
  EXPECT_EQ(fake().live_ranges(), before + 1);
  ASSERT_TRUE(space_->release(*b).ok());
}

TEST_F(AddressSpaceFakeTest, MappingsAndAccessChangesAreProgrammedIntoTheFakesMmu) {
  const uint64_t va = *space_->reserve(4 * kMiB, 0, false, "test");
  auto dev0 = memory(Location::device(0));
  ASSERT_TRUE(dev0);
  ASSERT_TRUE(space_->map(va, 2 * kMiB, 7, dev0, false).ok());
  EXPECT_EQ(fake().live_mappings(), 1u);
  dev::AddressInfo info;
  ASSERT_TRUE(mmu().query(va + 4097, &info).ok());
  EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kMapping);
  EXPECT_EQ(info.memory, dev0->device_memory.id());
  EXPECT_EQ(info.range.base, va);
  EXPECT_EQ(info.range.size, 2 * kMiB);
  EXPECT_EQ(access(va, Location::device(0)), Access::kReadWrite) << "the owner gets READWRITE";
  EXPECT_EQ(access(va, Location::device(1)), Access::kNone);
  EXPECT_EQ(access(va, Location::host()), Access::kNone);

  ASSERT_TRUE(space_->set_access(va, 2 * kMiB, {AccessChange{false, 1, 1}}, false).ok());
  EXPECT_EQ(access(va, Location::device(1)), Access::kRead);
  EXPECT_EQ(*space_->get_access(va, false, 1), 1);
  ASSERT_TRUE(space_->grant_peer(va, 2 * kMiB, 1).ok());
  EXPECT_EQ(access(va, Location::device(1)), Access::kReadWrite);

  // No access at map time: nobody may touch it until set_access grants.
  auto dev0b = memory(Location::device(0));
  ASSERT_TRUE(space_->map(va + 2 * kMiB, 2 * kMiB, 8, dev0b, true).ok());
  EXPECT_EQ(access(va + 2 * kMiB, Location::device(0)), Access::kNone);
  EXPECT_EQ(fake().live_mappings(), 2u);

  StatusOr<PointerInfo> p = space_->pointer_info(va + 2 * kMiB + 5, 4096);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, PointerInfo::kDevice);
  EXPECT_EQ(p->device, 0);
  StatusOr<AddressRange> r = space_->address_range(va + 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base, va);
  EXPECT_EQ(r->size, 2 * kMiB);

  ASSERT_TRUE(space_->unmap(va).ok());
  EXPECT_EQ(mmu().query(va, &info).condition(), dev::Condition::kNotFound);
  ASSERT_TRUE(space_->unmap(va + 2 * kMiB).ok());
  EXPECT_EQ(fake().live_mappings(), 0u);
  ASSERT_TRUE(space_->release(va).ok());
}

TEST_F(AddressSpaceFakeTest, HostMemoryMappedIntoAReservationGivesTheHostItsRights) {
  const uint64_t va = *space_->reserve(2 * kMiB, 0, false, "test");
  auto host = memory(Location::host());
  ASSERT_TRUE(host);
  ASSERT_TRUE(space_->map(va, 2 * kMiB, 9, host, false).ok());
  EXPECT_EQ(access(va, Location::host()), Access::kReadWrite);
  StatusOr<PointerInfo> p = space_->pointer_info(va, 4096);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, PointerInfo::kHost);
  // The CPU reaches it through the fake MMU's CPU view: bytes written there are the object's.
  const char bytes[] = "through the host view";
  ASSERT_TRUE(fake().cpu_access(va + 100, const_cast<char*>(bytes), sizeof bytes, true).ok());
  char back[sizeof bytes] = {};
  ASSERT_TRUE(fake().read_physical(host->device_memory.id(), 100, back, sizeof back).ok());
  EXPECT_STREQ(back, bytes);
  ASSERT_TRUE(space_->unmap(va).ok());
  ASSERT_TRUE(space_->release(va).ok());
}

// Each refusal of the fake, injected at its first execution, leaves the core's records and the
// fake's state as they were; the same call then succeeds. Table-driven over the MMU's steps.
TEST_F(AddressSpaceFakeTest, ARefusalOfTheFakeLeavesEverythingAsItWas) {
  const uint64_t va = *space_->reserve(2 * kMiB, 0, false, "test");
  auto dev0 = memory(Location::device(0));
  ASSERT_TRUE(dev0);
  const struct Case {
    const char* step;
    int code;                   // errno the fake answers
    bool mapped_before;         // the mapping exists when the call runs
    std::function<Status()> call;
    int acl;                    // the core's code for it
    size_t mappings_after;      // what the MMU holds after the refusal
  } cases[] = {
      {steps::kMmuMap, ENOMEM, false, [&] { return space_->map(va, 2 * kMiB, 7, dev0, false); },
       ACL_ERROR_RT_MEMORY_ALLOCATION, 0},
      {steps::kMmuSetAccess, EIO, true,
       [&] { return space_->set_access(va, 2 * kMiB, {AccessChange{true, 0, 3}}, false); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, 1},
      {steps::kMmuGrantPeer, EIO, true, [&] { return space_->grant_peer(va, 2 * kMiB, 1).status(); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, 1},
      {steps::kMmuUnmap, EBUSY, true, [&] { return space_->unmap(va).status(); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.step);
    if (c.mapped_before) {
      ASSERT_TRUE(space_->map(va, 2 * kMiB, 7, dev0, false).ok());
    }
    device_.recorder().arm(c.step, 1, c.code);
    const Status refused = c.call();
    EXPECT_EQ(refused.code(), c.acl) << refused.message();
    EXPECT_EQ(fake().live_mappings(), c.mappings_after);
    EXPECT_EQ(space_->mapping_count(), c.mappings_after);
    if (c.mapped_before) {
      EXPECT_EQ(*space_->get_access(va, true, 0), 0) << "the record kept the host's old flags";
      EXPECT_EQ(*space_->get_access(va, false, 1), 0) << "the record kept device 1's old flags";
      EXPECT_EQ(access(va, Location::host()), Access::kNone);
      EXPECT_EQ(access(va, Location::device(1)), Access::kNone);
      ASSERT_TRUE(space_->unmap(va).ok());
    } else {
      EXPECT_FALSE(space_->get_access(va, false, 0).ok()) << "nothing recorded";
    }
    EXPECT_EQ(fake().live_mappings(), 0u);
  }
  ASSERT_TRUE(space_->release(va).ok());
}

TEST_F(AddressSpaceFakeTest, BlocksAreTheFakesBlockAllocators) {
  const size_t before = fake().live_ranges();
  BlockSpec spec;
  spec.kind = RegionKind::kDeviceMalloc;
  spec.size = 3 * kMiB;
  spec.requested = 3 * kMiB - 100;
  spec.page_size = 2 * kMiB;
  spec.device = 1;
  auto phys = std::make_shared<PhysicalAllocation>();
  phys->side = Side::kDevice;
  phys->device = 1;
  phys->size = spec.size;
  StatusOr<uint64_t> base = space_->add_block(spec, phys);
  ASSERT_TRUE(base.ok()) << base.status().message();
  EXPECT_TRUE(layout().device.contains(*base));
  EXPECT_GT(fake().live_ranges(), before) << "the block's range is the fake's";
  dev::AddressInfo info;
  ASSERT_TRUE(mmu().query(*base + 7, &info).ok());
  EXPECT_EQ(info.kind, dev::AddressInfo::Kind::kDeviceBlock);
  EXPECT_EQ(info.owner.id, 1);
  StatusOr<PointerInfo> p = space_->pointer_info(*base + 7, 4096);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, PointerInfo::kDevice);
  EXPECT_EQ(p->device, 1);
  EXPECT_EQ(p->page_size, 2 * kMiB);
  // A block larger than the fake device's memory: the fake's ledger refuses (207001), and the
  // refusal leaves no region and no range.
  BlockSpec big = spec;
  big.size = big.requested = device_.config().device_memory * 2;
  auto big_phys = std::make_shared<PhysicalAllocation>();
  big_phys->side = Side::kDevice;
  big_phys->device = 1;
  big_phys->size = big.size;
  dev::Condition why = dev::Condition::kOk;
  const size_t with_one = fake().live_ranges();
  StatusOr<uint64_t> refused = space_->add_block(big, big_phys, &why);
  EXPECT_EQ(refused.status().code(), ACL_ERROR_RT_MEMORY_ALLOCATION) << refused.status().message();
  EXPECT_EQ(why, dev::Condition::kOutOfMemory);
  EXPECT_EQ(fake().live_ranges(), with_one);
  EXPECT_EQ(space_->region_count(RegionKind::kDeviceMalloc), 1u);

  StatusOr<std::unique_ptr<Region>> gone = space_->remove_allocation(*base, RegionKind::kDeviceMalloc);
  ASSERT_TRUE(gone.ok()) << gone.status().message();
  EXPECT_EQ(fake().live_ranges(), before);
  EXPECT_EQ(mmu().query(*base + 7, &info).condition(), dev::Condition::kNotFound);
}

TEST_F(AddressSpaceFakeTest, ClearGivesEveryRangeAndMappingBackToTheFake) {
  const uint64_t a = *space_->reserve(2 * kMiB, 0, false, "test");
  const uint64_t b = *space_->reserve(4 * kMiB, 0, false, "test");
  ASSERT_TRUE(space_->map(a, 2 * kMiB, 1, memory(Location::device(0)), false).ok());
  ASSERT_TRUE(space_->map(b + 2 * kMiB, 2 * kMiB, 2, memory(Location::device(1)), false).ok());
  EXPECT_EQ(fake().live_mappings(), 2u);
  std::vector<std::unique_ptr<Region>> left = space_->clear();
  EXPECT_EQ(left.size(), 2u) << "clear() returns what was left, for the leak report";
  EXPECT_EQ(fake().live_mappings(), 0u);
  EXPECT_EQ(fake().live_ranges(), 0u);
}

}  // namespace
}  // namespace aclvmm
