// Physical memory backed by one memfd: sparse, zero-filled, shareable by passing the descriptor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "drivers/driver.h"

namespace aclvmm::drv::emu {

class MemfdMemory final : public PhysicalMemory {
 public:
  // New memory of `size` bytes. 0 or -errno.
  static int create(uint64_t size, std::shared_ptr<PhysicalMemory>* out);
  // Wraps a received descriptor whose file holds at least `size` bytes. Owns `fd` from the call
  // on, so it is closed on failure too.
  static int adopt(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out);

  ~MemfdMemory() override;
  MemfdMemory(const MemfdMemory&) = delete;
  MemfdMemory& operator=(const MemfdMemory&) = delete;

  uint64_t size() const override { return size_; }
  int read(uint64_t offset, void* dst, size_t n) const override;
  int write(uint64_t offset, const void* src, size_t n) override;
  int fill(uint64_t offset, uint8_t value, size_t n) override;
  int fd() const override { return fd_; }
  int populate(uint64_t offset, size_t n) override;

 private:
  MemfdMemory(int fd, uint64_t size) : fd_(fd), size_(size) {}
  static int wrap(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out);
  int check_range(uint64_t offset, size_t n) const;
  int write_pattern(uint64_t offset, uint8_t value, uint64_t n);

  int fd_;
  uint64_t size_;
};

}  // namespace aclvmm::drv::emu
