// ByteStore: the bytes of one fake physical object: a sparse map of 64 KiB pages, so that a 64 GiB
// object costs nothing until written (docs/device-interface.md §8). A page never written reads
// as zeros without being allocated; a zero fill of whole pages gives them back.
//
// Threading: none; the fake's machine lock serializes every use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "drivers/device_result.h"

namespace aclvmm::dev::fake {

class ByteStore {
 public:
  static constexpr uint64_t kPageBytes = 64 * 1024;

  explicit ByteStore(uint64_t size) : size_(size) {}

  uint64_t size() const { return size_; }
  // Pages that hold bytes (never-written pages and zero-filled whole pages hold none).
  size_t stored_pages() const { return pages_.size(); }

  // [offset, offset+n) must lie inside the store, else kInvalidArgument and nothing moves.
  // kOutOfMemory when a page cannot be had (bytes of earlier pages may have been written).
  Result read(uint64_t offset, void* dst, size_t n) const;
  Result write(uint64_t offset, const void* src, size_t n);
  Result fill(uint64_t offset, uint8_t value, size_t n);

 private:
  bool inside(uint64_t offset, size_t n) const { return offset <= size_ && n <= size_ - offset; }
  uint8_t* page_for_write(uint64_t index);

  const uint64_t size_;
  std::map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

}  // namespace aclvmm::dev::fake
