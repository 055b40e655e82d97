// Tests of emu's memfd memory (os/memfd_memory.h): fresh bytes, reads, writes and fills, their codes, adoption of a descriptor,
// against the real kernel: bytes, return codes, faults.
#include <gtest/gtest.h>

#include "unit/testing/emu_os_fixture.h"

namespace aclvmm::dev::emu::os {
namespace {

using namespace fixture;  // NOLINT: EmuDriver and its helpers

TEST_F(EmuDriver, FreshMemoryReadsZero) {
  const uint64_t size = 3 * kMiB + 123;
  auto mem = alloc(size);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->size(), size);
  EXPECT_GE(mem->fd(), 0);
  std::vector<uint8_t> buf(size, 0xEE);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  EXPECT_EQ(std::count(buf.begin(), buf.end(), 0), static_cast<long>(size));
  struct stat st;
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), size);
  EXPECT_EQ(st.st_blocks, 0) << "fresh memory must be sparse";
}

TEST_F(EmuDriver, CreateRejectsZero) {
  std::shared_ptr<PhysicalMemory> mem;
  EXPECT_EQ(MemfdMemory::create(0, &mem), -EINVAL);
  EXPECT_EQ(mem, nullptr);
  EXPECT_EQ(MemfdMemory::create(kMiB, &mem), 0);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->size(), kMiB);
}

TEST_F(EmuDriver, WriteReadRoundTripAtOffset) {
  auto mem = alloc(kMiB);
  std::vector<uint8_t> src(10000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(mem->write(12345, src.data(), src.size()), 0);
  std::vector<uint8_t> dst(src.size() + 2, 0xEE);
  ASSERT_EQ(mem->read(12344, dst.data(), dst.size()), 0);
  EXPECT_EQ(dst.front(), 0);
  EXPECT_EQ(dst.back(), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 1, src.data(), src.size()), 0);
  // The last byte is reachable; zero-length transfers at the end are no-ops.
  uint8_t b = 0x5A;
  EXPECT_EQ(mem->write(kMiB - 1, &b, 1), 0);
  b = 0;
  EXPECT_EQ(mem->read(kMiB - 1, &b, 1), 0);
  EXPECT_EQ(b, 0x5A);
  EXPECT_EQ(mem->read(kMiB, &b, 0), 0);
}

TEST_F(EmuDriver, FillUnalignedEdges) {
  const uint64_t p = page();
  const uint64_t size = 8 * p;
  auto mem = alloc(size);
  std::vector<uint8_t> buf(size, 0x11);
  ASSERT_EQ(mem->write(0, buf.data(), size), 0);

  ASSERT_EQ(mem->fill(100, 0xAB, 3 * p), 0);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  for (uint64_t i = 0; i < size; ++i) {
    uint8_t want = (i >= 100 && i < 100 + 3 * p) ? 0xAB : 0x11;
    ASSERT_EQ(buf[i], want) << "byte " << i;
  }

  // Zero fill spanning whole pages (punched) with unaligned head and tail (written).
  const uint64_t off = p - 7, len = 4 * p + 20;
  ASSERT_EQ(mem->fill(off, 0, len), 0);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  for (uint64_t i = 0; i < size; ++i) {
    uint8_t want = (i >= off && i < off + len) ? 0 : (i >= 100 && i < 100 + 3 * p) ? 0xAB : 0x11;
    ASSERT_EQ(buf[i], want) << "byte " << i;
  }

  // Inside one page: no whole page to punch.
  ASSERT_EQ(mem->fill(7 * p + 3, 0, 5), 0);
  ASSERT_EQ(mem->read(7 * p, buf.data(), 16), 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(buf[i], (i >= 3 && i < 8) ? 0 : 0x11) << i;
}

TEST_F(EmuDriver, ZeroFillFreesPages) {
  const uint64_t size = 4 * kMiB;
  auto mem = alloc(size);
  ASSERT_EQ(mem->fill(0, 0x11, size), 0);
  struct stat st;
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  const auto before = st.st_blocks;
  EXPECT_GE(static_cast<uint64_t>(before) * 512, size);
  ASSERT_EQ(mem->fill(1, 0, size - 2), 0);
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 2 * page()) << "only the edge pages stay";
  uint8_t edges[2] = {};
  ASSERT_EQ(mem->read(0, &edges[0], 1), 0);
  ASSERT_EQ(mem->read(size - 1, &edges[1], 1), 0);
  EXPECT_EQ(edges[0], 0x11);
  EXPECT_EQ(edges[1], 0x11);
}

