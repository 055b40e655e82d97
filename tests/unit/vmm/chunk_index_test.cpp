// ChunkIndex (vmm/chunk_index.h): one packed word per 2 MiB chunk of the device window. Table-driven
// publish / clear / lookup over a small window whose table lives in this test (the addresses are
// never dereferenced), the limits of the encoding, and lock-free readers racing a writer.
#include "vmm/chunk_index.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "base/units.h"

namespace aclvmm {
namespace {

constexpr uint64_t kBase = 0x100000000000ull;  // a device window base (only compared, never read)
constexpr uint64_t kChunks = 64;
constexpr uint64_t kFieldMax = (1ull << 23) - 1;  // widest back / length field (chunk_index.cpp)

uint64_t c(uint64_t n) { return kBase + n * kChunk; }  // start of chunk n

ChunkEntry entry(ChunkEntry::Kind kind, int device, uint32_t shift, bool exact = false,
                 uint64_t range_base = 0, uint64_t range_size = 0) {
  ChunkEntry e;
  e.kind = kind;
  e.device = device;
  e.page_shift = shift;
  e.range_exact = exact;
  e.range_base = range_base;
  e.range_size = range_size;
  return e;
}

std::string show(const ChunkEntry& e) {
  return "kind " + std::to_string(e.kind) + " device " + std::to_string(e.device) + " shift " +
         std::to_string(e.page_shift) + " exact " + std::to_string(e.range_exact) + " range +0x" +
         (e.range_exact ? std::to_string((e.range_base - kBase) / kChunk) + " chunks, " +
                              std::to_string(e.range_size / kChunk) + " chunks"
                        : std::string("-"));
}

bool same(const ChunkEntry& a, const ChunkEntry& b) {
  return a.kind == b.kind && a.device == b.device && a.page_shift == b.page_shift &&
         a.range_exact == b.range_exact && a.range_base == b.range_base &&
         a.range_size == b.range_size;
}

// A ChunkIndex over [kBase, kBase + kChunks chunks) with a zeroed table it owns.
class ChunkIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(ChunkIndex::chunks_for(kChunks * kChunk), kChunks);
    index_.attach(kBase, kChunks * kChunk, table_.data());
  }
  // Which chunks hold a non-empty entry.
  std::vector<uint64_t> filled() const {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < kChunks; ++i) {
      if (index_.lookup(c(i)).kind != ChunkEntry::kEmpty) out.push_back(i);
    }
    return out;
  }
  std::vector<std::atomic<uint64_t>> table_ = std::vector<std::atomic<uint64_t>>(kChunks);
  ChunkIndex index_;
};

// ---------------------------------------------------------------------------------------------
// Which chunks a publish fills, and what every byte of them answers.

struct PublishCase {
  const char* name;
  uint64_t va, size;
  ChunkEntry e;
  std::vector<uint64_t> chunks;  // the chunks that must hold the entry; all others stay empty
  bool exact;                    // range_exact after the encoding
  uint64_t range_base, range_size;  // decoded range when exact
};

// Test failures name the case, not its bytes.
void PrintTo(const PublishCase& p, std::ostream* os) { *os << p.name; }

class ChunkIndexPublish : public ChunkIndexTest, public ::testing::WithParamInterface<PublishCase> {};

TEST_P(ChunkIndexPublish, FillsWholeChunksOnly) {
  const PublishCase& p = GetParam();
  index_.publish(p.va, p.size, p.e);
  EXPECT_EQ(filled(), p.chunks);
  for (uint64_t ch : p.chunks) {
    // The first byte, a middle byte and the last byte of the chunk give the same answer.
    for (uint64_t at : {c(ch), c(ch) + kChunk / 2 + 3, c(ch) + kChunk - 1}) {
      const ChunkEntry got = index_.lookup(at);
      EXPECT_EQ(got.kind, p.e.kind);
      EXPECT_EQ(got.device, p.e.device);
      EXPECT_EQ(got.page_shift, p.e.page_shift);
      EXPECT_EQ(got.range_exact, p.exact) << "chunk " << ch;
      if (p.exact) {
        EXPECT_EQ(got.range_base, p.range_base) << "chunk " << ch;
        EXPECT_EQ(got.range_size, p.range_size) << "chunk " << ch;
      }
    }
  }
  // Clearing the same range empties everything it filled.
  index_.clear(p.va, p.size);
  EXPECT_TRUE(filled().empty());
}

const ChunkEntry kDev0 = entry(ChunkEntry::kDevice, 0, 21);

