// MemfdMemory's CPU view (drivers/emu/os/memfd_memory.h): reads and writes copy through a shared
// mapping of the memfd when the range is dense, and through pread/pwrite otherwise, so that
// reading memory that was never written (or was zero-filled, i.e. hole-punched) does not allocate
// it. Checked by bytes and by the file's allocated blocks (fstat st_blocks).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "drivers/emu/os/memfd_memory.h"
#include "unit/testing/emu_os_fixture.h"

namespace aclvmm::dev::emu::os {
namespace {

const uint64_t kHostPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

using fixture::make_memfd;

// Allocated 512-byte blocks of the memory's file.
long long blocks(const PhysicalMemory& m) {
  struct stat st;
  EXPECT_EQ(fstat(m.fd(), &st), 0);
  return static_cast<long long>(st.st_blocks);
}

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 167 + seed * 31 + (i >> 11)) | 1);
  return v;
}

std::vector<uint8_t> read_all(const PhysicalMemory& m, uint64_t off, size_t n) {
  std::vector<uint8_t> out(n, 0xEE);
  EXPECT_EQ(m.read(off, out.data(), n), 0) << "read at " << off << " of " << n;
  return out;
}

// First index where a and b differ (n when equal), for short failure messages.
size_t first_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return i;
  }
  return n;
}

// Writes at offsets that start and end inside pages, cross page and 2 MiB boundaries, and end at
// the last byte; reads of ranges that are wholly written (copied through the view), partly
// written and never written (pread) all give the bytes a shadow copy holds.
TEST(MemfdView, WriteThenReadIsByteExactAcrossOffsets) {
  const uint64_t size = 8 * kMiB + 123;  // the last page is partial
  auto mem = make_memfd(size);
  ASSERT_NE(mem, nullptr);
  std::vector<uint8_t> shadow(size, 0);
  const std::pair<uint64_t, uint64_t> writes[] = {{0, 1},
                                                  {kHostPage - 1, 2},
                                                  {3 * kHostPage + 7, 100000},
                                                  {2 * kMiB - 10, 20},
                                                  {4 * kMiB, 2 * kMiB},
                                                  {size - 50, 50},
                                                  {5 * kMiB + 3, 1},
                                                  {0, kHostPage}};
  unsigned seed = 1;
  for (auto [off, n] : writes) {
    const std::vector<uint8_t> data = pattern(n, seed++);
    ASSERT_EQ(mem->write(off, data.data(), n), 0) << off;
    std::copy(data.begin(), data.end(), shadow.begin() + off);
  }
  const std::pair<uint64_t, uint64_t> reads[] = {{0, size},
                                                 {0, 1},
                                                 {kHostPage - 1, 2},
                                                 {3 * kHostPage + 7, 100000},
                                                 {4 * kMiB, 2 * kMiB},
                                                 {4 * kMiB + 1, 2 * kMiB - 2},
                                                 {size - 50, 50},
                                                 {size - 1, 1},
                                                 {2 * kMiB - 10, 20},
                                                 {7 * kMiB, kMiB},
                                                 {1 * kMiB, 3 * kMiB},
                                                 {size, 0}};
  for (auto [off, n] : reads) {
    const std::vector<uint8_t> got = read_all(*mem, off, n);
    EXPECT_EQ(first_diff(got.data(), shadow.data() + off, n), n) << "read of " << n << " at " << off;
  }
}

TEST(MemfdView, ReadingNeverWrittenMemoryKeepsItSparse) {
  const uint64_t size = 8 * kMiB;
  auto mem = make_memfd(size);
  ASSERT_NE(mem, nullptr);
  // Fresh: reads are zeros and allocate nothing.
  std::vector<uint8_t> got = read_all(*mem, 0, size);
  EXPECT_EQ(first_diff(got.data(), std::vector<uint8_t>(size, 0).data(), size), size);
  EXPECT_EQ(blocks(*mem), 0);
  // One written page (the view exists from now on); reading around it allocates nothing more.
  const std::vector<uint8_t> data = pattern(kHostPage, 9);
  ASSERT_EQ(mem->write(4 * kMiB, data.data(), kHostPage), 0);
  const long long written = blocks(*mem);
  EXPECT_GT(written, 0);
  EXPECT_LE(written, static_cast<long long>(2 * kMiB / 512));  // at most one huge page
  got = read_all(*mem, 0, 4 * kMiB);
  EXPECT_EQ(first_diff(got.data(), std::vector<uint8_t>(4 * kMiB, 0).data(), 4 * kMiB), 4 * kMiB);
  got = read_all(*mem, 0, size);
  EXPECT_EQ(first_diff(got.data() + 4 * kMiB, data.data(), kHostPage), kHostPage);
  got = read_all(*mem, 4 * kMiB + kHostPage, kHostPage);  // the page after the written one
  EXPECT_EQ(got, std::vector<uint8_t>(kHostPage, 0));
  EXPECT_EQ(blocks(*mem), written) << "reading holes allocated memory";
}

