// The emu device page table (drivers/emu/device/page_table.h): words per 2 MiB published and
// cleared per mapping, leaves made on first use by whichever thread gets there, and lookups that
// never see a half-written mapping.
#include "drivers/emu/device/page_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kBase = 0x100000000000ull;

TEST(EmuPageTableTest, PublishedWordsCoverExactlyTheMapping) {
  EmuPageTable table;
  MmuEntry e;
  e.va = kBase + kGiB - 2 * kMiB;  // across a leaf boundary
  e.size = 6 * kMiB;
  ASSERT_TRUE(table.prepare(e.va, e.size).ok());
  table.publish(&e);
  EXPECT_EQ(table.live(), 1u);
  EXPECT_EQ(table.find(e.va), &e);
  EXPECT_EQ(table.find(e.va + e.size - 1), &e);
  EXPECT_EQ(table.find(e.va - 1), nullptr);
  EXPECT_EQ(table.find(e.va + e.size), nullptr);
  EXPECT_EQ(table.first_from(0), &e);
  // Any overlap is refused, also by one granule.
  EXPECT_EQ(table.prepare(e.va + e.size - 2 * kMiB, 4 * kMiB).condition(),
            Condition::kInvalidArgument);
  EXPECT_TRUE(table.prepare(e.va + e.size, 2 * kMiB).ok());
  table.clear(e.va, e.size);
  EXPECT_EQ(table.live(), 0u);
  EXPECT_EQ(table.find(e.va), nullptr);
  EXPECT_EQ(table.first_from(0), nullptr);
}

TEST(EmuPageTableTest, RangesOutsideTheUserAddressSpaceAreRefused) {
  EmuPageTable table;
  const struct {
    uint64_t va, size;
  } bad[] = {{0, 0},
             {EmuPageTable::kLimit, 2 * kMiB},
             {EmuPageTable::kLimit - 2 * kMiB, 4 * kMiB},
             {~uint64_t{0} - 2 * kMiB + 1, 2 * kMiB}};
  for (const auto& b : bad) {
    EXPECT_EQ(table.prepare(b.va, b.size).condition(), Condition::kInvalidArgument) << b.va;
  }
  EXPECT_EQ(table.find(EmuPageTable::kLimit), nullptr);
}

TEST(EmuPageTableTest, AccessPerLocation) {
  MmuEntry e;
  e.set_access(Location::device(3), Access::kReadWrite);
  e.set_access(Location::device(5), Access::kRead);
  e.set_access(Location::host(), Access::kRead);
  e.set_access(Location::device(64), Access::kReadWrite);  // past the masks: nothing
  EXPECT_EQ(e.access(Location::device(3)), Access::kReadWrite);
  EXPECT_EQ(e.access(Location::device(5)), Access::kRead);
  EXPECT_EQ(e.access(Location::device(4)), Access::kNone);
  EXPECT_EQ(e.access(Location::device(64)), Access::kNone);
  EXPECT_EQ(e.access(Location::host()), Access::kRead);
  e.set_access(Location::device(3), Access::kRead);
  EXPECT_EQ(e.access(Location::device(3)), Access::kRead);
  e.set_access(Location::device(3), Access::kNone);
  EXPECT_EQ(e.access(Location::device(3)), Access::kNone);
}

// Threads mapping into the same, not yet made, leaves while readers look up: every lookup finds
// either nothing or the whole entry of its own range; the table ends empty.
TEST(EmuPageTableTest, ConcurrencyOfMappersAndReaders) {
  EmuPageTable table;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<MmuEntry> entries(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      MmuEntry& e = entries[t];
      for (int i = 0; i < kRounds; ++i) {
        // Each thread its own 2 MiB slots, all in the same few leaves.
        e.va = kBase + (static_cast<uint64_t>(i % 4) * kGiB) + t * 4 * kMiB;
        e.size = 4 * kMiB;
        if (!table.prepare(e.va, e.size).ok()) {
          wrong.fetch_add(1);
          continue;
        }
        table.publish(&e);
        if (table.find(e.va + 2 * kMiB) != &e) wrong.fetch_add(1);
        table.clear(e.va, e.size);
      }
    });
  }
  std::thread reader([&] {
    while (!stop.load()) {
      for (int t = 0; t < kThreads; ++t) {
        MmuEntry* found = table.find(kBase + t * 4 * kMiB);
        if (found != nullptr && found != &entries[t]) wrong.fetch_add(1);
      }
    }
  });
  for (std::thread& t : threads) t.join();
  stop.store(true);
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(table.live(), 0u);
  EXPECT_EQ(table.first_from(0), nullptr);
}

}  // namespace
}  // namespace aclvmm::dev::emu
