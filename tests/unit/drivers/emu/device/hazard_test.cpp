// Hazard slots (drivers/emu/device/hazard.h): a reader's announced object is not reclaimed under
// it, a cleared word is never announced, a thread's slots go back at its exit, and a forked child
// never waits for the parent's threads.
#include "drivers/emu/device/hazard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "drivers/emu/device/page_table.h"

namespace aclvmm::dev::emu {
namespace {

struct Object {
  std::atomic<uint64_t> magic{0x5afe};
};

void wait_for(const std::atomic<int>& flag, int value) {
  while (flag.load() != value) std::this_thread::yield();
}

TEST(HazardConcurrency, AnAnnouncedObjectHoldsTheReclaimerUntilItsSlotIsReleased) {
  Object object;
  std::atomic<Object*> word{&object};
  std::atomic<int> reader_state{0}, reclaimed{0};
  std::thread reader([&] {
    Object* seen = hazard::protect(0, word);
    EXPECT_EQ(seen, &object);
    reader_state = 1;
    wait_for(reader_state, 2);
    hazard::release(0);
  });
  wait_for(reader_state, 1);
  word.store(nullptr, std::memory_order_seq_cst);  // unpublished: no new reader finds it
  std::thread reclaimer([&] {
    hazard::wait_unprotected(&object);
    reclaimed = 1;
  });
  // The reclaimer cannot finish while the reader's slot names the object.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(reclaimed.load(), 0);
  reader_state = 2;
  reclaimer.join();
  reader.join();
  EXPECT_EQ(reclaimed.load(), 1);
}

TEST(HazardTest, AClearedWordIsNeverAnnounced) {
  std::atomic<Object*> word{nullptr};
  EXPECT_EQ(hazard::protect(1, word), nullptr);
  EXPECT_EQ(hazard::slot(1).load(), nullptr);
  Object object;
  word = &object;
  EXPECT_EQ(hazard::protect(1, word), &object);
  EXPECT_EQ(hazard::slot(1).load(), &object);
  hazard::release(1);
  EXPECT_EQ(hazard::slot(1).load(), nullptr);
  hazard::wait_unprotected(&object);  // nobody names it: returns at once
}

TEST(HazardTest, AThreadsSlotsGoBackAtItsExit) {
  Object object;
  std::atomic<Object*> word{&object};
  const size_t before = hazard::threads_with_slots();
  std::thread t([&] { (void)hazard::protect(0, word); });  // exits still announcing it
  t.join();
  EXPECT_EQ(hazard::threads_with_slots(), before);
  hazard::wait_unprotected(&object);  // its slot was cleared with it
}

// Readers protect whatever the word names and check it is whole; the writer replaces it, waits,
// and poisons the old one before freeing it. A reader that read a reclaimed object would see the
// poison (and ASan a use after free).
TEST(HazardConcurrency, ReadersNeverSeeAReclaimedObject) {
  std::atomic<Object*> word{new Object()};
  std::atomic<bool> stop{false};
  std::atomic<int> poisoned{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (Object* o = hazard::protect(0, word)) {
          // Held a while, as a copy holds its entry while it takes its reference.
          for (int k = 0; k < 64; ++k) {
            if (o->magic.load(std::memory_order_relaxed) != 0x5afe) {
              ++poisoned;
              break;
            }
          }
          hazard::release(0);
          ++reads;
        }
      }
    });
  }
  while (reads.load() == 0) std::this_thread::yield();  // the readers are under way
  for (int i = 0; i < 20000 || reads.load() < 20000; ++i) {
    Object* old = word.exchange(new Object(), std::memory_order_seq_cst);
    hazard::wait_unprotected(old);
    old->magic.store(0, std::memory_order_relaxed);
    delete old;
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  delete word.load();
  EXPECT_EQ(poisoned.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

// The page table's unmap path as it is: words cleared with plain release stores, then
// wait_unprotected, then the entry poisoned and freed (device_mmu.cpp, forget). The reclaimer's
// cleared word and its scan of the slots race a reader's announcement and its re-check; without a
// full fence between the clear and the scan, x86 lets both miss each other (store buffering) and
// the reader keeps an entry that is then freed.
TEST(HazardConcurrency, ReadersNeverKeepAnEntryTheMmuClearedAndFreed) {
  EmuPageTable table;
  constexpr uint64_t kVa = 0x100000000000ull;
  constexpr uint64_t kLive = 2 * kMiB;
  // Entries come round again only after 64 cycles, so a poisoned one stays poisoned while a
  // reader that wrongly kept it is still looking at it.
  std::vector<MmuEntry> entries(64);
  std::vector<std::atomic<bool>> freed(entries.size());  // per entry: poisoned by the reclaimer
  std::atomic<bool> stop{false};
  std::atomic<long> poisoned{0};
  std::atomic<long> reads{0};
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (MmuEntry* e = table.protect(0, kVa)) {
        for (int k = 0; k < 16; ++k) {  // held a while, as a copy holds it to take a reference
          if (freed[static_cast<size_t>(e - entries.data())].load(std::memory_order_relaxed)) {
            poisoned.fetch_add(1, std::memory_order_relaxed);
            break;
          }
        }
        hazard::release(0);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  // 400 ms at least, and until the reader has caught the entry a thousand times (on a loaded
  // machine it may not run at first); 20 s at most.
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(400);
  const auto limit = start + std::chrono::seconds(20);
  long cycles = 0;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= limit || (now >= deadline && cycles >= 1000 && reads.load() >= 1000)) break;
    const size_t i = static_cast<size_t>(cycles) % entries.size();
    MmuEntry* entry = &entries[i];
    entry->va = kVa;
    entry->size = kLive;
    freed[i].store(false, std::memory_order_relaxed);
    ASSERT_TRUE(table.prepare(kVa, kLive).ok());
    table.publish(entry);
    if (cycles % 64 == 0) {  // now and then the entry stays published a while for the reader
      for (int k = 0; k < 2000; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    table.clear(kVa, kLive);
    hazard::wait_unprotected(entry);
    freed[i].store(true, std::memory_order_relaxed);  // a reader that still holds it sees this
    ++cycles;
  }
  stop = true;
  reader.join();
  EXPECT_EQ(poisoned.load(), 0) << "over " << cycles << " map/unmap cycles";
  EXPECT_GE(reads.load(), 1000) << "the reader hardly ran: the race was not exercised";
}

TEST(HazardTest, AForkedChildNeverWaitsForTheParentsThreads) {
  Object object;
  std::atomic<Object*> word{&object};
  std::atomic<int> state{0};
  std::thread holder([&] {
    (void)hazard::protect(0, word);
    state = 1;
    wait_for(state, 2);
    hazard::release(0);
  });
  wait_for(state, 1);
  const pid_t child = fork();
  if (child == 0) {
    alarm(10);  // a hang ends the child with SIGALRM
    hazard::wait_unprotected(&object);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  state = 2;
  holder.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST(HazardTest, PageTableProtectNamesTheMappingUntilItIsCleared) {
  EmuPageTable table;
  MmuEntry e;
  e.va = 0x100000000000ull;
  e.size = 4 * kMiB;
  ASSERT_TRUE(table.prepare(e.va, e.size).ok());
  table.publish(&e);
  EXPECT_EQ(table.protect(0, e.va + 3 * kMiB), &e);
  EXPECT_EQ(hazard::slot(0).load(), &e);
  hazard::release(0);
  table.clear(e.va, e.size);
  EXPECT_EQ(table.protect(0, e.va), nullptr);
  EXPECT_EQ(table.protect(0, EmuPageTable::kLimit), nullptr);  // outside: no word at all
}

}  // namespace
}  // namespace aclvmm::dev::emu
