#include "drivers/emu/device/hazard.h"

#include <pthread.h>
#include <sched.h>

namespace aclvmm::dev::emu::hazard {
namespace {

// One cache line per thread: readers write only their own.
struct alignas(64) Record {
  std::atomic<const void*> slots[kPerThread];
  std::atomic<bool> owned;
};

// Static storage (zero-initialised, never destroyed): a thread that protects during exit still
// finds its record.
Record g_records[kMaxThreads];
std::atomic<size_t> g_claimed_end{0};  // no record at or above this index was ever claimed
thread_local Record* t_record = nullptr;

void after_fork_child() {
  const size_t end = g_claimed_end.load(std::memory_order_relaxed);
  for (size_t i = 0; i < end; ++i) {
    Record& r = g_records[i];
    if (&r == t_record) continue;
    for (auto& s : r.slots) s.store(nullptr, std::memory_order_relaxed);
    r.owned.store(false, std::memory_order_release);
  }
}

// Installed when the library loads, before any thread can hold a slot.
const int g_fork_handler = pthread_atfork(nullptr, nullptr, &after_fork_child);

// Gives the record back when its thread exits.
struct Owner {
  ~Owner() {
    if (t_record == nullptr) return;
    for (auto& s : t_record->slots) s.store(nullptr, std::memory_order_release);
    t_record->owned.store(false, std::memory_order_release);
    t_record = nullptr;
  }
};

Record* claim() {
  (void)g_fork_handler;
  thread_local Owner owner;  // constructed here, destroyed at this thread's exit
  (void)owner;
  for (;;) {
    for (size_t i = 0; i < kMaxThreads; ++i) {
      bool expected = false;
      if (g_records[i].owned.load(std::memory_order_relaxed) ||
          !g_records[i].owned.compare_exchange_strong(expected, true,
                                                      std::memory_order_acq_rel)) {
        continue;
      }
      size_t end = g_claimed_end.load(std::memory_order_relaxed);
      while (end < i + 1 &&
             !g_claimed_end.compare_exchange_weak(end, i + 1, std::memory_order_seq_cst)) {
      }
      return &g_records[i];
    }
    sched_yield();  // every record is some thread's: wait for one to exit
  }
}

}  // namespace

std::atomic<const void*>& slot(size_t k) {
  if (t_record == nullptr) t_record = claim();
  return t_record->slots[k];
}

void wait_unprotected(const void* p) {
  // The caller cleared its words with plain (release) stores. Without a full fence here the
  // processor may read a slot before those stores are visible (store buffering: x86 reorders a
  // store with a later load), while a reader announces p and still finds it in the word: both
  // would miss each other and p would be freed under the reader. The fence pairs with the seq_cst
  // store-then-load of protect().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // The end is read after the words were cleared: a record claimed later belongs to a thread
  // that cannot have found p.
  const size_t end = g_claimed_end.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < end; ++i) {
    for (const auto& s : g_records[i].slots) {
      while (s.load(std::memory_order_seq_cst) == p) sched_yield();
    }
  }
}

size_t threads_with_slots() {
  size_t n = 0;
  const size_t end = g_claimed_end.load(std::memory_order_acquire);
  for (size_t i = 0; i < end; ++i) n += g_records[i].owned.load(std::memory_order_acquire);
  return n;
}

}  // namespace aclvmm::dev::emu::hazard
