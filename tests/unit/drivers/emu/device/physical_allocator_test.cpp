// The emulated NPU's physical allocator (drivers/emu/device/physical_allocator.h): what only emu
// does: its inner step emu.memfd.create rolls the charge back and leaks no descriptor, the id is
// the object, and a held object keeps its bytes and its charge until the last holder lets go.

#include "drivers/emu/device/physical_allocator.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/memory_recycler.h"
#include "drivers/injection_steps.h"
#include "unit/testing/descriptors.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

using testing::open_descriptors;

PhysicalSpec on_device(uint64_t size) {
  return PhysicalSpec{Location::device(0), PageType::kHuge, MemType::kHbm, size};
}

class EmuPhysicalAllocatorTest : public ::testing::Test {
 protected:
  testing::RecordingListener listener_;
  CapacityLedger ledger_{listener_, 1, 16 * kMiB, 16 * kMiB};
  EmuPhysicalAllocator physical_{ledger_, listener_, 1, 0, true};
};

TEST_F(EmuPhysicalAllocatorTest, AFailedMemfdGivesTheChargeBackAndLeaksNothing) {
  const size_t fds = open_descriptors();
  listener_.arm(steps::kEmuMemfdCreate, 1, EMFILE);
  PhysicalId id{5};
  EXPECT_EQ(physical_.create(on_device(4 * kMiB), &id), Result::from_errno(EMFILE));
  EXPECT_EQ(id.value, 5u);
  EXPECT_EQ(ledger_.used(Location::device(0)), 0u);
  EXPECT_EQ(listener_.usage().size(), 2u) << "charged, then given back";
  EXPECT_EQ(listener_.usage_sum(0), 0);
  EXPECT_EQ(open_descriptors(), fds);
  ASSERT_TRUE(physical_.create(on_device(4 * kMiB), &id).ok()) << "the rule fired once";
  EXPECT_EQ(open_descriptors(), fds + 1) << "one memfd per object";
  ASSERT_TRUE(physical_.release(id).ok());
  // Device memory goes back to the recycler (os/memory_recycler.h), which holds it until drained.
  EXPECT_EQ(os::recycler::counts().held, 1u);
  os::recycler::drain();
  EXPECT_EQ(open_descriptors(), fds);
}

TEST_F(EmuPhysicalAllocatorTest, TheIdIsTheObjectAndHoldersKeepItAlive) {
  PhysicalId id;
  ASSERT_TRUE(physical_.create(on_device(2 * kMiB), &id).ok());
  EmuPhysical* object = EmuPhysical::from_id(id);
  EXPECT_EQ(object->id(), id);
  EXPECT_EQ(object->memory().size(), 2 * kMiB);
  const char text[] = "held";
  ASSERT_EQ(object->memory().write(100, text, sizeof text), 0);
  object->retain();  // a mapping or a running copy (migration steps 2-3)
  ASSERT_TRUE(physical_.release(id).ok());
  EXPECT_EQ(ledger_.used(Location::device(0)), 2 * kMiB) << "the bytes are still held";
  char back[sizeof text] = {};
  ASSERT_EQ(object->memory().read(100, back, sizeof back), 0);
  EXPECT_STREQ(back, "held");
  object->drop();
  EXPECT_EQ(ledger_.used(Location::device(0)), 0u);
  EXPECT_EQ(listener_.usage_sum(0), 0);
}

TEST_F(EmuPhysicalAllocatorTest, WithoutNumaHostNumaIsNotSupported) {
  PhysicalId id;
  EXPECT_EQ(physical_
                .create({Location::host_numa(0), PageType::kHuge, MemType::kDdr, 2 * kMiB}, &id)
                .condition(),
            Condition::kNotSupported);
  EXPECT_EQ(physical_.release(PhysicalId{}).condition(), Condition::kInvalidArgument);
  EXPECT_TRUE(listener_.usage().empty());
}

}  // namespace
}  // namespace aclvmm::dev::emu
