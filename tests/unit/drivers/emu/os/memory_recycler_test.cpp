// Tests of os/memory_recycler.h with MemfdMemory against the real kernel: freed recyclable memory
// comes back for an allocation of the same size, never showing a byte of its previous life
// (stale parts are zeroed before anything reads them, except where writes cover them in order
// from the start); shared memory and memory over the cap are freed instead.
#include "drivers/emu/os/memory_recycler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/device_types.h"
#include "drivers/emu/os/memfd_memory.h"

namespace aclvmm::dev::emu::os {
namespace {

using dev::kMiB;
constexpr uint64_t kSize = 4 * kMiB;

std::vector<uint8_t> bytes(uint64_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

ino_t inode_of(const std::shared_ptr<PhysicalMemory>& m) {
  struct stat st {};
  EXPECT_EQ(fstat(m->fd(), &st), 0);
  return st.st_ino;
}

class MemoryRecycler : public ::testing::Test {
 protected:
  void SetUp() override {
    recycler::drain();
    recycler::set_cap(64 * kMiB);
  }
  void TearDown() override {
    recycler::drain();
    recycler::set_cap(UINT64_MAX);
  }
  // Recyclable memory of kSize written all over with `v` (through its view: a large write).
  std::shared_ptr<PhysicalMemory> used(uint8_t v) {
    std::shared_ptr<PhysicalMemory> m;
    EXPECT_EQ(MemfdMemory::create(kSize, &m, true), 0);
    const auto b = bytes(kSize, v);
    EXPECT_EQ(m->write(0, b.data(), b.size()), 0);
    return m;
  }
  static std::vector<uint8_t> read_all(PhysicalMemory& m) {
    std::vector<uint8_t> out(m.size(), 0xEE);
    EXPECT_EQ(m.read(0, out.data(), out.size()), 0);
    return out;
  }
};

TEST_F(MemoryRecycler, FreedMemoryComesBackZeroed) {
  auto first = used(0xA5);
  const ino_t ino = inode_of(first);
  first.reset();
  EXPECT_EQ(recycler::counts().held, 1u);
  EXPECT_EQ(recycler::counts().held_bytes, kSize);
  std::shared_ptr<PhysicalMemory> again;
  ASSERT_EQ(MemfdMemory::create(kSize, &again, true), 0);
  EXPECT_EQ(recycler::counts().held, 0u);
  EXPECT_EQ(read_all(*again), bytes(kSize, 0)) << "the previous allocation's bytes showed";
  EXPECT_EQ(inode_of(again), ino) << "the same memory came back";
}

// A restore writes from the start in order: nothing needs zeroing, and what was not written yet
// reads as zeros; a write beyond the written part zeroes the gap first, a fill too.
TEST_F(MemoryRecycler, WritesInOrderAndGapsNeverShowOldBytes) {
  used(0x5A).reset();
  std::shared_ptr<PhysicalMemory> m;
  ASSERT_EQ(MemfdMemory::create(kSize, &m, true), 0);
  const auto b = bytes(kMiB, 0xB1);
  ASSERT_EQ(m->write(0, b.data(), b.size()), 0);
  std::vector<uint8_t> got(2 * kMiB);
  ASSERT_EQ(m->read(0, got.data(), got.size()), 0);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + kMiB), b);
  EXPECT_EQ(std::vector<uint8_t>(got.begin() + kMiB, got.end()), bytes(kMiB, 0));
  const auto c = bytes(kMiB / 2, 0xC3);
  ASSERT_EQ(m->write(3 * kMiB, c.data(), c.size()), 0);  // a gap of [2 MiB, 3 MiB)
  ASSERT_EQ(m->fill(3 * kMiB + kMiB / 2, 0xD7, 1000), 0);
  const auto all = read_all(*m);
  EXPECT_EQ(std::vector<uint8_t>(all.begin(), all.begin() + kMiB), b);
  EXPECT_EQ(std::vector<uint8_t>(all.begin() + kMiB, all.begin() + 3 * kMiB), bytes(2 * kMiB, 0));
  EXPECT_EQ(std::vector<uint8_t>(all.begin() + 3 * kMiB, all.begin() + 3 * kMiB + kMiB / 2), c);
  EXPECT_EQ(all[3 * kMiB + kMiB / 2], 0xD7);
  EXPECT_EQ(all[3 * kMiB + kMiB / 2 + 999], 0xD7);
  EXPECT_EQ(std::vector<uint8_t>(all.begin() + 3 * kMiB + kMiB / 2 + 1000, all.end()),
            bytes(kMiB / 2 - 1000, 0));
}

// Whoever gets the descriptor can read everything: it comes zeroed; a copy out of stale memory
// too; and small writes (pwrite) keep the bookkeeping as large ones do.
TEST_F(MemoryRecycler, TheDescriptorAndCopiesNeverShowOldBytes) {
  used(0x77).reset();
  std::shared_ptr<PhysicalMemory> m;
  ASSERT_EQ(MemfdMemory::create(kSize, &m, true), 0);
  ASSERT_EQ(m->write(0, "abc", 3), 0);
  std::vector<uint8_t> raw(kSize);
  ASSERT_EQ(pread(m->fd(), raw.data(), raw.size(), 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(std::string(raw.begin(), raw.begin() + 3), "abc");
  EXPECT_EQ(std::vector<uint8_t>(raw.begin() + 3, raw.end()), bytes(kSize - 3, 0));

  used(0x66).reset();
  std::shared_ptr<PhysicalMemory> src, dst;
  ASSERT_EQ(MemfdMemory::create(kSize, &src, true), 0);
  ASSERT_EQ(MemfdMemory::create(kSize, &dst), 0);
  ASSERT_EQ(src->copy_to(kMiB, *dst, 0, kMiB), 0);
  EXPECT_EQ(read_all(*dst), bytes(kSize, 0));
}

TEST_F(MemoryRecycler, SharedMemoryAndMemoryOverTheCapAreFreed) {
  auto shared = used(1);
  shared->mark_shared();
  shared.reset();
  EXPECT_EQ(recycler::counts().held, 0u) << "another process may hold an exported memory";

  std::shared_ptr<PhysicalMemory> plain;
  ASSERT_EQ(MemfdMemory::create(kSize, &plain), 0);  // not device memory
  plain.reset();
  EXPECT_EQ(recycler::counts().held, 0u);

  recycler::set_cap(2 * kSize);
  used(1).reset();
  used(2).reset();
  EXPECT_EQ(recycler::counts().held, 1u) << "the second freed finds the first and takes it again";
  auto a = used(3), b = used(4), c = used(5);
  a.reset();
  b.reset();
  c.reset();
  EXPECT_EQ(recycler::counts().held, 2u);
  EXPECT_EQ(recycler::counts().held_bytes, 2 * kSize) << "the oldest went over the cap";
  recycler::set_cap(kSize);
  EXPECT_EQ(recycler::counts().held, 1u) << "a lower cap frees what is over it";
  recycler::set_cap(0);
  EXPECT_EQ(recycler::counts().held, 0u);
  used(6).reset();
  EXPECT_EQ(recycler::counts().held, 0u) << "cap 0 recycles nothing";
}

// Only the same size comes back.
TEST_F(MemoryRecycler, OnlyTheSameSizeIsReused) {
  used(1).reset();
  const uint64_t reused = recycler::counts().reused;
  std::shared_ptr<PhysicalMemory> other;
  ASSERT_EQ(MemfdMemory::create(2 * kMiB, &other, true), 0);
  EXPECT_EQ(recycler::counts().reused, reused);
  EXPECT_EQ(recycler::counts().held, 1u);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
