// ChunkIndex: the device window's answers to pointer queries, one word per 2 MiB chunk.
//
// A pointer query through the trees costs two O(log n) searches whose nodes are cache misses once
// there are many mappings (a std::map of 1 000 000 ranges takes ~20 dependent misses). Like a page
// table, this index answers with one load: each chunk of the device window that lies in a mapping
// or an aclrtMalloc block holds a packed entry (location kind, device, page size, and where its
// range starts and how long it is). Readers take no lock at all; an empty entry (reserved but not
// mapped, free, the partial last chunk of a small block) sends the caller to the trees, which
// give the exact error. Writers publish and clear entries while they hold the lock of the region
// they change, so entries of one chunk never race with each other.
//
// The table is sparse: zero pages until a chunk is first published (8 bytes per 2 MiB mapped). It
// comes from the backend (allocate_table: huge pages where possible, so that a random lookup in a
// table of a million entries costs a cache miss but no TLB miss).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/units.h"

namespace aclvmm {

inline constexpr uint64_t kChunk = 2 * kMiB;  // the device's mapping granule: one index word each

struct ChunkEntry {
  enum Kind : uint32_t { kEmpty = 0, kDevice = 1, kHost = 2 };
  Kind kind = kEmpty;
  int device = 0;
  uint32_t page_shift = 0;  // log2 of the page size; 0: the host's page size
  bool range_exact = false; // range_base/range_size answer aclrtMemGetAddressRange
  uint64_t range_base = 0;
  uint64_t range_size = 0;
};

class ChunkIndex {
 public:
  // Chunks of one table: the window's size in chunks.
  static uint64_t chunks_for(uint64_t size);
  // Covers [base, base+size) (the device window) with `table` (chunks_for(size) zeroed words,
  // never freed); before this, or with a null table, every lookup is empty and callers use the
  // trees. Only while nothing is published.
  void attach(uint64_t base, uint64_t size, void* table);

  // Every chunk that lies wholly inside [va, va+size) gets `e` (its range fields describe the
  // whole range). Entries that cannot be encoded (a device id or range too large) stay empty.
  void publish(uint64_t va, uint64_t size, const ChunkEntry& e);
  // Empties the chunks that lie wholly inside [va, va+size).
  void clear(uint64_t va, uint64_t size);

  // The entry of the chunk holding va (kind kEmpty when none).
  ChunkEntry lookup(uint64_t va) const;

 private:
  std::atomic<uint64_t>* table_ = nullptr;
  uint64_t base_ = 0;
  uint64_t chunks_ = 0;
};

}  // namespace aclvmm
