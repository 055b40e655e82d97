#include "drivers/fake/byte_store.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace aclvmm::dev::fake {
namespace {

// Calls piece(index, offset in page, bytes, done so far) for each page [offset, offset+n) touches.
template <class Piece>
Result per_page(uint64_t offset, size_t n, Piece&& piece) {
  size_t done = 0;
  while (done < n) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % ByteStore::kPageBytes;
    const size_t len =
        static_cast<size_t>(std::min<uint64_t>(n - done, ByteStore::kPageBytes - in_page));
    if (Result r = piece(at / ByteStore::kPageBytes, in_page, len, done); !r.ok()) return r;
    done += len;
  }
  return Result::success();
}

}  // namespace

uint8_t* ByteStore::page_for_write(uint64_t index) {
  auto it = pages_.find(index);
  if (it != pages_.end()) return it->second.get();
  std::unique_ptr<uint8_t[]> page(new (std::nothrow) uint8_t[kPageBytes]());
  if (!page) return nullptr;
  uint8_t* raw = page.get();
  try {
    pages_.emplace(index, std::move(page));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return raw;
}

Result ByteStore::read(uint64_t offset, void* dst, size_t n) const {
  if (!inside(offset, n)) return Result::from_errno(EINVAL);
  auto* out = static_cast<uint8_t*>(dst);
  return per_page(offset, n, [&](uint64_t index, uint64_t in_page, size_t len, size_t done) {
    auto it = pages_.find(index);
    if (it == pages_.end()) {
      std::memset(out + done, 0, len);
    } else {
      std::memcpy(out + done, it->second.get() + in_page, len);
    }
    return Result::success();
  });
}

Result ByteStore::write(uint64_t offset, const void* src, size_t n) {
  if (!inside(offset, n)) return Result::from_errno(EINVAL);
  const auto* in = static_cast<const uint8_t*>(src);
  return per_page(offset, n, [&](uint64_t index, uint64_t in_page, size_t len, size_t done) {
    uint8_t* page = page_for_write(index);
    if (page == nullptr) return Result::from_errno(ENOMEM);
    std::memcpy(page + in_page, in + done, len);
    return Result::success();
  });
}

Result ByteStore::fill(uint64_t offset, uint8_t value, size_t n) {
  if (!inside(offset, n)) return Result::from_errno(EINVAL);
  return per_page(offset, n, [&](uint64_t index, uint64_t in_page, size_t len, size_t) {
    if (value == 0 && len == kPageBytes) {
      pages_.erase(index);  // a whole page of zeros is a page never written
      return Result::success();
    }
    if (value == 0 && pages_.find(index) == pages_.end()) return Result::success();
    uint8_t* page = page_for_write(index);
    if (page == nullptr) return Result::from_errno(ENOMEM);
    std::memset(page + in_page, value, len);
    return Result::success();
  });
}

}  // namespace aclvmm::dev::fake
