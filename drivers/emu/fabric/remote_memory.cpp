#include "drivers/emu/fabric/remote_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

namespace aclvmm::dev::emu::fabric {

Result ExportedRegion::create(std::shared_ptr<RmaEndpoint> endpoint,
                              std::shared_ptr<os::PhysicalMemory> memory,
                              std::unique_ptr<ExportedRegion>* out) {
  if (!endpoint || !memory || out == nullptr || memory->fd() < 0 || memory->size() == 0) {
    return Result::from_errno(EINVAL);
  }
  std::unique_ptr<ExportedRegion> e(new (std::nothrow) ExportedRegion());
  if (e == nullptr) return Result::from_errno(ENOMEM);
  void* view = ::mmap(nullptr, memory->size(), PROT_READ | PROT_WRITE, MAP_SHARED, memory->fd(), 0);
  if (view == MAP_FAILED) return Result::from_errno(errno);
  if (Result r = endpoint->register_memory(view, memory->size(), &e->region_); !r.ok()) {
    ::munmap(view, memory->size());
    return r;
  }
  e->view_ = view;
  e->endpoint_ = std::move(endpoint);
  e->memory_ = std::move(memory);
  *out = std::move(e);
  return Result::success();
}

ExportedRegion::~ExportedRegion() {
  (void)endpoint_->deregister(region_.key);
  ::munmap(view_, memory_->size());
}

int RemoteMemory::read(uint64_t offset, void* dst, size_t n) const {
  if (!in_range(offset, n)) return -EINVAL;
  for (size_t done = 0; done < n;) {
    const size_t piece = std::min(kPiece, n - done);
    const Result r = endpoint_->read(peer_, static_cast<uint8_t*>(dst) + done, piece, region_,
                                     offset + done, bound_);
    if (!r.ok()) return -r.errno_value();
    done += piece;
  }
  return 0;
}

int RemoteMemory::write(uint64_t offset, const void* src, size_t n) {
  if (!in_range(offset, n)) return -EINVAL;
  for (size_t done = 0; done < n;) {
    const size_t piece = std::min(kPiece, n - done);
    const Result r = endpoint_->write(peer_, static_cast<const uint8_t*>(src) + done, piece,
                                      region_, offset + done, bound_);
    if (!r.ok()) return -r.errno_value();
    done += piece;
  }
  return 0;
}

int RemoteMemory::fill(uint64_t offset, uint8_t value, size_t n) {
  if (!in_range(offset, n)) return -EINVAL;
  std::vector<uint8_t> piece;
  try {
    piece.assign(std::min(kPiece, n), value);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  for (size_t done = 0; done < n;) {
    const size_t len = std::min(piece.size(), n - done);
    if (const int rc = write(offset + done, piece.data(), len); rc != 0) return rc;
    done += len;
  }
  return 0;
}

int RemoteMemory::copy_to(uint64_t offset, os::PhysicalMemory& dst, uint64_t dst_offset,
                          size_t n) const {
  if (!in_range(offset, n)) return -EINVAL;
  std::vector<uint8_t> piece;
  try {
    piece.resize(std::min(kPiece, n));
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  for (size_t done = 0; done < n;) {
    const size_t len = std::min(piece.size(), n - done);
    if (const int rc = read(offset + done, piece.data(), len); rc != 0) return rc;
    if (const int rc = dst.write(dst_offset + done, piece.data(), len); rc != 0) return rc;
    done += len;
  }
  return 0;
}

}  // namespace aclvmm::dev::emu::fabric
