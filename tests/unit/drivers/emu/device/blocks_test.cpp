// The emulated NPU's blocks (drivers/emu/device/blocks.h): what only emu does: each inner step
// of a block (emu.memfd.create, emu.cpu.map for a host block's CPU view, emu.cpu.unmap at free)
// failing leaves no trace (no charge, no entry, no CPU mapping, the descriptors as they were), a
// block whose CPU view cannot go stays whole, and open mode shows device blocks to the CPU.
#include "drivers/emu/device/blocks.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/device_mmu.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/device/windows.h"
#include "drivers/emu/os/placeholders.h"
#include "drivers/injection_steps.h"
#include "unit/testing/cpu_probe.h"
#include "unit/testing/descriptors.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

using testing::cpu_read_faults;

using testing::open_descriptors;

class EmuBlocksTest : public ::testing::Test {
 protected:
  // The process's windows (windows.h); va_ is where the next host block goes (first fit: a
  // block freed again leaves it free).
  void SetUp() override {
    ASSERT_TRUE(windows_.open().ok());
    EmuDeviceMmu mmu(listener_, false);
    EmuBlocks blocks(physical_, mmu, windows_, 2);
    Block block;
    ASSERT_TRUE(blocks.allocate(request(BlockKind::kHostPinned, 4096), &block).ok());
    va_ = block.address;
    ASSERT_TRUE(blocks.free(va_).ok());
  }
  static BlockRequest request(BlockKind kind, uint64_t size) {
    BlockRequest r;
    r.kind = kind;
    r.device = kind == BlockKind::kDevice ? 0 : kNoDevice;
    r.size = size;
    r.page_type = PageType::kNormal;
    return r;
  }

  uint64_t va_ = 0;
  testing::RecordingListener listener_;
  EmuWindows windows_{listener_};
  CapacityLedger ledger_{listener_, 2, 16 * kMiB, 16 * kMiB};
  EmuPhysicalAllocator physical_{ledger_, listener_, 2, 0, true};
};

TEST_F(EmuBlocksTest, EveryInnerStepFailsWithoutATrace) {
  EmuDeviceMmu mmu(listener_, false);
  EmuBlocks blocks(physical_, mmu, windows_, 2);
  const size_t fds = open_descriptors();
  struct Case {
    const char* step;
    BlockKind kind;
  } cases[] = {{steps::kEmuMemfdCreate, BlockKind::kDevice},
               {steps::kEmuMemfdCreate, BlockKind::kHostPinned},
               {steps::kEmuCpuMap, BlockKind::kHostPinned}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.step);
    listener_.clear_usage();
    listener_.arm(c.step, 1, ENOSPC);
    Block block;
    EXPECT_EQ(blocks.allocate(request(c.kind, 64 * 1024), &block), Result::from_errno(ENOSPC));
    EXPECT_EQ(listener_.usage_sum(0) + listener_.usage_sum(kNoDevice), 0);
    EXPECT_EQ(mmu.live_mappings(), 0u);
    EXPECT_EQ(open_descriptors(), fds);
    EXPECT_TRUE(cpu_read_faults(va_)) << "the placeholder is back";
    listener_.arm(c.step, 0, 0);
  }
}

TEST_F(EmuBlocksTest, AHostBlockIsCpuMemoryAndStaysWhileItsCpuViewCannotGo) {
  EmuDeviceMmu mmu(listener_, false);
  EmuBlocks blocks(physical_, mmu, windows_, 2);
  Block block;
  ASSERT_TRUE(blocks.allocate(request(BlockKind::kHostPinned, 8192), &block).ok());
  ASSERT_EQ(block.address, va_);
  std::memset(reinterpret_cast<void*>(va_), 0x6b, 8192);
  char byte = 0;
  ASSERT_EQ(EmuPhysical::from_id(block.memory)->memory().read(8191, &byte, 1), 0);
  EXPECT_EQ(byte, 0x6b);
  listener_.arm(steps::kEmuCpuUnmap, 1, EBUSY);
  EXPECT_EQ(blocks.free(va_), Result::from_errno(EBUSY));
  EXPECT_EQ(mmu.live_mappings(), 1u);
  EXPECT_FALSE(cpu_read_faults(va_)) << "a refused free took the CPU view";
  EXPECT_EQ(listener_.usage_sum(kNoDevice), 8192);
  ASSERT_TRUE(blocks.free(va_).ok());
  EXPECT_TRUE(cpu_read_faults(va_));
  EXPECT_EQ(listener_.usage_sum(kNoDevice), 0);
}

TEST_F(EmuBlocksTest, DeviceBlocksAreCpuVisibleOnlyInOpenMode) {
  for (const bool open : {false, true}) {
    SCOPED_TRACE(open ? "open" : "not open");
    EmuDeviceMmu mmu(listener_, open);
    EmuBlocks blocks(physical_, mmu, windows_, 2);
    Block block;
    ASSERT_TRUE(blocks.allocate(request(BlockKind::kDevice, 4096), &block).ok());
    EXPECT_EQ(cpu_read_faults(block.address), !open);
    ASSERT_TRUE(blocks.free(block.address).ok());
    EXPECT_TRUE(cpu_read_faults(block.address));
  }
}

TEST_F(EmuBlocksTest, TheMmuLetsGoOfBlocksLeftAtItsEnd) {
  listener_.clear_usage();
  {
    EmuDeviceMmu mmu(listener_, false);
    EmuBlocks blocks(physical_, mmu, windows_, 2);
    Block block;
    ASSERT_TRUE(blocks.allocate(request(BlockKind::kHostPinned, 4096), &block).ok());
    EXPECT_EQ(listener_.usage_sum(kNoDevice), 4096);
  }
  EXPECT_EQ(listener_.usage_sum(kNoDevice), 0);
  EXPECT_TRUE(cpu_read_faults(va_));
}

}  // namespace
}  // namespace aclvmm::dev::emu