// copy_to: device-to-device copies between two memories, at offsets, for dense, partly written
// and never written sources.
TEST(MemfdView, CopyToIsByteExact) {
  const uint64_t size = 6 * kMiB;
  auto src = make_memfd(size);
  auto dst = make_memfd(size);
  ASSERT_TRUE(src && dst);
  const std::vector<uint8_t> full = pattern(size, 3);
  ASSERT_EQ(src->write(0, full.data(), size), 0);
  struct Case {
    uint64_t from, to, n;
  } cases[] = {{0, 0, size},
               {4097, 123, 3 * kMiB + 5},
               {size - 1, 0, 1},
               {0, size - kHostPage, kHostPage},
               {2 * kMiB, 2 * kMiB, 2 * kMiB},
               {5, 7, 0}};
  for (const Case& c : cases) {
    ASSERT_EQ(dst->fill(0, 0, size), 0);
    std::vector<uint8_t> want(size, 0);
    std::copy(full.begin() + c.from, full.begin() + c.from + c.n, want.begin() + c.to);
    ASSERT_EQ(src->copy_to(c.from, *dst, c.to, c.n), 0) << c.from << " -> " << c.to;
    const std::vector<uint8_t> got = read_all(*dst, 0, size);
    EXPECT_EQ(first_diff(got.data(), want.data(), size), size) << c.from << " -> " << c.to;
  }
  // A partly written source (holes between written pages) copies as the bytes it reads.
  auto partial = make_memfd(size);
  std::vector<uint8_t> want(size, 0);
  for (uint64_t off : {kHostPage * 3 + 5, 2 * kMiB - 100, 5 * kMiB}) {
    const std::vector<uint8_t> piece = pattern(3000, static_cast<unsigned>(off));
    ASSERT_EQ(partial->write(off, piece.data(), piece.size()), 0);
    std::copy(piece.begin(), piece.end(), want.begin() + off);
  }
  ASSERT_EQ(dst->write(0, full.data(), size), 0);  // the destination holds other bytes first
  ASSERT_EQ(partial->copy_to(1, *dst, 0, size - 1), 0);
  const std::vector<uint8_t> got = read_all(*dst, 0, size - 1);
  EXPECT_EQ(first_diff(got.data(), want.data() + 1, size - 1), size - 1);
  EXPECT_EQ(read_all(*dst, size - 1, 1)[0], full[size - 1]);  // the byte after the copy is kept
  // Ranges past either end.
  EXPECT_EQ(src->copy_to(size - 10, *dst, 0, 11), -EINVAL);
  EXPECT_EQ(src->copy_to(size + 1, *dst, 0, 0), -EINVAL);
  EXPECT_EQ(src->copy_to(0, *dst, size - 10, 11), -EINVAL);
}

TEST(MemfdView, CopyFromASparseSourceLeavesItSparse) {
  const uint64_t size = 4 * kMiB;
  auto src = make_memfd(size);
  auto dst = make_memfd(size);
  ASSERT_TRUE(src && dst);
  const std::vector<uint8_t> old = pattern(size, 5);
  ASSERT_EQ(dst->write(0, old.data(), size), 0);
  ASSERT_EQ(src->copy_to(0, *dst, 0, size), 0);
  EXPECT_EQ(blocks(*src), 0) << "copying from never-written memory allocated it";
  EXPECT_EQ(read_all(*dst, 0, size), std::vector<uint8_t>(size, 0));
  // And after the source got a view (one write), copies out of its holes still allocate nothing.
  const std::vector<uint8_t> one = pattern(kHostPage, 6);
  ASSERT_EQ(src->write(0, one.data(), kHostPage), 0);
  const long long after_write = blocks(*src);
  ASSERT_EQ(src->copy_to(2 * kMiB, *dst, 0, 2 * kMiB), 0);
  EXPECT_EQ(blocks(*src), after_write);
  EXPECT_EQ(read_all(*dst, 0, 2 * kMiB), std::vector<uint8_t>(2 * kMiB, 0));
}

// fill(0) punches holes: the pages go back to the system, reads see zeros and stay on pread, so
// they do not bring the pages back.
TEST(MemfdView, ZeroFillPunchesAndReadsDoNotReallocate) {
  const uint64_t size = 8 * kMiB;
  auto mem = make_memfd(size);
  ASSERT_NE(mem, nullptr);
  const std::vector<uint8_t> data = pattern(size, 7);
  ASSERT_EQ(mem->write(0, data.data(), size), 0);
  ASSERT_EQ(read_all(*mem, 0, size), data);  // through the view: everything is dense now
  const long long full = blocks(*mem);
  EXPECT_GE(full, static_cast<long long>(size / 512));
  ASSERT_EQ(mem->fill(2 * kMiB, 0, 4 * kMiB), 0);
  const long long punched = blocks(*mem);
  EXPECT_LE(punched, full - static_cast<long long>(4 * kMiB / 512));
  EXPECT_EQ(read_all(*mem, 2 * kMiB, 4 * kMiB), std::vector<uint8_t>(4 * kMiB, 0));
  const std::vector<uint8_t> all = read_all(*mem, 0, size);
  EXPECT_EQ(first_diff(all.data(), data.data(), 2 * kMiB), 2 * kMiB);
  EXPECT_EQ(first_diff(all.data() + 6 * kMiB, data.data() + 6 * kMiB, 2 * kMiB), 2 * kMiB);
  EXPECT_EQ(blocks(*mem), punched) << "reading zero-filled memory allocated it again";
  // An unaligned zero fill: the edges are written, the whole pages inside are punched.
  ASSERT_EQ(mem->fill(100, 0, 3 * kHostPage), 0);
  std::vector<uint8_t> want = data;
  std::fill(want.begin() + 100, want.begin() + 100 + 3 * kHostPage, 0);
  std::fill(want.begin() + 2 * kMiB, want.begin() + 6 * kMiB, 0);
  EXPECT_EQ(first_diff(read_all(*mem, 0, size).data(), want.data(), size), size);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
