// Conformance of BlockAllocator (docs/device-interface.md §9, C12-C13): a block is one call
// that gives memory, its address in the device page table and its charge, and one call that
// takes all three back. Until step 7 the core places blocks (BlockRequest::address); the harness
// reserves the range as it does for the MMU cases. The copy halves wait for the copy engine
// (step 3): the bytes are checked through the block's physical object and the CPU.
#include <cstring>
#include <vector>

#include "conformance/harness.h"
#include "unit/testing/endpoints.h"

namespace aclvmm::conformance {
namespace {

using dev::AddressInfo;
using dev::Block;
using dev::BlockKind;
using dev::BlockRequest;
using dev::Condition;
using dev::kGiB;
using dev::kMiB;
using dev::kNoDevice;
using dev::Location;
using dev::MemoryInfo;
using dev::VaRange;
using dev::MemoryKind;
using dev::MemType;
using dev::PageType;

constexpr uint64_t kDeviceMemory = 3 * kGiB;

class BlocksConformance : public BackendTest {
 protected:
  BackendSetup setup() const override { return BackendSetup{2, kDeviceMemory}; }

  BlockRequest device_block(uint64_t size, PageType page) {
    BlockRequest r;
    r.kind = BlockKind::kDevice;
    r.device = 1;
    r.size = size;
    r.page_type = page;
    r.mem_type = MemType::kHbm;
    return r;
  }
  BlockRequest host_block(uint64_t size) {
    BlockRequest r;
    r.kind = BlockKind::kHostPinned;
    r.device = kNoDevice;
    r.size = size;
    r.page_type = PageType::kNormal;
    r.mem_type = MemType::kDdr;
    return r;
  }
  uint64_t device_free(dev::DeviceIndex d) {
    MemoryInfo info;
    EXPECT_TRUE(be().devices().memory_info(d, MemoryKind::kHbm, &info).ok());
    return info.free;
  }
  // Bytes of a block: through its physical object, or by a copy at its address for a block that
  // has none to offer (hal: halMemAlloc gives no handle, hal.md §3.12).
  dev::Result block_bytes(const Block& b, uint64_t offset, void* buffer, size_t n, bool write) {
    if (b.memory) {
      return write ? harness().write_physical(b.memory, offset, buffer, n)
                   : harness().read_physical(b.memory, offset, buffer, n);
    }
    const dev::CopyEndpoint at = testing::mapped(b.address + offset);
    const dev::CopyEndpoint host = testing::host(buffer);
    return be().copy_engine()
        .copy(dev::CopyRequest{write ? at : host, write ? host : at, n, dev::Executor{1, 0}})
        .result;
  }
  static std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + seed);
    return p;
  }
};

// C12: device blocks of every page size: address, span, page size, the page table's answer, the
// charge and its return, bytes in and out through the block's memory; the CPU does not see them.
TEST_P(BlocksConformance, C12_DeviceBlockIsOneCallAndFreeTakesItAllBack) {
  struct Shape {
    uint64_t size;
    PageType page;
    uint64_t span;
    uint32_t page_size;
  };
  const Shape shapes[] = {
      {4096, PageType::kNormal, 2 * kMiB, 4096},
      {3 * kMiB + 4096, PageType::kHuge, 4 * kMiB, static_cast<uint32_t>(2 * kMiB)},
      {kGiB + 2 * kMiB, PageType::kHuge, 2 * kGiB, static_cast<uint32_t>(2 * kMiB)},
      {kGiB, PageType::kGiant, kGiB, static_cast<uint32_t>(kGiB)},
  };
  const uint64_t free_before = device_free(1);
  const std::string held_before = harness().held_resources();
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "block of " << s.size << " bytes");
    listener_.clear_usage();
    Block block;
    ASSERT_TRUE(be().blocks().allocate(device_block(s.size, s.page), &block).ok());
    // The backend places it (step 7): in the general part, aligned for its size.
    const uint64_t va = block.address;
    const VaRange general = be().windows().layout().device_general;
    EXPECT_TRUE(general.contains(va) && general.contains(va + s.span - 1)) << std::hex << va;
    EXPECT_EQ(va % (s.span >= kGiB ? kGiB : 2 * kMiB), 0u) << std::hex << va;
    EXPECT_EQ(block.size, s.size);
    if (harness().traits().block_objects) {
      EXPECT_EQ(block.span, s.span);
      EXPECT_TRUE(block.memory);
    }
    EXPECT_EQ(block.page_size, s.page_size);
    EXPECT_EQ(device_free(1), free_before - s.size);
    EXPECT_EQ(listener_.usage_sum(1), static_cast<int64_t>(s.size));

    AddressInfo info;
    ASSERT_TRUE(be().mmu().query(va + s.size - 1, &info).ok());
    EXPECT_EQ(info.kind, AddressInfo::Kind::kDeviceBlock);
    EXPECT_EQ(info.range.base, va);
    if (harness().traits().block_objects) {
      EXPECT_EQ(info.range.size, s.size);
    }
    EXPECT_EQ(info.memory, block.memory);
    EXPECT_EQ(info.offset, s.size - 1);
    EXPECT_EQ(info.owner, Location::device(1));
    EXPECT_EQ(info.page_size, s.page_size);
    if (s.span > s.size && harness().traits().block_objects) {
      EXPECT_EQ(be().mmu().query(va + s.size, &info).condition(), Condition::kNotFound);
    }

    // New blocks read zeros; bytes written into the memory are the block's.
    std::vector<uint8_t> back(4096, 0xee);
    ASSERT_TRUE(block_bytes(block, s.size - 4096, back.data(), 4096, false).ok());
    EXPECT_EQ(back, std::vector<uint8_t>(4096, 0));
    std::vector<uint8_t> bytes = pattern(4096, 3);
    ASSERT_TRUE(block_bytes(block, s.size - 4096, bytes.data(), 4096, true).ok());
    ASSERT_TRUE(block_bytes(block, s.size - 4096, back.data(), 4096, false).ok());
    EXPECT_EQ(back, bytes);
    std::vector<uint8_t> touched(16);
    EXPECT_EQ(harness().cpu_access(va, touched.data(), touched.size(), false).condition(),
              Condition::kBadAddress)
        << "the CPU reached a device block";

    ASSERT_TRUE(be().blocks().free(va).ok());
    EXPECT_EQ(be().mmu().query(va, &info).condition(), Condition::kNotFound);
    EXPECT_EQ(device_free(1), free_before);
    EXPECT_EQ(listener_.usage_sum(1), 0);
  }
  EXPECT_EQ(harness().held_resources(), held_before);
}

