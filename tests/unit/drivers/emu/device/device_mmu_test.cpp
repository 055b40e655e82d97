// The emulated NPU's device MMU (drivers/emu/device/device_mmu.h): what only emu does: the CPU
// views its rights call for, their inner steps (emu.cpu.map, emu.cpu.unmap) failing without a
// trace, open mode, and the reference a mapping holds on its physical object.
#include "drivers/emu/device/device_mmu.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "drivers/emu/os/placeholders.h"
#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/injection_steps.h"
#include "unit/testing/cpu_probe.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

using testing::cpu_read_faults;

class EmuDeviceMmuTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(dev::emu::os::claim_window(0, kGiB, kGiB, &va_), 0); }
  void TearDown() override { (void)dev::emu::os::release_window(va_, kGiB); }
  PhysicalId create(Location where) {
    PhysicalId id;
    EXPECT_TRUE(physical_.create(PhysicalSpec{where, PageType::kHuge, MemType::kHbm, 2 * kMiB},
                                 &id).ok());
    return id;
  }

  uint64_t va_ = 0;
  testing::RecordingListener listener_;
  CapacityLedger ledger_{listener_, 2, 16 * kMiB, 16 * kMiB};
  EmuPhysicalAllocator physical_{ledger_, listener_, 2, 0, true};
};

TEST_F(EmuDeviceMmuTest, HostMemoryIsCpuVisibleAndAFailedCpuMapMapsNothing) {
  EmuDeviceMmu mmu(listener_, false);
  const PhysicalId host = create(Location::host());
  listener_.arm(steps::kEmuCpuMap, 1, ENOMEM);
  EXPECT_EQ(mmu.map(va_, 2 * kMiB, host, 0, InitialAccess::kOwnerReadWrite),
            Result::from_errno(ENOMEM));
  EXPECT_EQ(mmu.live_mappings(), 0u);
  EXPECT_TRUE(cpu_read_faults(va_)) << "the placeholder is back";
  ASSERT_TRUE(mmu.map(va_, 2 * kMiB, host, 0, InitialAccess::kOwnerReadWrite).ok());
  std::memset(reinterpret_cast<void*>(va_), 0x5a, 4096);
  char byte = 0;
  ASSERT_EQ(EmuPhysical::from_id(host)->memory().read(100, &byte, 1), 0);
  EXPECT_EQ(byte, 0x5a);
  // An unmap whose CPU view cannot be removed keeps the mapping.
  listener_.arm(steps::kEmuCpuUnmap, 1, EBUSY);
  EXPECT_EQ(mmu.unmap(va_, 2 * kMiB), Result::from_errno(EBUSY));
  EXPECT_EQ(mmu.live_mappings(), 1u);
  EXPECT_FALSE(cpu_read_faults(va_));
  ASSERT_TRUE(mmu.unmap(va_, 2 * kMiB).ok());
  EXPECT_TRUE(cpu_read_faults(va_));
  ASSERT_TRUE(physical_.release(host).ok());
}

TEST_F(EmuDeviceMmuTest, AFailedHostGrantChangesNoRight) {
  EmuDeviceMmu mmu(listener_, false);
  const PhysicalId dev = create(Location::device(0));
  ASSERT_TRUE(mmu.map(va_, 2 * kMiB, dev, 0, InitialAccess::kOwnerReadWrite).ok());
  EXPECT_TRUE(cpu_read_faults(va_)) << "device memory is not the CPU's";
  const AccessGrant grants[] = {{Location::device(1), Access::kRead},
                                {Location::host(), Access::kReadWrite}};
  listener_.arm(steps::kEmuCpuMap, 1, ENOMEM);
  size_t applied = 7;
  EXPECT_EQ(mmu.set_access(va_, 2 * kMiB, grants, 2, &applied), Result::from_errno(ENOMEM));
  EXPECT_EQ(applied, 0u);
  Access a = Access::kRead;
  ASSERT_TRUE(mmu.access(va_, Location::device(1), &a).ok());
  EXPECT_EQ(a, Access::kNone);
  ASSERT_TRUE(mmu.access(va_, Location::host(), &a).ok());
  EXPECT_EQ(a, Access::kNone);
  EXPECT_TRUE(cpu_read_faults(va_));
  ASSERT_TRUE(mmu.set_access(va_, 2 * kMiB, grants, 2, &applied).ok());
  EXPECT_EQ(applied, 2u);
  EXPECT_FALSE(cpu_read_faults(va_));
  ASSERT_TRUE(mmu.unmap(va_, 2 * kMiB).ok());
  ASSERT_TRUE(physical_.release(dev).ok());
}

TEST_F(EmuDeviceMmuTest, OpenModeMapsEveryMappingForTheCpu) {
  EmuDeviceMmu mmu(listener_, true);
  const PhysicalId dev = create(Location::device(0));
  ASSERT_TRUE(mmu.map(va_, 2 * kMiB, dev, 0, InitialAccess::kNone).ok());
  EXPECT_FALSE(cpu_read_faults(va_));
  ASSERT_TRUE(mmu.unmap(va_, 2 * kMiB).ok());
  ASSERT_TRUE(physical_.release(dev).ok());
}

TEST_F(EmuDeviceMmuTest, AMappingHoldsItsObjectAndTheMmuLetsGoOfWhatIsLeft) {
  const PhysicalId dev = create(Location::device(0));
  {
    EmuDeviceMmu mmu(listener_, false);
    ASSERT_TRUE(mmu.map(va_, 2 * kMiB, dev, 0, InitialAccess::kOwnerReadWrite).ok());
    ASSERT_TRUE(physical_.release(dev).ok());
    EXPECT_EQ(ledger_.used(Location::device(0)), 2 * kMiB) << "mapped memory keeps its charge";
    // Bad ranges and ids: refused, nothing mapped.
    EXPECT_EQ(mmu.map(va_ + kMiB, 2 * kMiB, dev, 0, InitialAccess::kOwnerReadWrite).condition(),
              Condition::kInvalidArgument);
    EXPECT_EQ(mmu.map(va_, 2 * kMiB, PhysicalId{}, 0, InitialAccess::kNone).condition(),
              Condition::kInvalidArgument);
    EXPECT_EQ(mmu.unmap(va_, 4 * kMiB).condition(), Condition::kInvalidArgument);
  }
  EXPECT_EQ(ledger_.used(Location::device(0)), 0u) << "the MMU dropped its hold when it went";
}

}  // namespace
}  // namespace aclvmm::dev::emu
