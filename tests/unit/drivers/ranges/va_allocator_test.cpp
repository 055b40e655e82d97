// Unit tests of VaAllocator: aligned first fit, fixed-address allocation, freeing with coalescing,
// exhaustion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "drivers/device_types.h"
#include "drivers/ranges/va_allocator.h"

namespace aclvmm::dev {
namespace {

TEST(VaAllocator, ResetSetsWindowAndContains) {
  VaAllocator va;
  va.reset(0x100000, 0x200000);
  EXPECT_EQ(va.base(), 0x100000u);
  EXPECT_EQ(va.end(), 0x200000u);
  EXPECT_FALSE(va.contains(0xFFFFF));
  EXPECT_TRUE(va.contains(0x100000));
  EXPECT_TRUE(va.contains(0x1FFFFF));
  EXPECT_FALSE(va.contains(0x200000));
}

TEST(VaAllocator, FirstFitHandsOutConsecutiveBlocksFromTheBase) {
  VaAllocator va;
  va.reset(1 * kGiB, 2 * kGiB);
  std::vector<uint64_t> got;
  for (int i = 0; i < 4; ++i) {
    uint64_t out = 0;
    ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &out)) << i;
    got.push_back(out);
  }
  EXPECT_EQ(got, (std::vector<uint64_t>{1 * kGiB, 1 * kGiB + 2 * kMiB, 1 * kGiB + 4 * kMiB,
                                        1 * kGiB + 6 * kMiB}));
}

TEST(VaAllocator, FirstFitReusesTheLowestHoleThatFits) {
  VaAllocator va;
  va.reset(0, 64 * kMiB);
  uint64_t a, b, c, d;
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &a));  // [0,2)
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &b));  // [2,4)
  ASSERT_TRUE(va.allocate(4 * kMiB, 2 * kMiB, &c));  // [4,8)
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &d));  // [8,10)
  ASSERT_EQ(c, 4 * kMiB);
  va.free(b, 2 * kMiB);  // hole of 2 MiB at 2
  va.free(c, 4 * kMiB);  // coalesces with it: hole [2,8)
  uint64_t e = 0;
  ASSERT_TRUE(va.allocate(6 * kMiB, 2 * kMiB, &e));
  EXPECT_EQ(e, 2 * kMiB);  // the coalesced hole, not the tail after d
  va.free(e, 6 * kMiB);
  uint64_t f = 0;
  ASSERT_TRUE(va.allocate(8 * kMiB, 2 * kMiB, &f));
  EXPECT_EQ(f, 10 * kMiB);  // the hole [2,8) is too small: first fit skips it
  uint64_t g = 0;
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &g));
  EXPECT_EQ(g, 2 * kMiB);  // the small request takes the lowest hole
}

struct AlignCase {
  uint64_t base, end, pre_size, size, align, expected;
};

class VaAllocatorAlign : public ::testing::TestWithParam<AlignCase> {};

TEST_P(VaAllocatorAlign, ResultIsAlignedFirstFit) {
  const AlignCase& c = GetParam();
  VaAllocator va;
  va.reset(c.base, c.end);
  if (c.pre_size) {
    uint64_t pre = 0;
    ASSERT_TRUE(va.allocate(c.pre_size, 4 * kKiB, &pre));
    ASSERT_EQ(pre, c.base);
  }
  uint64_t out = 0;
  ASSERT_TRUE(va.allocate(c.size, c.align, &out));
  EXPECT_EQ(out, c.expected);
  EXPECT_EQ(out % c.align, 0u);
  EXPECT_GE(out, c.base);
  EXPECT_LE(out + c.size, c.end);
}

INSTANTIATE_TEST_SUITE_P(
    Table, VaAllocatorAlign,
    ::testing::Values(
        // base already aligned
        AlignCase{2 * kMiB, 64 * kMiB, 0, 2 * kMiB, 2 * kMiB, 2 * kMiB},
        // unaligned base rounds up to the next multiple
        AlignCase{4 * kKiB, 64 * kMiB, 0, 2 * kMiB, 2 * kMiB, 2 * kMiB},
        AlignCase{1 * kMiB, 8 * kGiB, 0, 1 * kGiB, 1 * kGiB, 1 * kGiB},
        // a previous allocation pushes the next 1 GiB-aligned start to the following GiB
        AlignCase{1 * kGiB, 8 * kGiB, 2 * kMiB, 1 * kGiB, 1 * kGiB, 2 * kGiB},
        // a previous small allocation: 2 MiB alignment starts right after it
        AlignCase{0, 64 * kMiB, 2 * kMiB, 4 * kMiB, 2 * kMiB, 2 * kMiB},
        // a previous 4 KiB allocation: the 2 MiB aligned start skips the rest of the first chunk
        AlignCase{0, 64 * kMiB, 4 * kKiB, 2 * kMiB, 2 * kMiB, 2 * kMiB},
        // exactly the remaining window after alignment
        AlignCase{4 * kKiB, 4 * kMiB, 0, 2 * kMiB, 2 * kMiB, 2 * kMiB}));

