// Freed device memory kept for the next allocation of the same size (vLLM's sleep mode, SGLang's
// memory saver: free whole weights, allocate them again at wake).
//
// Why: a fresh page costs a fault per 4 KiB when it is first written, and on virtual machines
// that fault is the expensive part of the whole cycle (here ~20 us per page: restoring 64 MiB into
// fresh pages took 480 ms, copying them into mapped ones 10 ms). Memory of a freed device
// allocation, recycled with its CPU view still mapped, is written at memcpy speed.
//
// The contract:
// - Only memory that never left the process is recycled: MemfdMemory::create(..., recyclable)
//   made it, and it was never marked shared (exported: another process may hold its
//   descriptor). Everything else is freed as before.
// - Recycled memory never shows a byte of its previous life: it comes back *stale*, and
//   MemfdMemory zeroes the stale part before anything can read it (memfd_memory.h), except where
//   the first writes cover it in order from its start (a restore), which need no zeroing.
// - Memory is recycled by exact size, up to a cap on the bytes held (ACLVMM_RECYCLE_BYTES;
//   default a quarter of the machine's memory, 0 turns recycling off); beyond it the oldest
//   held memory is freed. A process never holds more than it had allocated before.
// - The device's accounting (aclrtGetMemInfo) knows nothing of it: held memory is free device
//   memory. drain() frees everything (the backend's close), after_fork_child() lets go of the
//   parent's without touching it.
//
// Threading: every function from any thread; one leaf mutex.
#pragma once

#include <cstdint>

namespace aclvmm::dev::emu::os {

class MemfdMemory;

namespace recycler {

// Takes `m` (freed, recyclable, never shared) when there is room under the cap; false: the caller
// frees it.
bool offer(MemfdMemory* m);
// Held memory of exactly `size` bytes, now the caller's, or nullptr.
MemfdMemory* take(uint64_t size);
// Frees everything held.
void drain();
// A forked child: forgets the parent's memory (the descriptors are closed, nothing else).
void after_fork_child();

// For the statistics and tests.
struct Counts {
  uint64_t held_bytes = 0;
  uint64_t held = 0;
  uint64_t reused = 0;  // allocations served from held memory, ever
  uint64_t cap = 0;
};
Counts counts();
// Sets the cap (0: recycle nothing; the fake driver library, which reports its objects exactly,
// and tests); UINT64_MAX restores the configured one. Held memory above the new cap is freed.
void set_cap(uint64_t cap);

}  // namespace recycler
}  // namespace aclvmm::dev::emu::os
