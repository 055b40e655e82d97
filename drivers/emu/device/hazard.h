// Hazard slots: how a thread that reads emu's lock-free page table keeps the mapping it found
// from being freed while it uses it (hazard pointers, after Michael, 2004).
//
// Why: the copy engine translates a copy's addresses when the copy executes (D4), on any thread,
// with no lock: it loads a page-table word and reads the MmuEntry it names. An unmap of that range
// may run at the same moment (an application that frees memory a queued copy still uses; the
// copy must then fail cleanly, never read freed memory). The reader therefore announces the entry
// in its own slot and checks that the word still names it; the unmapper clears the word, then
// waits until no slot names the entry before it frees it. Epochs were the alternative: they
// defer every free to a grace period, which would delay the release of the entry's physical
// memory and so the capacity an aclrtFree gives back; a hazard slot delays only the free that
// races a reader, by the time the reader takes its own reference (a few loads).
//
// Contract
// - protect(k, word): the object `word` names, safe to read until release(k) (or the next
//   protect(k, ...)) on this thread; nullptr when the word names none. k < kPerThread: a copy
//   protects its source and its destination at once.
// - wait_unprotected(p): returns once no thread's slot names p. Call it after every word that
//   named p was cleared: then no reader can find p any more, and those that found it before have
//   announced it (or will fail their check and retry).
// - A thread's slots are its own from its first protect to its exit; kMaxThreads threads may
//   hold slots at once (a thread beyond that waits for a slot to be given back).
// - fork(): the child's only thread keeps its slots; every other slot is given back (its thread
//   exists only in the parent), so that no reclaimer of the child waits for a parent's thread.
//
// Threading: protect/release from any thread (each its own slots, no shared cache line written);
// wait_unprotected from any thread, reading every claimed slot (reclaimers are map/unmap calls,
// far rarer than lookups).
#pragma once

#include <atomic>
#include <cstddef>

namespace aclvmm::dev::emu::hazard {

inline constexpr size_t kPerThread = 2;
inline constexpr size_t kMaxThreads = 1024;

// The calling thread's slot k (claimed on first use).
std::atomic<const void*>& slot(size_t k);

// Announces what `word` names in slot k and checks the word still names it (retrying until it
// does): afterwards the object stays allocated until the slot changes.
template <typename T>
T* protect(size_t k, const std::atomic<T*>& word) {
  std::atomic<const void*>& s = slot(k);
  T* seen = word.load(std::memory_order_acquire);
  for (;;) {
    if (seen == nullptr) {
      s.store(nullptr, std::memory_order_release);
      return nullptr;
    }
    // seq_cst store, then seq_cst load: either the reclaimer sees the announcement, or this
    // thread sees the cleared word (the two sides' store-then-load must not be reordered).
    s.store(seen, std::memory_order_seq_cst);
    T* again = word.load(std::memory_order_seq_cst);
    if (again == seen) return seen;
    seen = again;
  }
}

inline void release(size_t k) { slot(k).store(nullptr, std::memory_order_release); }

// Waits until no thread's slot names p.
void wait_unprotected(const void* p);

// How many slots are claimed (tests).
size_t threads_with_slots();

}  // namespace aclvmm::dev::emu::hazard
