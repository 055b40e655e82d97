// The fake's byte store (drivers/fake/byte_store.h): sparse 64 KiB pages, zeros without
// allocation, bounds.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/device_types.h"
#include "drivers/fake/byte_store.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kPage = ByteStore::kPageBytes;

TEST(FakeByteStoreTest, NeverWrittenBytesAreZerosAndCostNothing) {
  ByteStore store(64 * kGiB);
  std::vector<uint8_t> buf(3 * kPage, 0xee);
  ASSERT_TRUE(store.read(40 * kGiB + 17, buf.data(), buf.size()).ok());
  for (uint8_t b : buf) ASSERT_EQ(b, 0);
  EXPECT_EQ(store.stored_pages(), 0u);
}

TEST(FakeByteStoreTest, WritesAcrossPagesReadBackAndTouchOnlyTheirPages) {
  ByteStore store(16 * kPage);
  std::vector<uint8_t> data(kPage + 100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 5);
  const uint64_t at = 3 * kPage - 50;  // pages 2, 3 and 4
  ASSERT_TRUE(store.write(at, data.data(), data.size()).ok());
  EXPECT_EQ(store.stored_pages(), 3u);
  std::vector<uint8_t> back(data.size() + 20, 0xee);
  ASSERT_TRUE(store.read(at - 10, back.data(), back.size()).ok());
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(back[i], 0) << i;
  EXPECT_EQ(0, std::memcmp(back.data() + 10, data.data(), data.size()));
  for (size_t i = 10 + data.size(); i < back.size(); ++i) EXPECT_EQ(back[i], 0) << i;
}

TEST(FakeByteStoreTest, FillsSetBytesAndZeroFillsGiveWholePagesBack) {
  ByteStore store(8 * kPage);
  ASSERT_TRUE(store.fill(kPage / 2, 0x5a, 2 * kPage).ok());  // pages 0, 1, 2
  EXPECT_EQ(store.stored_pages(), 3u);
  uint8_t b = 0;
  ASSERT_TRUE(store.read(kPage / 2 - 1, &b, 1).ok());
  EXPECT_EQ(b, 0);
  ASSERT_TRUE(store.read(2 * kPage + kPage / 2 - 1, &b, 1).ok());
  EXPECT_EQ(b, 0x5a);
  ASSERT_TRUE(store.fill(0, 0, 2 * kPage).ok());  // pages 0 and 1 entirely
  EXPECT_EQ(store.stored_pages(), 1u);
  ASSERT_TRUE(store.read(2 * kPage, &b, 1).ok());
  EXPECT_EQ(b, 0x5a);
  ASSERT_TRUE(store.fill(5 * kPage + 1, 0, 10).ok());  // zeros into a page never written
  EXPECT_EQ(store.stored_pages(), 1u);
}

TEST(FakeByteStoreTest, RangesOutsideTheStoreMoveNothing) {
  ByteStore store(2 * kPage);
  uint8_t buf[16] = {};
  struct Range {
    uint64_t offset;
    size_t n;
  };
  for (const Range& r : {Range{2 * kPage, 1}, Range{2 * kPage - 8, 16}, Range{~0ull - 4, 16},
                         Range{0, 2 * kPage + 1}}) {
    EXPECT_EQ(store.read(r.offset, buf, r.n).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(store.write(r.offset, buf, r.n).condition(), Condition::kInvalidArgument);
    EXPECT_EQ(store.fill(r.offset, 1, r.n).condition(), Condition::kInvalidArgument);
  }
  EXPECT_EQ(store.stored_pages(), 0u);
  EXPECT_TRUE(store.read(2 * kPage, buf, 0).ok()) << "an empty range at the end is inside";
}

}  // namespace
}  // namespace aclvmm::dev::fake
