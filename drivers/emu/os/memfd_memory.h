// Physical memory backed by one memfd: sparse, zero-filled, shareable by passing the descriptor.
// Its size is sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) once set, so a process that
// receives the descriptor can read, write and zero the bytes but can neither resize the file nor
// seal writes off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>

#include "drivers/emu/os/physical_memory.h"

namespace aclvmm::dev::emu::os {

class MemfdMemory final : public PhysicalMemory {
 public:
  // New memory of `size` bytes. 0 or -errno. `recyclable`: device memory, which may come from
  // the recycler (memory_recycler.h) and goes back to it when freed, unless it was shared.
  static int create(uint64_t size, std::shared_ptr<PhysicalMemory>* out, bool recyclable = false);
  // Wraps a received descriptor that must be memory as create() makes it, sealed the same way,
  // of exactly `size` bytes (errnos: Backend::adopt_physical). Owns `fd` from the call on, so it
  // is closed on failure too.
  static int adopt(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out);

  ~MemfdMemory() override;
  MemfdMemory(const MemfdMemory&) = delete;
  MemfdMemory& operator=(const MemfdMemory&) = delete;

  uint64_t size() const override { return size_; }
  int read(uint64_t offset, void* dst, size_t n) const override;
  int write(uint64_t offset, const void* src, size_t n) override;
  int fill(uint64_t offset, uint8_t value, size_t n) override;
  // Zeroes what a recycled memory still holds of its previous life first: whoever has the
  // descriptor can read everything.
  int fd() const override;
  void mark_shared() override { shared_.store(true, std::memory_order_release); }
  int populate(uint64_t offset, size_t n) override;
  int copy_to(uint64_t offset, PhysicalMemory& dst, uint64_t dst_offset, size_t n) const override;

 private:
  MemfdMemory(int fd, uint64_t size, bool budgeted)
      : fd_(fd), size_(size), budgeted_(budgeted), clean_until_(size) {}
  // The shared_ptr deleter: recyclable memory that was never shared goes to the recycler.
  static void release(MemfdMemory* m);
  // Recycled memory: stale from its start (nothing of it may be read before it is written or
  // zeroed).
  void make_stale() { clean_until_.store(0, std::memory_order_release); }
  // [0, end) holds no stale byte afterwards: the stale part below `end` is zeroed. 0 or -errno.
  int make_clean(uint64_t end) const;
  // Zeroes [offset, offset+n) without the stale bookkeeping.
  int zero(uint64_t offset, uint64_t n) const;
  // Runs `write` (bytes into [offset, offset+n)) keeping the stale bookkeeping: a write at the
  // clean end extends it without zeroing anything, one beyond it zeroes the gap first.
  template <typename Write>
  int writing(uint64_t offset, uint64_t n, Write write);
  // Takes over `fd`; `budgeted`: it holds a place of descriptor_room.h's budget.
  static int wrap(int fd, uint64_t size, bool budgeted, std::shared_ptr<PhysicalMemory>* out);
  int check_range(uint64_t offset, size_t n) const;
  // write() and fill() without the range check and the stale bookkeeping.
  int write_unchecked(uint64_t offset, const void* src, size_t n);
  int fill_unchecked(uint64_t offset, uint8_t value, size_t n);
  int write_pattern(uint64_t offset, uint8_t value, uint64_t n);

  // The CPU view: one shared mapping of the whole file, made on first copy and kept for the
  // object's life, so copies are memcpy instead of pread/pwrite (a third of the speed).
  // nullptr when the mapping failed (e.g. vm.max_map_count reached): copies use pread/pwrite.
  uint8_t* view() const;
  // Whether every page of [offset, offset+n) exists. Reading a hole through the view would
  // allocate its page (a shared mapping's read fault does on shmem); pread returns zeros without
  // allocating, so reads of sparse ranges keep using it.
  bool dense(const uint8_t* view, uint64_t offset, size_t n) const;

  int fd_;
  uint64_t size_;
  bool budgeted_;
  bool recyclable_ = false;
  std::atomic<bool> shared_{false};
  // Recycled memory: [0, clean_until_) holds this allocation's bytes (or zeros), the rest the
  // previous allocation's, which nothing may read. size_ for memory that is not stale (fresh
  // memory reads zeros by itself). Grows only, under stale_mu_.
  mutable std::atomic<uint64_t> clean_until_;
  mutable std::mutex stale_mu_;
  mutable std::atomic<uint8_t*> view_{nullptr};
  mutable std::atomic<bool> view_failed_{false};
  mutable std::mutex view_mu_;
};

}  // namespace aclvmm::dev::emu::os
