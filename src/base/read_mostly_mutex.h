// ReadMostlyMutex: a reader-writer lock whose readers do not share a cache line, and whose writers
// pay a handful of atomic operations.
//
// std::shared_mutex keeps one reader count; every lock_shared writes it, so readers on different
// cores bounce that line between them and two threads querying pointers run barely faster than
// one. Here each thread announces itself in its own slot (a reader count on its own cache line),
// in the manner of the kernel's per-CPU reader-writer semaphores. A writer raises one flag, so
// that new readers stand back, and waits until every slot's count is zero: one compare-and-swap
// and kSlots loads to lock, one store to unlock. (The lock this replaced gave each slot a
// std::shared_mutex and had the writer take all of them: 2 x kSlots locked operations per write,
// two thirds of an aclrtMapMem + aclrtUnmapMem pair in the emulator.)
//
// Protocol (all on seq_cst atomics, so that each side's write-then-read cannot miss the other's):
// - reader: increment its slot, then read the writer flag; if a writer is there, decrement, wait
//   until the flag drops and try again. Unlock: decrement.
// - writer: set the flag (compare-and-swap from 0, which also excludes other writers), then wait
//   until every slot reads zero. Unlock: clear the flag.
// Writers win over new readers, so a stream of readers cannot starve a writer. A thread never
// takes the lock twice (the lock-rank checker aborts on it): a second lock_shared behind a waiting
// writer would wait for ever.
//
// Waiting spins briefly, then sleeps on a condition variable; whoever changes what a sleeper waits
// for (the flag dropped, a slot decremented under a writer) wakes the sleepers when there are any,
// so the uncontended paths never touch the mutex behind it. An unlock reads the sleeper count after
// it released the lock, so the lock must outlive every unlock in progress: its owner destroys it
// only under a lock that excludes all its users (the address space destroys a region's lock under
// the tree's, which every user of the region holds).
//
// Satisfies SharedMutex: use it with std::shared_lock and std::unique_lock. The library uses it as
// RankedReadMostlyMutex<rank> (below), which adds the lock-order check.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "base/lock_rank.h"

namespace aclvmm {

class ReadMostlyMutex {
 public:
  static constexpr size_t kSlots = 8;

  void lock() {
    uint32_t free = 0;
    if (!writer_.compare_exchange_strong(free, 1, std::memory_order_seq_cst)) wait_to_write();
    for (Slot& s : slots_) {
      if (s.readers.load(std::memory_order_seq_cst) != 0) wait_for_readers(s);
    }
  }
  bool try_lock() {
    uint32_t free = 0;
    if (!writer_.compare_exchange_strong(free, 1, std::memory_order_seq_cst)) return false;
    for (Slot& s : slots_) {
      if (s.readers.load(std::memory_order_seq_cst) != 0) {
        unlock();  // readers stood back meanwhile: let them in again
        return false;
      }
    }
    return true;
  }
  void unlock() {
    writer_.store(0, std::memory_order_seq_cst);
    wake_sleepers();
  }

  void lock_shared() {
    Slot& s = slots_[slot()];
    s.readers.fetch_add(1, std::memory_order_seq_cst);
    if (writer_.load(std::memory_order_seq_cst) != 0) wait_to_read(s);
  }
  bool try_lock_shared() {
    Slot& s = slots_[slot()];
    s.readers.fetch_add(1, std::memory_order_seq_cst);
    if (writer_.load(std::memory_order_seq_cst) == 0) return true;
    leave(s);
    return false;
  }
  void unlock_shared() { leave(slots_[slot()]); }

 private:
  struct alignas(64) Slot {
    std::atomic<uint32_t> readers{0};
  };

  // The calling thread's slot, the same for its whole life (it unlocks the slot it locked): at its
  // first lock it claims the slot that the fewest live threads hold, and gives the claim back at
  // its exit. So up to kSlots live threads never share a slot, however many came and went before
  // them. (Dealing slots round-robin to every thread ever started made the two threads of a
  // benchmark share one after a few hundred others had lived, and a shared slot's line, written
  // by both on every lock, halved their speed.)
  static size_t slot() {
    if (t_slot_ < 0) claim_slot();
    return static_cast<size_t>(t_slot_);
  }
  static void claim_slot();
  static inline thread_local int t_slot_ = -1;

  void leave(Slot& s) {
    s.readers.fetch_sub(1, std::memory_order_seq_cst);
    wake_sleepers();  // a writer may be waiting for this slot
  }
  void wake_sleepers() {
    if (sleepers_.load(std::memory_order_seq_cst) != 0) wake_sleepers_slow();
  }

  // The slow paths (read_mostly_mutex.cpp).
  void wait_to_write();                  // until the flag is ours
  void wait_for_readers(const Slot& s);  // until s reads zero
  void wait_to_read(Slot& s);            // s counted this thread; until a reader may enter
  void wake_sleepers_slow();

  Slot slots_[kSlots];
  // Read by every reader, written by writers and sleepers only.
  alignas(64) std::atomic<uint32_t> writer_{0};  // 1 while a writer holds or waits for readers
  std::atomic<uint32_t> sleepers_{0};            // threads asleep on wait_cv_
  std::mutex wait_mu_;                           // a leaf: nothing is taken under it
  std::condition_variable wait_cv_;
};

// A ReadMostlyMutex with its place in the lock order (base/lock_rank.h).
template <LockRank R>
using RankedReadMostlyMutex = RankedLock<ReadMostlyMutex, R>;

static_assert(sizeof(RankedReadMostlyMutex<LockRank::kRegionTree>) == sizeof(ReadMostlyMutex),
              "a ranked ReadMostlyMutex has the layout of the plain one");

}  // namespace aclvmm
