// aclrtMemP2PMap's range check is the same for both kinds of device memory: the range must lie
// inside the reservation or inside the aclrtMalloc block that `devPtr` points into, without
// wrapping around the address space (107000 otherwise). An aclrtMalloc block used to accept any
// size, SIZE_MAX included, with 0.
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

// MappedTest: a 2 MiB reservation va_ with one device-0 mapping.
class P2PMapRangeTest : public MappedTest {};

struct Memory {
  const char* kind;
  void* base;
  size_t size;  // the whole reservation, or the block as aclrtMemGetAddressRange reports it
};

struct SizeRow {
  const char* name;
  size_t offset;                        // devPtr = base + offset
  size_t (*size)(size_t whole, size_t offset);
  aclError want;
};

const SizeRow kRows[] = {
    {"the whole memory", 0, [](size_t w, size_t) { return w; }, kOk},
    {"one byte", 0, [](size_t, size_t) { return size_t(1); }, kOk},
    {"the rest from an offset", 4096, [](size_t w, size_t o) { return w - o; }, kOk},
    {"one byte past the end", 0, [](size_t w, size_t) { return w + 1; }, kRtParam},
    {"one byte past the end from an offset", 4096, [](size_t w, size_t o) { return w - o + 1; }, kRtParam},
    {"twice the size", 0, [](size_t w, size_t) { return 2 * w; }, kRtParam},
    {"SIZE_MAX", 0, [](size_t, size_t) { return SIZE_MAX; }, kRtParam},
    {"SIZE_MAX from an offset", 4096, [](size_t, size_t) { return SIZE_MAX; }, kRtParam},
    {"a size that wraps to the base", 4096, [](size_t, size_t o) { return SIZE_MAX - o + 1; }, kRtParam},
    {"1 << 63", 0, [](size_t, size_t) { return size_t(1) << 63; }, kRtParam},
};

TEST_F(P2PMapRangeTest, SizeTableForReservationsAndMallocBlocks) {
  // A 3 MiB aclrtMalloc block of device 0, as large as the library reports it.
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  void* block_base = nullptr;
  size_t block_size = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(block, &block_base, &block_size), kOk);
  ASSERT_EQ(block_base, block);
  ASSERT_GE(block_size, 3 * kMiB);

  const Memory kinds[] = {{"reservation", va_, k2M}, {"aclrtMalloc block", block, block_size}};
  int rows = 0;
  for (const Memory& m : kinds) {
    for (const SizeRow& r : kRows) {
      SCOPED_TRACE(std::string(m.kind) + ": " + r.name);
      const size_t size = r.size(m.size, r.offset);
      EXPECT_EQ(aclrtMemP2PMap(at(m.base, r.offset), size, 1, 0), r.want) << "size " << size;
      const std::string msg = recent_msg();
      if (r.want != kOk) {
        EXPECT_NE(msg.find("runs past"), std::string::npos) << msg;
      }
      ++rows;
    }
  }
  EXPECT_EQ(rows, 2 * static_cast<int>(std::size(kRows)));
  EXPECT_EQ(aclrtFree(block), kOk);
}

// A refused range grants nothing: device 1 still cannot read the block afterwards.
TEST_F(P2PMapRangeTest, RefusedRangeOfAMallocBlockOpensNothing) {
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  EXPECT_EQ(aclrtMemP2PMap(block, SIZE_MAX, 1, 0), kRtParam);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclError rc = kOk;
  get(block, 4096, &rc);
  EXPECT_EQ(rc, kDrv) << "device 1 after a refused P2P map";
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtFree(block), kOk);
}

}  // namespace
}  // namespace aclvmm_test
