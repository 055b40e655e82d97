// The emulated NPU's copy engine (drivers/emu/device/copy_engine.h): what only emu does beyond
// conformance C19-C21: a host range that turns bad part way fails at its first unreachable page
// with the bytes before it moved, on either side; and a copy racing the unmap of its range never
// reads a freed entry or freed memory (hazard slot + its own reference): each copy either moves
// the right bytes or fails with kBadAddress. A copy refused for an address writes nothing, and
// the failure-injection steps (the legacy drv.read / drv.write / drv.fill / drv.host_copy /
// drv.host_fill) are asked once per piece.
#include "drivers/emu/device/copy_engine.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/device_mmu.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/placeholders.h"
#include "unit/testing/endpoints.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::emu {
namespace {

using Side = CopyOutcome::Side;

using testing::host;
using testing::mapped;

class EmuCopyEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(dev::emu::os::claim_window(0, kGiB, kGiB, &va_), 0);
    PhysicalSpec spec{Location::device(0), PageType::kHuge, MemType::kHbm, 4 * kMiB};
    ASSERT_TRUE(physical_.create(spec, &mem_).ok());
    ASSERT_TRUE(mmu_.map(va_, 4 * kMiB, mem_, 0, InitialAccess::kOwnerReadWrite).ok());
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    // Three host pages, the middle one unreachable.
    void* p = ::mmap(nullptr, 3 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    pages_ = static_cast<uint8_t*>(p);
    std::memset(pages_, 0x33, 3 * page_);
    ASSERT_EQ(::mprotect(pages_ + page_, page_, PROT_NONE), 0);
  }
  void TearDown() override {
    if (pages_ != nullptr) ::munmap(pages_, 3 * page_);
    (void)mmu_.unmap(va_, 4 * kMiB);
    if (mem_) (void)physical_.release(mem_);
    (void)dev::emu::os::release_window(va_, kGiB);
  }
  CopyOutcome copy(CopyEndpoint dst, CopyEndpoint src, uint64_t n) {
    return engine_.copy(CopyRequest{dst, src, n, Executor{0, 0}});
  }
  std::vector<uint8_t> device(uint64_t offset, size_t n) {
    std::vector<uint8_t> out(n);
    EXPECT_EQ(EmuPhysical::from_id(mem_)->memory().read(offset, out.data(), n), 0);
    return out;
  }

  uint64_t va_ = 0;
  testing::RecordingListener listener_;
  CapacityLedger ledger_{listener_, 2, 64 * kMiB, 64 * kMiB};
  EmuPhysicalAllocator physical_{ledger_, listener_, 2, 0, true};
  EmuDeviceMmu mmu_{listener_, false};
  EmuCopyEngine engine_{mmu_.page_table(), &listener_};
  PhysicalId mem_;
  size_t page_ = 4096;
  uint8_t* pages_ = nullptr;
};

TEST_F(EmuCopyEngineTest, AHostRangeThatTurnsBadFailsAtItsFirstUnreachablePage) {
  uint8_t* bad = pages_ + page_;
  // Host source: 100 bytes before the bad page, then the bad page.
  CopyOutcome out = copy(mapped(va_), host(bad - 100), 2 * page_);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kSource);
  EXPECT_EQ(out.failed_address, reinterpret_cast<uint64_t>(bad));
  // Host destination: the bytes before the bad page were written.
  std::vector<uint8_t> bytes(2 * page_, 0x5a);
  ASSERT_EQ(copy(mapped(va_), host(bytes.data()), bytes.size()).result.raw(), 0);
  out = copy(host(bad - 100), mapped(va_), 2 * page_);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, reinterpret_cast<uint64_t>(bad));
  // Both sides host memory: the side whose bad byte comes first in the copy's order.
  std::vector<uint8_t> big(4 * page_, 1);
  out = copy(host(bad - 10), host(big.data()), 3 * page_);
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, reinterpret_cast<uint64_t>(bad));
  out = copy(host(big.data()), host(bad - 20), 3 * page_);
  EXPECT_EQ(out.failed_side, Side::kSource);
  EXPECT_EQ(out.failed_address, reinterpret_cast<uint64_t>(bad));
  // A fill.
  out = engine_.fill(FillRequest{host(bad - 1), 0, 2, Executor{0, 0}});
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, reinterpret_cast<uint64_t>(bad));
}