TEST_F(EmuDriver, LargePatternFill) {
  const uint64_t size = 3 * kMiB + 5;
  auto mem = alloc(size);
  ASSERT_EQ(mem->fill(1, 0xCD, size - 1), 0);
  std::vector<uint8_t> buf(size);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  EXPECT_EQ(buf[0], 0);
  EXPECT_EQ(std::count(buf.begin() + 1, buf.end(), 0xCD), static_cast<long>(size - 1));
}

TEST_F(EmuDriver, BadHostPointerIsEfault) {
  auto mem = alloc(kMiB);
  EXPECT_EQ(mem->read(0, kBadPtr, 64), -EFAULT);
  EXPECT_EQ(mem->write(0, kBadPtr, 64), -EFAULT);
  EXPECT_EQ(mem->read(0, nullptr, 1), -EFAULT);
  EXPECT_EQ(mem->write(0, nullptr, 1), -EFAULT);
  // A placeholder window is address space without access.
  uint64_t w = window(2 * kMiB);
  EXPECT_EQ(mem->read(0, ptr(w), 4096), -EFAULT);
  EXPECT_EQ(mem->write(0, ptr(w), 4096), -EFAULT);
  // The memory is untouched.
  uint8_t b = 0xEE;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 0);
}

TEST_F(EmuDriver, OutOfRangeIsEinval) {
  auto mem = alloc(kMiB);
  uint8_t buf[16] = {};
  EXPECT_EQ(mem->read(kMiB, buf, 1), -EINVAL);
  EXPECT_EQ(mem->read(kMiB - 1, buf, 2), -EINVAL);
  EXPECT_EQ(mem->read(kMiB + 1, buf, 0), -EINVAL);
  EXPECT_EQ(mem->read(UINT64_MAX, buf, 2), -EINVAL);
  EXPECT_EQ(mem->write(kMiB - 8, buf, 16), -EINVAL);
  EXPECT_EQ(mem->write(UINT64_MAX - 1, buf, 4), -EINVAL);
  EXPECT_EQ(mem->fill(kMiB - 8, 0, 16), -EINVAL);
  EXPECT_EQ(mem->fill(0, 0xAB, kMiB + 1), -EINVAL);
  EXPECT_EQ(mem->fill(2 * kMiB, 0, 0), -EINVAL);
}

TEST_F(EmuDriver, AdoptSharesBytesAndChecksSize) {
  auto mem = alloc(kMiB);
  const char msg[] = "shared";
  ASSERT_EQ(mem->write(4096, msg, sizeof msg), 0);
  std::shared_ptr<PhysicalMemory> other;
  ASSERT_EQ(MemfdMemory::adopt(dup(mem->fd()), kMiB, &other), 0);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->size(), kMiB);
  char got[sizeof msg] = {};
  ASSERT_EQ(other->read(4096, got, sizeof got), 0);
  EXPECT_STREQ(got, msg);
  ASSERT_EQ(other->fill(4096, 'x', 1), 0);
  ASSERT_EQ(mem->read(4096, got, 1), 0);
  EXPECT_EQ(got[0], 'x');

  // Exactly the announced size: a sender must not pass off a larger file either (issue 13).
  std::shared_ptr<PhysicalMemory> small;
  EXPECT_EQ(MemfdMemory::adopt(dup(mem->fd()), kMiB / 2, &small), -EINVAL);
  std::shared_ptr<PhysicalMemory> big;
  int fd = dup(mem->fd());
  EXPECT_EQ(MemfdMemory::adopt(fd, kMiB + 1, &big), -EINVAL);
  EXPECT_EQ(big, nullptr);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "adopt owns the descriptor even on failure";
  EXPECT_EQ(MemfdMemory::adopt(-1, kMiB, &big), -EBADF);
}

TEST_F(EmuDriver, ManySmallPhysicalObjects) {
  constexpr int kCount = 2000;
  std::vector<std::shared_ptr<PhysicalMemory>> mems;
  std::set<int> fds;
  for (int i = 0; i < kCount; ++i) {
    auto m = alloc(4096);
    ASSERT_NE(m, nullptr) << "allocation " << i;
    ASSERT_EQ(m->write(8, &i, sizeof i), 0);
    fds.insert(m->fd());
    mems.push_back(std::move(m));
  }
  EXPECT_EQ(fds.size(), static_cast<size_t>(kCount));
  for (int i = 0; i < kCount; ++i) {
    int got = -1;
    ASSERT_EQ(mems[i]->read(8, &got, sizeof got), 0);
    ASSERT_EQ(got, i);
  }
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
