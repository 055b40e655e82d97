#include "vmm/chunk_index.h"


namespace aclvmm {
namespace {

constexpr uint64_t kChunkShift = 21;  // 2 MiB, the device's mapping granule
constexpr uint64_t kFieldBits = 23;   // chunk counts: windows up to 16 TiB
constexpr uint64_t kFieldMask = (1ull << kFieldBits) - 1;

// Layout of an entry: kind (2 bits) | device (6) | page shift (5) | exact (1) | back (23) |
// length (23). back: chunks from the range's first chunk to this one.
uint64_t pack(const ChunkEntry& e, uint64_t back, uint64_t len) {
  return static_cast<uint64_t>(e.kind) | (static_cast<uint64_t>(e.device) << 2) |
         (static_cast<uint64_t>(e.page_shift) << 8) | (static_cast<uint64_t>(e.range_exact) << 13) |
         (back << 14) | (len << (14 + kFieldBits));
}

}  // namespace

uint64_t ChunkIndex::chunks_for(uint64_t size) {
  const uint64_t chunks = size >> kChunkShift;
  return chunks <= kFieldMask ? chunks : 0;  // larger windows are not indexed
}

void ChunkIndex::attach(uint64_t base, uint64_t size, void* table) {
  base_ = base;
  const uint64_t chunks = chunks_for(size);
  table_ = chunks ? static_cast<std::atomic<uint64_t>*>(table) : nullptr;
  chunks_ = table_ ? chunks : 0;
}

void ChunkIndex::publish(uint64_t va, uint64_t size, const ChunkEntry& e) {
  if (!table_ || e.kind == ChunkEntry::kEmpty || e.device < 0 || e.device > 63 ||
      e.page_shift > 31 || va < base_) {
    return;
  }
  const uint64_t first = (va - base_ + (1ull << kChunkShift) - 1) >> kChunkShift;
  const uint64_t end = (va - base_ + size) >> kChunkShift;  // exclusive; only whole chunks
  if (end > chunks_ || first >= end) return;
  uint64_t range_first = 0, range_len = 0;
  ChunkEntry enc = e;
  if (e.range_exact) {
    const uint64_t off = e.range_base - base_;
    if (e.range_base < base_ || (off & ((1ull << kChunkShift) - 1)) != 0 ||
        (e.range_size & ((1ull << kChunkShift) - 1)) != 0) {
      enc.range_exact = false;
    } else {
      range_first = off >> kChunkShift;
      range_len = e.range_size >> kChunkShift;
      if (range_len > kFieldMask || range_first > first) enc.range_exact = false;
    }
  }
  for (uint64_t c = first; c < end; ++c) {
    const uint64_t back = enc.range_exact ? c - range_first : 0;
    table_[c].store(pack(enc, back, enc.range_exact ? range_len : 0), std::memory_order_release);
  }
}

void ChunkIndex::clear(uint64_t va, uint64_t size) {
  if (!table_ || va < base_) return;
  const uint64_t first = (va - base_ + (1ull << kChunkShift) - 1) >> kChunkShift;
  const uint64_t end = (va - base_ + size) >> kChunkShift;
  for (uint64_t c = first; c < end && c < chunks_; ++c) {
    table_[c].store(0, std::memory_order_release);
  }
}

ChunkEntry ChunkIndex::lookup(uint64_t va) const {
  ChunkEntry e;
  const uint64_t c = (va - base_) >> kChunkShift;  // wraps to a huge value below base_
  if (c >= chunks_) return e;
  const uint64_t w = table_[c].load(std::memory_order_acquire);
  if (w == 0) return e;
  e.kind = static_cast<ChunkEntry::Kind>(w & 3);
  e.device = static_cast<int>((w >> 2) & 63);
  e.page_shift = static_cast<uint32_t>((w >> 8) & 31);
  e.range_exact = (w >> 13) & 1;
  if (e.range_exact) {
    const uint64_t back = (w >> 14) & kFieldMask;
    const uint64_t len = (w >> (14 + kFieldBits)) & kFieldMask;
    e.range_base = base_ + ((c - back) << kChunkShift);
    e.range_size = len << kChunkShift;
  }
  return e;
}

}  // namespace aclvmm