TEST(VaAllocator, AlignmentThatLeavesTooLittleRoomFails) {
  VaAllocator va;
  va.reset(4 * kKiB, 3 * kMiB);  // the only 2 MiB aligned start (2 MiB) leaves 1 MiB
  uint64_t out = 0xdead;
  EXPECT_FALSE(va.allocate(2 * kMiB, 2 * kMiB, &out));
  // The failure took nothing: the whole window is still free.
  EXPECT_TRUE(va.allocate_at(4 * kKiB, 3 * kMiB - 4 * kKiB));
}

struct AtCase {
  const char* name;
  uint64_t addr, size;
  bool ok;
};

class VaAllocatorAllocateAt : public ::testing::TestWithParam<AtCase> {};

// Window [16 MiB, 48 MiB) with [24 MiB, 28 MiB) already taken.
TEST_P(VaAllocatorAllocateAt, Table) {
  const AtCase& c = GetParam();
  VaAllocator va;
  va.reset(16 * kMiB, 48 * kMiB);
  ASSERT_TRUE(va.allocate_at(24 * kMiB, 4 * kMiB));
  EXPECT_EQ(va.allocate_at(c.addr, c.size), c.ok) << c.name;
  if (c.ok) {
    // Taken now: the same range again fails.
    EXPECT_FALSE(va.allocate_at(c.addr, c.size)) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, VaAllocatorAllocateAt,
    ::testing::Values(AtCase{"at_base", 16 * kMiB, 2 * kMiB, true},
                      AtCase{"right_before_taken", 22 * kMiB, 2 * kMiB, true},
                      AtCase{"right_after_taken", 28 * kMiB, 2 * kMiB, true},
                      AtCase{"up_to_end", 46 * kMiB, 2 * kMiB, true},
                      AtCase{"whole_tail", 28 * kMiB, 20 * kMiB, true},
                      AtCase{"whole_head", 16 * kMiB, 8 * kMiB, true},
                      AtCase{"below_base", 14 * kMiB, 2 * kMiB, false},
                      AtCase{"straddles_base", 15 * kMiB, 2 * kMiB, false},
                      AtCase{"past_end", 48 * kMiB, 2 * kMiB, false},
                      AtCase{"straddles_end", 47 * kMiB, 2 * kMiB, false},
                      AtCase{"far_past_end", 1 * kGiB, 2 * kMiB, false},
                      AtCase{"wraps_around", 46 * kMiB, UINT64_MAX - 1 * kMiB, false},
                      AtCase{"same_as_taken", 24 * kMiB, 4 * kMiB, false},
                      AtCase{"inside_taken", 25 * kMiB, 1 * kMiB, false},
                      AtCase{"overlaps_taken_start", 22 * kMiB, 4 * kMiB, false},
                      AtCase{"overlaps_taken_end", 26 * kMiB, 4 * kMiB, false},
                      AtCase{"covers_taken", 20 * kMiB, 12 * kMiB, false},
                      AtCase{"whole_window", 16 * kMiB, 32 * kMiB, false}),
    [](const ::testing::TestParamInfo<AtCase>& info) { return std::string(info.param.name); });

TEST(VaAllocator, AllocateSkipsRangesTakenByAllocateAt) {
  VaAllocator va;
  va.reset(0, 16 * kMiB);
  ASSERT_TRUE(va.allocate_at(0, 2 * kMiB));
  ASSERT_TRUE(va.allocate_at(4 * kMiB, 2 * kMiB));
  uint64_t out = 0;
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &out));
  EXPECT_EQ(out, 2 * kMiB);
  ASSERT_TRUE(va.allocate(4 * kMiB, 2 * kMiB, &out));
  EXPECT_EQ(out, 6 * kMiB);
}