INSTANTIATE_TEST_SUITE_P(
    Table, ChunkIndexPublish,
    ::testing::Values(
        PublishCase{"OneChunk", c(0), kChunk,
                    entry(ChunkEntry::kDevice, 3, 21, true, c(0), kChunk), {0}, true, c(0), kChunk},
        PublishCase{"FourChunksDecodeTheSameRange", c(10), 4 * kChunk,
                    entry(ChunkEntry::kDevice, 1, 21, true, c(10), 4 * kChunk), {10, 11, 12, 13},
                    true, c(10), 4 * kChunk},
        PublishCase{"LastChunkOfTheWindow", c(63), kChunk,
                    entry(ChunkEntry::kHost, 0, 0, true, c(63), kChunk), {63}, true, c(63), kChunk},
        // [1 MiB, 5 MiB): chunk 0 and chunk 2 are partial, only chunk 1 lies wholly inside; the
        // range does not start on a chunk, so it cannot be encoded.
        PublishCase{"PartialFirstAndLastChunkStayEmpty", c(0) + kMiB, 4 * kMiB,
                    entry(ChunkEntry::kDevice, 0, 21, true, c(0) + kMiB, 4 * kMiB), {1}, false, 0,
                    0},
        // A 6 MiB + 123 malloc block: three whole chunks; the length is not whole chunks.
        PublishCase{"UnalignedSizeIsNotExact", c(2), 6 * kMiB + 123,
                    entry(ChunkEntry::kDevice, 2, 12, true, c(2), 6 * kMiB + 123), {2, 3, 4},
                    false, 0, 0},
        // A block that owns a larger heap: the published chunks answer the heap's extent.
        PublishCase{"RangeWiderThanThePublishedChunks", c(16), 3 * kChunk + 5,
                    entry(ChunkEntry::kDevice, 0, 21, true, c(16), 16 * kChunk), {16, 17, 18},
                    true, c(16), 16 * kChunk},
        // A range that starts after the first published chunk cannot be encoded (back < 0).
        PublishCase{"RangeStartingLaterIsNotExact", c(5), 2 * kChunk,
                    entry(ChunkEntry::kDevice, 0, 21, true, c(6), kChunk), {5, 6}, false, 0, 0},
        PublishCase{"RangeBelowTheWindowIsNotExact", c(0), kChunk,
                    entry(ChunkEntry::kDevice, 0, 21, true, kBase - kChunk, 2 * kChunk), {0},
                    false, 0, 0},
        PublishCase{"NotExactWhenNotAsked", c(7), kChunk, kDev0, {7}, false, 0, 0},
        PublishCase{"LessThanOneChunkFillsNothing", c(3) + 4096, kChunk - 8192, kDev0, {}, false,
                    0, 0},
        PublishCase{"ChunkSizedButMisalignedFillsNothing", c(3) + kMiB, kChunk, kDev0, {}, false, 0,
                    0},
        PublishCase{"ZeroSizeFillsNothing", c(3), 0, kDev0, {}, false, 0, 0},
        PublishCase{"Device63", c(8), kChunk, entry(ChunkEntry::kDevice, 63, 21), {8}, false, 0, 0},
        PublishCase{"Device64IsNotEncoded", c(8), kChunk, entry(ChunkEntry::kDevice, 64, 21), {},
                    false, 0, 0},
        PublishCase{"NegativeDeviceIsNotEncoded", c(8), kChunk,
                    entry(ChunkEntry::kDevice, -1, 21), {}, false, 0, 0},
        PublishCase{"PageShift31", c(9), kChunk, entry(ChunkEntry::kDevice, 5, 31), {9}, false, 0, 0},
        PublishCase{"PageShift32IsNotEncoded", c(9), kChunk, entry(ChunkEntry::kDevice, 5, 32), {},
                    false, 0, 0},
        PublishCase{"EmptyKindFillsNothing", c(9), kChunk, entry(ChunkEntry::kEmpty, 1, 21), {},
                    false, 0, 0},
        PublishCase{"BelowTheWindowFillsNothing", kBase - kChunk, 2 * kChunk, kDev0, {}, false, 0,
                    0},
        // A range that runs past the window's end is not published at all.
        PublishCase{"PastTheWindowEndFillsNothing", c(62), 4 * kChunk, kDev0, {}, false, 0, 0}),
    [](const ::testing::TestParamInfo<PublishCase>& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Lookups outside the window, clears, and no table.

TEST_F(ChunkIndexTest, AddressesOutsideTheWindowAreEmpty) {
  for (uint64_t i = 0; i < kChunks; ++i) index_.publish(c(i), kChunk, kDev0);
  ASSERT_EQ(filled().size(), kChunks);
  for (uint64_t at : {uint64_t{0}, uint64_t{0x10}, kBase - 1, kBase - kChunk, c(kChunks),
                      c(kChunks) + 1, c(2 * kChunks), ~uint64_t{0}}) {
    EXPECT_EQ(index_.lookup(at).kind, ChunkEntry::kEmpty) << std::hex << at;
  }
  EXPECT_EQ(index_.lookup(c(kChunks) - 1).kind, ChunkEntry::kDevice);  // the window's last byte
  EXPECT_EQ(index_.lookup(kBase).kind, ChunkEntry::kDevice);
}

TEST_F(ChunkIndexTest, ClearEmptiesWholeChunksOnly) {
  index_.publish(c(20), 6 * kChunk, entry(ChunkEntry::kDevice, 4, 21, true, c(20), 6 * kChunk));
  // [chunk 21 + 1 MiB, chunk 24 + 1 MiB): chunks 22 and 23 lie wholly inside.
  index_.clear(c(21) + kMiB, 3 * kChunk);
  EXPECT_EQ(filled(), (std::vector<uint64_t>{20, 21, 24, 25}));
  // What is left still decodes to the published range.
  const ChunkEntry left = index_.lookup(c(25) + 17);
  EXPECT_TRUE(left.range_exact);
  EXPECT_EQ(left.range_base, c(20));
  EXPECT_EQ(left.range_size, 6 * kChunk);
  // A clear that runs past the window's end stops there; one below the window does nothing.
  index_.publish(c(60), 4 * kChunk, kDev0);
  index_.clear(c(61), 100 * kChunk);
  EXPECT_EQ(filled(), (std::vector<uint64_t>{20, 21, 24, 25, 60}));
  index_.clear(kBase - kChunk, 30 * kChunk);
  EXPECT_EQ(filled(), (std::vector<uint64_t>{20, 21, 24, 25, 60}));
  index_.clear(kBase, kChunks * kChunk);
  EXPECT_TRUE(filled().empty());
}

TEST_F(ChunkIndexTest, RepublishReplacesTheEntry) {
  index_.publish(c(4), 2 * kChunk, entry(ChunkEntry::kDevice, 1, 21, true, c(4), 2 * kChunk));
  index_.publish(c(5), kChunk, entry(ChunkEntry::kHost, 0, 0, true, c(5), kChunk));
  EXPECT_TRUE(same(index_.lookup(c(4)), entry(ChunkEntry::kDevice, 1, 21, true, c(4), 2 * kChunk)))
      << show(index_.lookup(c(4)));
  EXPECT_TRUE(same(index_.lookup(c(5)), entry(ChunkEntry::kHost, 0, 0, true, c(5), kChunk)))
      << show(index_.lookup(c(5)));
}

TEST(ChunkIndex, WithoutATableEverythingIsEmpty) {
  ChunkIndex never_attached;
  EXPECT_EQ(never_attached.lookup(kBase).kind, ChunkEntry::kEmpty);
  EXPECT_EQ(never_attached.lookup(0).kind, ChunkEntry::kEmpty);
  never_attached.publish(kBase, kChunk, kDev0);  // must not write anywhere
  never_attached.clear(kBase, kChunk);

  ChunkIndex no_table;
  no_table.attach(kBase, kChunks * kChunk, nullptr);
  no_table.publish(c(0), 8 * kChunk, kDev0);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(no_table.lookup(c(i)).kind, ChunkEntry::kEmpty);
  no_table.clear(c(0), 8 * kChunk);
}

TEST(ChunkIndex, AWindowTooSmallOrTooLargeGetsNoTable) {
  std::vector<std::atomic<uint64_t>> table(4);
  ChunkIndex small;
  small.attach(kBase, kChunk - 1, table.data());  // not one whole chunk
  small.publish(kBase, kChunk, kDev0);
  EXPECT_EQ(small.lookup(kBase).kind, ChunkEntry::kEmpty);
  for (auto& w : table) EXPECT_EQ(w.load(), 0u);
  ChunkIndex huge;
  huge.attach(kBase, (kFieldMax + 1) * kChunk, table.data());  // 16 TiB: not indexed
  huge.publish(kBase, kChunk, kDev0);
  EXPECT_EQ(huge.lookup(kBase).kind, ChunkEntry::kEmpty);
  for (auto& w : table) EXPECT_EQ(w.load(), 0u);
}

TEST(ChunkIndex, ChunksForLimits) {
  EXPECT_EQ(ChunkIndex::chunks_for(0), 0u);
  EXPECT_EQ(ChunkIndex::chunks_for(kChunk - 1), 0u);
  EXPECT_EQ(ChunkIndex::chunks_for(kChunk), 1u);
  EXPECT_EQ(ChunkIndex::chunks_for(3 * kChunk - 1), 2u);
  EXPECT_EQ(ChunkIndex::chunks_for(8ull << 40), 4ull << 20);  // the 8 TiB device window
  EXPECT_EQ(ChunkIndex::chunks_for(kFieldMax * kChunk), kFieldMax);
  EXPECT_EQ(ChunkIndex::chunks_for((kFieldMax + 1) * kChunk), 0u);  // 16 TiB: too large
  EXPECT_EQ(ChunkIndex::chunks_for(~uint64_t{0}), 0u);
}

// The widest values of every field at once: none spills into its neighbour. The window is the
// largest one indexed (2^23 - 1 chunks); its table is a lazily populated mapping, of which only
// the touched pages become memory.
TEST(ChunkIndex, WidestFieldsDecodeExactly) {
  const uint64_t bytes = kFieldMax * sizeof(uint64_t);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::unique_ptr<void, std::function<void(void*)>> unmap(mem, [bytes](void* p) { munmap(p, bytes); });
  ChunkIndex index;
  index.attach(kBase, kFieldMax * kChunk, mem);
  const uint64_t last = kFieldMax - 1;
  // Last chunk: back = 2^23 - 2, length = 2^23 - 1, device 63, page shift 31, kind host.
  const ChunkEntry wide = entry(ChunkEntry::kHost, 63, 31, true, kBase, kFieldMax * kChunk);
  index.publish(c(last), kChunk, wide);
  EXPECT_TRUE(same(index.lookup(c(last) + kChunk - 1), wide)) << show(index.lookup(c(last)));
  // First chunk: back 0 with the same length and the smallest other fields.
  const ChunkEntry narrow = entry(ChunkEntry::kDevice, 0, 0, true, kBase, kFieldMax * kChunk);
  index.publish(c(0), kChunk, narrow);
  EXPECT_TRUE(same(index.lookup(c(0)), narrow)) << show(index.lookup(c(0)));
  EXPECT_EQ(index.lookup(c(last) + kChunk).kind, ChunkEntry::kEmpty);  // past the window
  EXPECT_EQ(index.lookup(c(1)).kind, ChunkEntry::kEmpty);
}

// A device id the word cannot hold (64 and more; -1 is "none") is not published: its chunks stay
// empty and the address space answers them from its trees. (No backend has such a device today
// (kMaxDevices is 64), so the address space's own test cannot make one.)
TEST(ChunkIndex, AnEntryOfADeviceTheWordCannotHoldStaysEmpty) {
  std::vector<std::atomic<uint64_t>> table(kChunks);
  ChunkIndex index;
  index.attach(kBase, kChunks * kChunk, table.data());
  for (int device : {64, 1000, -1}) {
    index.publish(c(4), kChunk, entry(ChunkEntry::kDevice, device, 21, true, c(4), kChunk));
    EXPECT_EQ(index.lookup(c(4)).kind, ChunkEntry::kEmpty) << device;
  }
  const ChunkEntry d63 = entry(ChunkEntry::kDevice, 63, 21, true, c(4), kChunk);
  index.publish(c(4), kChunk, d63);
  EXPECT_TRUE(same(index.lookup(c(4)), d63)) << show(index.lookup(c(4)));
}

// Readers take no lock: while a writer publishes and clears one chunk over and over, a reader
// sees the empty entry or one of the two published entries, whole, never a mix of them.
TEST(ChunkIndexConcurrency, ReadersSeeWholeEntriesWhileAWriterChangesThem) {
  std::vector<std::atomic<uint64_t>> table(kChunks);
  ChunkIndex index;
  index.attach(kBase, kChunks * kChunk, table.data());
  const ChunkEntry a = entry(ChunkEntry::kDevice, 7, 21, true, c(2), 4 * kChunk);
  const ChunkEntry b = entry(ChunkEntry::kHost, 0, 0, true, c(3), kChunk);
  std::atomic<bool> stop{false};
  std::atomic<long> torn{0}, seen_a{0}, seen_b{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const ChunkEntry e = index.lookup(c(3) + 4096);
        if (e.kind == ChunkEntry::kEmpty) continue;
        if (same(e, a)) {
          seen_a.fetch_add(1, std::memory_order_relaxed);
        } else if (same(e, b)) {
          seen_b.fetch_add(1, std::memory_order_relaxed);
        } else {
          torn.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (int i = 0; i < 20000; ++i) {
    index.publish(c(2), 4 * kChunk, a);
    index.clear(c(2), 4 * kChunk);
    index.publish(c(3), kChunk, b);
    index.clear(c(3), kChunk);
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  // Not asserted: seen_a / seen_b (a fast writer may finish before a reader ever runs).
  index.publish(c(2), 4 * kChunk, a);
  EXPECT_TRUE(same(index.lookup(c(3)), a));
}

}  // namespace
}  // namespace aclvmm