// C12 (refusals): a full device and the MMU's own operations on a block leave everything as it
// was; two blocks never share a range; a block is taken back only by free at its start.
TEST_P(BlocksConformance, C12_RefusalsLeaveNothingBehind) {
  const uint64_t free_before = device_free(1);
  const std::string held_before = harness().held_resources();
  Block block;
  EXPECT_EQ(be().blocks().allocate(device_block(kDeviceMemory + 4096, PageType::kHuge),
                                   &block).condition(),
            Condition::kOutOfMemory);
  EXPECT_EQ(device_free(1), free_before);
  EXPECT_EQ(harness().held_resources(), held_before);

  ASSERT_TRUE(be().blocks().allocate(device_block(2 * kMiB, PageType::kHuge), &block).ok());
  const uint64_t va = block.address;
  Block second;
  ASSERT_TRUE(be().blocks().allocate(device_block(4096, PageType::kNormal), &second).ok());
  EXPECT_TRUE(second.address >= va + block.span || second.address + second.span <= va)
      << "two blocks in one range";
  ASSERT_TRUE(be().blocks().free(second.address).ok());
  EXPECT_EQ(be().mmu().unmap(va, 2 * kMiB).condition(), Condition::kInvalidArgument);
  size_t applied = 7;
  const dev::AccessGrant grant{Location::host(), dev::Access::kReadWrite};
  EXPECT_EQ(be().mmu().set_access(va, 2 * kMiB, &grant, 1, &applied).condition(),
            Condition::kInvalidArgument);
  EXPECT_EQ(applied, 0u);
  EXPECT_EQ(be().blocks().free(va + 4096).condition(), Condition::kInvalidArgument);
  AddressInfo info;
  ASSERT_TRUE(be().mmu().query(va, &info).ok()) << "a refused call took the block";
  EXPECT_EQ(info.kind, AddressInfo::Kind::kDeviceBlock);
  EXPECT_EQ(device_free(1), free_before - 2 * kMiB);
  ASSERT_TRUE(be().blocks().free(va).ok());
  EXPECT_EQ(be().blocks().free(va).condition(), Condition::kInvalidArgument) << "freed twice";
  EXPECT_EQ(device_free(1), free_before);
  EXPECT_EQ(harness().held_resources(), held_before);
}

// C13: a host block is CPU memory: read-write for the CPU at its address, the same bytes as its
// physical object, charged to the host; after free the CPU faults there.
TEST_P(BlocksConformance, C13_HostBlockIsCpuMemoryUntilFreed) {
  const uint64_t size = 64 * 1024;
  const std::string held_before = harness().held_resources();
  listener_.clear_usage();
  Block block;
  ASSERT_TRUE(be().blocks().allocate(host_block(size), &block).ok());
  const uint64_t va = block.address;
  EXPECT_TRUE(be().windows().layout().host_pinned.contains(va)) << std::hex << va;
  EXPECT_EQ(va % (2 * kMiB), 0u);
  if (harness().traits().block_objects) {
    EXPECT_EQ(block.span, 2 * kMiB);
  }
  EXPECT_EQ(listener_.usage_sum(kNoDevice), static_cast<int64_t>(size));
  AddressInfo info;
  ASSERT_TRUE(be().mmu().query(va + 10, &info).ok());
  EXPECT_EQ(info.kind, AddressInfo::Kind::kHostBlock);
  EXPECT_EQ(info.owner, Location::host());
  EXPECT_EQ(info.range.size, size);

  const std::vector<uint8_t> bytes = pattern(8192, 11);
  ASSERT_TRUE(harness().cpu_access(va + size - 8192, const_cast<uint8_t*>(bytes.data()),
                                   bytes.size(), true).ok());
  std::vector<uint8_t> back(8192);
  ASSERT_TRUE(block_bytes(block, size - 8192, back.data(), back.size(), false).ok());
  EXPECT_EQ(back, bytes);
  std::vector<uint8_t> seen(8192);
  ASSERT_TRUE(harness().cpu_access(va + size - 8192, seen.data(), seen.size(), false).ok());
  EXPECT_EQ(seen, bytes);

  ASSERT_TRUE(be().blocks().free(va).ok());
  EXPECT_EQ(listener_.usage_sum(kNoDevice), 0);
  EXPECT_EQ(be().mmu().query(va, &info).condition(), Condition::kNotFound);
  EXPECT_EQ(harness().cpu_access(va, seen.data(), 16, false).condition(), Condition::kBadAddress);
  EXPECT_EQ(harness().held_resources(), held_before);
}

}  // namespace

ACLVMM_CONFORMANCE_SUITE(BlocksConformance);

}  // namespace aclvmm::conformance