// Frees in every order of four blocks that tile the window: afterwards the whole window must be
// one free range again.
class VaAllocatorCoalesce : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(VaAllocatorCoalesce, WholeWindowAllocatableAfterFreeingAll) {
  const std::vector<int>& order = GetParam();
  VaAllocator va;
  va.reset(1 * kGiB, 1 * kGiB + 8 * kMiB);
  uint64_t blocks[4];
  for (uint64_t& b : blocks) ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &b));
  uint64_t extra = 0;
  ASSERT_FALSE(va.allocate(2 * kMiB, 2 * kMiB, &extra));  // full
  for (size_t i = 0; i < order.size(); ++i) {
    va.free(blocks[order[i]], 2 * kMiB);
    if (i + 1 < order.size()) {
      // Not everything is free yet: the whole window cannot be taken.
      EXPECT_FALSE(va.allocate_at(1 * kGiB, 8 * kMiB));
    }
  }
  uint64_t whole = 0;
  ASSERT_TRUE(va.allocate(8 * kMiB, 2 * kMiB, &whole));
  EXPECT_EQ(whole, 1 * kGiB);
  EXPECT_FALSE(va.allocate(4 * kKiB, 4 * kKiB, &extra));
}

std::vector<std::vector<int>> all_orders() {
  std::vector<int> p = {0, 1, 2, 3};
  std::vector<std::vector<int>> out;
  do {
    out.push_back(p);
  } while (std::next_permutation(p.begin(), p.end()));
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOrders, VaAllocatorCoalesce, ::testing::ValuesIn(all_orders()));

TEST(VaAllocator, CoalescedMiddleHoleServesALargerRequest) {
  VaAllocator va;
  va.reset(0, 10 * kMiB);
  uint64_t b[5];
  for (uint64_t& x : b) ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &x));
  va.free(b[1], 2 * kMiB);
  va.free(b[3], 2 * kMiB);
  uint64_t out = 0;
  EXPECT_FALSE(va.allocate(6 * kMiB, 2 * kMiB, &out));  // two separate 2 MiB holes
  va.free(b[2], 2 * kMiB);                              // joins them: [2, 8)
  ASSERT_TRUE(va.allocate(6 * kMiB, 2 * kMiB, &out));
  EXPECT_EQ(out, 2 * kMiB);
}

TEST(VaAllocator, ExhaustionReturnsFalseAndFreeingMakesRoom) {
  VaAllocator va;
  va.reset(2 * kMiB, 2 * kMiB + 32 * kMiB);
  std::vector<uint64_t> got;
  uint64_t out = 0;
  while (va.allocate(2 * kMiB, 2 * kMiB, &out)) {
    got.push_back(out);
    ASSERT_LE(got.size(), 16u);
  }
  EXPECT_EQ(got.size(), 16u);
  EXPECT_FALSE(va.allocate(4 * kKiB, 4 * kKiB, &out));
  EXPECT_FALSE(va.allocate_at(2 * kMiB, 2 * kMiB));
  va.free(got[7], 2 * kMiB);
  ASSERT_TRUE(va.allocate(2 * kMiB, 2 * kMiB, &out));
  EXPECT_EQ(out, got[7]);
  EXPECT_FALSE(va.allocate(2 * kMiB, 2 * kMiB, &out));
}

TEST(VaAllocator, RequestLargerThanWindowFails) {
  VaAllocator va;
  va.reset(0, 8 * kMiB);
  uint64_t out = 0;
  EXPECT_FALSE(va.allocate(8 * kMiB + 4 * kKiB, 4 * kKiB, &out));
  EXPECT_FALSE(va.allocate(UINT64_MAX - 4 * kKiB, 4 * kKiB, &out));
  ASSERT_TRUE(va.allocate(8 * kMiB, 4 * kKiB, &out));
  EXPECT_EQ(out, 0u);
}

TEST(VaAllocator, ResetForgetsAllocations) {
  VaAllocator va;
  va.reset(0, 4 * kMiB);
  uint64_t out = 0;
  ASSERT_TRUE(va.allocate(4 * kMiB, 2 * kMiB, &out));
  EXPECT_FALSE(va.allocate(2 * kMiB, 2 * kMiB, &out));
  va.reset(0, 4 * kMiB);
  ASSERT_TRUE(va.allocate(4 * kMiB, 2 * kMiB, &out));
  EXPECT_EQ(out, 0u);
}

}  // namespace
}  // namespace aclvmm::dev