// The mapped sides are checked whole before any byte moves (what the core's own translation
// did before migration step 3): a copy or fill that runs past the mapping changes nothing.
TEST_F(EmuCopyEngineTest, ACopyRefusedForItsRangeWritesNothing) {
  ASSERT_EQ(engine_.fill(FillRequest{mapped(va_), 0x11, 4 * kMiB, Executor{0, 0}}).result.raw(), 0);
  std::vector<uint8_t> src(4 * kMiB + page_, 0x77);
  CopyOutcome out = copy(mapped(va_), host(src.data()), src.size());
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, va_ + 4 * kMiB);
  out = engine_.fill(FillRequest{mapped(va_ + kMiB), 0x22, 4 * kMiB, Executor{0, 0}});
  EXPECT_EQ(out.failed_address, va_ + 4 * kMiB);
  // A source that runs past: the destination (mapped too) is untouched.
  out = copy(mapped(va_), mapped(va_ + 2 * kMiB), 3 * kMiB);
  EXPECT_EQ(out.failed_side, Side::kSource);
  EXPECT_EQ(device(0, 4 * kMiB), std::vector<uint8_t>(4 * kMiB, 0x11));
}

// Each injection step fails the copy at its first execution with its errno, naming the side,
// and is asked once per piece: armed for its second execution, a one-piece copy leaves it armed.
TEST_F(EmuCopyEngineTest, InjectionStepsAreAskedOncePerPiece) {
  std::vector<uint8_t> buf(8192, 0x44);
  std::vector<uint8_t> other(8192, 0);
  struct Row {
    const char* step;
    std::function<CopyOutcome()> run;
    Side side;
  };
  const std::vector<Row> rows = {
      {"emu.memfd.write", [&] { return copy(mapped(va_), host(buf.data()), buf.size()); },
       Side::kDestination},
      {"emu.memfd.read", [&] { return copy(host(buf.data()), mapped(va_), buf.size()); },
       Side::kSource},
      {"emu.memfd.read", [&] { return copy(mapped(va_ + kMiB), mapped(va_), 4096); },
       Side::kSource},
      {"emu.memfd.write", [&] { return copy(mapped(va_ + kMiB), mapped(va_), 4096); },
       Side::kDestination},
      {"emu.memfd.fill",
       [&] { return engine_.fill(FillRequest{mapped(va_), 9, 4096, Executor{0, 0}}); },
       Side::kDestination},
      {"emu.host.copy", [&] { return copy(host(other.data()), host(buf.data()), buf.size()); },
       Side::kSource},
      {"emu.host.fill",
       [&] { return engine_.fill(FillRequest{host(other.data()), 9, 4096, Executor{0, 0}}); },
       Side::kDestination},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.step);
    listener_.arm(r.step, 1, ENOMEM);
    const CopyOutcome out = r.run();
    EXPECT_EQ(out.result, Result::from_errno(ENOMEM));
    EXPECT_EQ(out.failed_side, r.side);
    EXPECT_FALSE(listener_.armed(r.step)) << "the rule fired";
    listener_.arm(r.step, 2, ENOMEM);
    EXPECT_EQ(r.run().result.raw(), 0);
    EXPECT_TRUE(listener_.armed(r.step)) << "asked once for one piece";
    listener_.arm(r.step, 0, 0);
  }
}

// A copy racing the unmap (and map again) of its range: every outcome is the whole bytes or
// kBadAddress in that range, and the memory is released whole at the end.
TEST_F(EmuCopyEngineTest, ConcurrencyACopyRacingAnUnmapMovesTheBytesOrFailsCleanly) {
  std::vector<uint8_t> bytes(3 * kMiB);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  ASSERT_EQ(copy(mapped(va_), host(bytes.data()), bytes.size()).result.raw(), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> remaps{0};
  std::thread mapper([&] {
    for (int i = 0; i < 400; ++i) {
      if (!mmu_.unmap(va_, 4 * kMiB).ok()) break;
      if (!mmu_.map(va_, 4 * kMiB, mem_, 0, InitialAccess::kOwnerReadWrite).ok()) break;
      remaps.fetch_add(1);
    }
    stop.store(true);
  });
  int copied = 0, refused = 0, wrong = 0;
  std::vector<uint8_t> back(bytes.size());
  while (!stop.load() || copied + refused < 50) {
    CopyOutcome out = copy(host(back.data()), mapped(va_ + 100), bytes.size() - 100);
    if (out.result.ok()) {
      ++copied;
      if (std::memcmp(back.data(), bytes.data() + 100, bytes.size() - 100) != 0) ++wrong;
    } else {
      ++refused;
      if (out.result.condition() != Condition::kBadAddress || out.failed_side != Side::kSource ||
          out.failed_address - va_ >= 4 * kMiB) {
        ++wrong;
      }
    }
    if (stop.load() && copied + refused >= 50) break;
  }
  mapper.join();
  EXPECT_EQ(remaps.load(), 400);
  EXPECT_EQ(wrong, 0) << copied << " copied, " << refused << " refused";
  EXPECT_GT(copied + refused, 0);
  EXPECT_EQ(mmu_.live_mappings(), 1u);
}

}  // namespace
}  // namespace aclvmm::dev::emu
