// The slow paths of ReadMostlyMutex (read_mostly_mutex.h): a short spin, then sleep on the
// condition variable.
//
// No wake-up is lost: a sleeper counts itself in sleepers_ and then reads the state it waits for,
// both under wait_mu_; whoever changes that state writes it and then reads sleepers_ (seq_cst on
// both sides, so at least one of the two sees the other). A changer that sees a sleeper takes
// wait_mu_ before it notifies, which the sleeper holds until it is inside wait().
#include "base/read_mostly_mutex.h"

#include <cstdint>

namespace aclvmm {
namespace {

// About a microsecond of spinning: long enough for a holder running on another core to finish a
// map or a lookup, short enough not to matter when the holder is descheduled.
constexpr int kSpins = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How many live threads hold each slot index (of every ReadMostlyMutex: a thread's slot is one
// index for all of them).
std::atomic<uint32_t> g_slot_users[ReadMostlyMutex::kSlots];

// Gives the thread's claim back when it exits. The thread keeps its index meanwhile: a lock taken
// in a later thread-exit destructor still finds it (only the balance of the counts is off then).
struct SlotClaim {
  size_t index = 0;
  ~SlotClaim() { g_slot_users[index].fetch_sub(1, std::memory_order_relaxed); }
};

}  // namespace

void ReadMostlyMutex::claim_slot() {
  size_t best = 0;
  uint32_t fewest = UINT32_MAX;
  for (size_t i = 0; i < kSlots; ++i) {
    const uint32_t users = g_slot_users[i].load(std::memory_order_relaxed);
    if (users < fewest) {
      fewest = users;
      best = i;
    }
  }
  // Two threads claiming at once may pick the same index: they then share it, which is correct,
  // only slower.
  g_slot_users[best].fetch_add(1, std::memory_order_relaxed);
  thread_local SlotClaim claim;
  claim.index = best;
  t_slot_ = static_cast<int>(best);
}

void ReadMostlyMutex::wait_to_write() {
  for (int i = 0; i < kSpins; ++i) {
    cpu_relax();
    uint32_t free = 0;
    if (writer_.load(std::memory_order_relaxed) == 0 &&
        writer_.compare_exchange_strong(free, 1, std::memory_order_seq_cst)) {
      return;
    }
  }
  std::unique_lock<std::mutex> guard(wait_mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    uint32_t free = 0;
    if (writer_.compare_exchange_strong(free, 1, std::memory_order_seq_cst)) break;
    wait_cv_.wait(guard);
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void ReadMostlyMutex::wait_for_readers(const Slot& s) {
  for (int i = 0; i < kSpins; ++i) {
    cpu_relax();
    if (s.readers.load(std::memory_order_seq_cst) == 0) return;
  }
  std::unique_lock<std::mutex> guard(wait_mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (s.readers.load(std::memory_order_seq_cst) != 0) wait_cv_.wait(guard);
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void ReadMostlyMutex::wait_to_read(Slot& s) {
  for (;;) {
    leave(s);  // stand back: the writer is waiting for this slot to empty
    bool writer_gone = false;
    for (int i = 0; i < kSpins && !writer_gone; ++i) {
      cpu_relax();
      writer_gone = writer_.load(std::memory_order_seq_cst) == 0;
    }
    if (!writer_gone) {
      std::unique_lock<std::mutex> guard(wait_mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (writer_.load(std::memory_order_seq_cst) != 0) wait_cv_.wait(guard);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    s.readers.fetch_add(1, std::memory_order_seq_cst);
    if (writer_.load(std::memory_order_seq_cst) == 0) return;  // else another writer came first
  }
}

void ReadMostlyMutex::wake_sleepers_slow() {
  { std::lock_guard<std::mutex> guard(wait_mu_); }
  wait_cv_.notify_all();
}

}  // namespace aclvmm
