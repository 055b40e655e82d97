// ReadMostlyMutex: a reader-writer lock whose readers do not share a cache line.
//
// std::shared_mutex keeps one reader count; every lock_shared writes it, so readers on different
// cores bounce that line between them and two threads querying pointers run barely faster than
// one. Here each thread reads through its own slot (a shared_mutex on its own cache line) and a
// writer takes every slot. Readers scale; writers pay kSlots lock operations, which is right for
// the address space: lookups run on every copy and query, changes are rarer and cost system calls
// or far more anyway.
//
// Satisfies SharedMutex: use it with std::shared_lock and std::unique_lock. The library uses it as
// RankedReadMostlyMutex<rank> (below), which adds the lock-order check.
#pragma once

#include <atomic>
#include <cstddef>
#include <shared_mutex>

#include "base/lock_rank.h"

namespace aclvmm {

class ReadMostlyMutex {
 public:
  static constexpr size_t kSlots = 8;

  void lock() {
    for (Slot& s : slots_) s.mu.lock();
  }
  bool try_lock() {
    for (size_t i = 0; i < kSlots; ++i) {
      if (!slots_[i].mu.try_lock()) {
        while (i > 0) slots_[--i].mu.unlock();
        return false;
      }
    }
    return true;
  }
  void unlock() {
    for (Slot& s : slots_) s.mu.unlock();
  }
  void lock_shared() { slots_[slot()].mu.lock_shared(); }
  bool try_lock_shared() { return slots_[slot()].mu.try_lock_shared(); }
  void unlock_shared() { slots_[slot()].mu.unlock_shared(); }

 private:
  struct alignas(64) Slot {
    std::shared_mutex mu;
  };

  // Threads are dealt slots round-robin once, so a thread always unlocks the slot it locked and
  // up to kSlots threads read without sharing one.
  static size_t slot() {
    static std::atomic<size_t> next{0};
    thread_local const size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return mine;
  }

  Slot slots_[kSlots];
};

// A ReadMostlyMutex with its place in the lock order (base/lock_rank.h).
template <LockRank R>
using RankedReadMostlyMutex = RankedLock<ReadMostlyMutex, R>;

static_assert(sizeof(RankedReadMostlyMutex<LockRank::kRegionTree>) == sizeof(ReadMostlyMutex),
              "a ranked ReadMostlyMutex has the layout of the plain one");

}  // namespace aclvmm
