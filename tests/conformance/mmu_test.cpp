// Conformance of DeviceMmu (docs/device-interface.md §9, C14-C18, C50). C12-C13 (blocks) come with
// the BlockAllocator; the copy halves of C14 with the copy engine (step 3).
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Access;
using dev::AccessGrant;
using dev::AddressInfo;
using dev::Condition;
using dev::InitialAccess;
using dev::kGiB;
using dev::kMiB;
using dev::Location;
using dev::MemoryInfo;
using dev::MemoryKind;
using dev::PhysicalId;

class MmuConformance : public BackendTest {
 protected:
  uint64_t reserve(uint64_t size) {
    const uint64_t va = harness().reserve_va(size);
    EXPECT_NE(va, 0u);
    return va;
  }
  uint64_t device_free(dev::DeviceIndex d) {
    MemoryInfo info;
    EXPECT_TRUE(be().devices().memory_info(d, MemoryKind::kHbm, &info).ok());
    return info.free;
  }
  std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + seed);
    return p;
  }
};

// C14: bytes written through one mapping are read through another mapping of the same memory.
TEST_P(MmuConformance, C14_TwoMappingsShowTheSameBytes) {
  const PhysicalId mem = create(Location::host(), 4 * kMiB);
  const uint64_t a = reserve(kGiB), b = reserve(kGiB);
  // b shows the second half of the memory; where the driver maps no offset into memory
  // (hal.md §3.3), the first half again.
  const uint64_t b_offset = harness().traits().map_offsets ? 2 * kMiB : 0;
  ASSERT_TRUE(be().mmu().map(a, 4 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(be().mmu().map(b, 2 * kMiB, mem, b_offset, InitialAccess::kOwnerReadWrite).ok());
  std::vector<uint8_t> bytes = pattern(8192, 5);
  // Across the 2 MiB boundary of a.
  ASSERT_TRUE(harness().cpu_access(a + 2 * kMiB - 4096, bytes.data(), bytes.size(), true).ok());
  std::vector<uint8_t> back(4096);
  if (b_offset != 0) {
    ASSERT_TRUE(harness().cpu_access(b, back.data(), back.size(), false).ok());
    EXPECT_EQ(0, std::memcmp(back.data(), bytes.data() + 4096, 4096));
  } else {
    ASSERT_TRUE(harness().cpu_access(b + 2 * kMiB - 4096, back.data(), 4096, false).ok());
    EXPECT_EQ(0, std::memcmp(back.data(), bytes.data(), 4096));
  }
  std::vector<uint8_t> physical(4096);
  ASSERT_TRUE(harness().read_physical(mem, 2 * kMiB - 4096, physical.data(), 4096).ok());
  EXPECT_EQ(0, std::memcmp(physical.data(), bytes.data(), 4096));

  AddressInfo info;
  ASSERT_TRUE(be().mmu().query(b + 100, &info).ok());
  EXPECT_EQ(info.kind, AddressInfo::Kind::kMapping);
  EXPECT_EQ(info.memory, mem);
  EXPECT_EQ(info.range.base, b);
  EXPECT_EQ(info.range.size, 2 * kMiB);
  EXPECT_EQ(info.offset, b_offset + 100);
  EXPECT_EQ(info.owner, Location::host());
  ASSERT_TRUE(be().mmu().unmap(a, 4 * kMiB).ok());
  ASSERT_TRUE(be().mmu().unmap(b, 2 * kMiB).ok());
  ASSERT_TRUE(be().physical().release(mem).ok());
}

// C15: after unmap nothing is there, and a new object mapped at the same place never shows the
// old bytes. A released object that is still mapped keeps its bytes and its charge until the
// unmap.
TEST_P(MmuConformance, C15_UnmapLeavesNothingAndReleaseWaitsForIt) {
  const uint64_t va = reserve(kGiB);
  const PhysicalId old_mem = create(Location::host(), 2 * kMiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, old_mem, 0, InitialAccess::kOwnerReadWrite).ok());
  std::vector<uint8_t> bytes = pattern(4096, 9);
  ASSERT_TRUE(harness().cpu_access(va, bytes.data(), bytes.size(), true).ok());
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
  AddressInfo info;
  EXPECT_EQ(be().mmu().query(va, &info).condition(), harness().traits().unmapped_query);
  std::vector<uint8_t> touched(16);
  EXPECT_EQ(harness().cpu_access(va, touched.data(), touched.size(), false).condition(),
            Condition::kBadAddress);
  ASSERT_TRUE(be().physical().release(old_mem).ok());

  const PhysicalId fresh = create(Location::host(), 2 * kMiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, fresh, 0, InitialAccess::kOwnerReadWrite).ok());
  std::vector<uint8_t> back(4096, 0xee);
  ASSERT_TRUE(harness().cpu_access(va, back.data(), back.size(), false).ok());
  EXPECT_EQ(back, std::vector<uint8_t>(4096, 0)) << "an old object's bytes showed";
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
  ASSERT_TRUE(be().physical().release(fresh).ok());

  // Released while mapped: device memory keeps its charge, host memory its bytes.
  const uint64_t before = device_free(0);
  const PhysicalId dmem = create(Location::device(0), 2 * kMiB);
  const uint64_t dva = reserve(kGiB);
  ASSERT_TRUE(be().mmu().map(dva, 2 * kMiB, dmem, 0, InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(be().physical().release(dmem).ok());
  EXPECT_EQ(device_free(0), before - 2 * kMiB) << "the charge went with the id";
  ASSERT_TRUE(be().mmu().unmap(dva, 2 * kMiB).ok());
  EXPECT_EQ(device_free(0), before);

  const PhysicalId hmem = create(Location::host(), 2 * kMiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, hmem, 0, InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(harness().cpu_access(va, bytes.data(), bytes.size(), true).ok());
  ASSERT_TRUE(be().physical().release(hmem).ok());
  std::fill(back.begin(), back.end(), 0);
  ASSERT_TRUE(harness().cpu_access(va, back.data(), back.size(), false).ok());
  EXPECT_EQ(back, bytes) << "a released but mapped object lost its bytes";
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
}

// C16: a kNone mapping gives nobody access; an owner mapping gives the owner READWRITE and
// everybody else NONE until set.
TEST_P(MmuConformance, C16_InitialAccess) {
  if (!be().capabilities().map_without_access) GTEST_SKIP() << "no map_without_access";
  const PhysicalId mem = create(Location::device(0), 4 * kMiB);
  const uint64_t va = reserve(kGiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, mem, 0, InitialAccess::kNone).ok());
  ASSERT_TRUE(be().mmu().map(va + 2 * kMiB, 2 * kMiB, mem, 2 * kMiB,
                             InitialAccess::kOwnerReadWrite).ok());
  const Location where[] = {Location::host(), Location::device(0), Location::device(1)};
  const Access none[] = {Access::kNone, Access::kNone, Access::kNone};
  const Access owner[] = {Access::kNone, Access::kReadWrite, Access::kNone};
  for (size_t i = 0; i < 3; ++i) {
    Access a = Access::kRead;
    ASSERT_TRUE(be().mmu().access(va + 4096, where[i], &a).ok());
    EXPECT_EQ(a, none[i]) << i;
    ASSERT_TRUE(be().mmu().access(va + 3 * kMiB, where[i], &a).ok());
    EXPECT_EQ(a, owner[i]) << i;
  }
  uint8_t byte = 0;
  EXPECT_EQ(harness().cpu_access(va, &byte, 1, false).condition(), Condition::kBadAddress);
  EXPECT_EQ(harness().cpu_access(va + 2 * kMiB, &byte, 1, false).condition(),
            Condition::kBadAddress)
      << "device memory without a HOST grant";
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
  ASSERT_TRUE(be().mmu().unmap(va + 2 * kMiB, 2 * kMiB).ok());
  ASSERT_TRUE(be().physical().release(mem).ok());
}

// C17: set_access reports what it applied; peers are granted by grant_peer.
TEST_P(MmuConformance, C17_SetAccessReportsApplied) {
  const PhysicalId mem = create(Location::device(0), 2 * kMiB);
  const uint64_t va = reserve(kGiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  // Without READ grants (access_none_and_read; hal.md §3.4) the peer is granted READWRITE.
  const Access partial =
      be().capabilities().access_none_and_read ? Access::kRead : Access::kReadWrite;
  const AccessGrant grants[] = {{Location::device(1), partial},
                                {Location::device(0), Access::kReadWrite}};
  size_t applied = 99;
  ASSERT_TRUE(be().mmu().set_access(va, 2 * kMiB, grants, 2, &applied).ok());
  EXPECT_EQ(applied, 2u);
  Access a = Access::kNone;
  ASSERT_TRUE(be().mmu().access(va, Location::device(1), &a).ok());
  EXPECT_EQ(a, partial);
  ASSERT_TRUE(be().mmu().grant_peer(va, 2 * kMiB, 1).ok());
  ASSERT_TRUE(be().mmu().access(va, Location::device(1), &a).ok());
  EXPECT_EQ(a, Access::kReadWrite);
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
  ASSERT_TRUE(be().physical().release(mem).ok());
}

// C17: a HOST grant on device memory makes it CPU-readable; revoking it makes the CPU fault.
TEST_P(MmuConformance, C17_HostGrantMapsDeviceMemoryForTheCpu) {
  if (!be().capabilities().cpu_visible_device_memory) {
    GTEST_SKIP() << "no cpu_visible_device_memory";
  }
  const PhysicalId mem = create(Location::device(0), 2 * kMiB);
  std::vector<uint8_t> bytes = pattern(4096, 3);
  ASSERT_TRUE(harness().write_physical(mem, 4096, bytes.data(), bytes.size()).ok());
  const uint64_t va = reserve(kGiB);
  ASSERT_TRUE(be().mmu().map(va, 2 * kMiB, mem, 0, InitialAccess::kOwnerReadWrite).ok());
  std::vector<uint8_t> back(4096);
  EXPECT_EQ(harness().cpu_access(va + 4096, back.data(), back.size(), false).condition(),
            Condition::kBadAddress);
  const AccessGrant read{Location::host(), Access::kRead};
  size_t applied = 0;
  ASSERT_TRUE(be().mmu().set_access(va, 2 * kMiB, &read, 1, &applied).ok());
  EXPECT_EQ(applied, 1u);
  ASSERT_TRUE(harness().cpu_access(va + 4096, back.data(), back.size(), false).ok());
  EXPECT_EQ(back, bytes);
  EXPECT_EQ(harness().cpu_access(va + 4096, back.data(), 1, true).condition(),
            Condition::kBadAddress)
      << "READ lets the CPU write";
  const AccessGrant revoke{Location::host(), Access::kNone};
  ASSERT_TRUE(be().mmu().set_access(va, 2 * kMiB, &revoke, 1, &applied).ok());
  EXPECT_EQ(harness().cpu_access(va + 4096, back.data(), 1, false).condition(),
            Condition::kBadAddress);
  ASSERT_TRUE(be().mmu().unmap(va, 2 * kMiB).ok());
  ASSERT_TRUE(be().physical().release(mem).ok());
}

// C18: map/unmap of disjoint ranges from 4 threads, 10 000 times in all: the page table ends
// empty and every object can go.
TEST_P(MmuConformance, C18_ConcurrentMapUnmapEndsEmpty) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 2500;
  const std::string baseline = harness().held_resources();
  const uint64_t va = reserve(kThreads * kGiB);
  PhysicalId mem[kThreads];
  for (PhysicalId& m : mem) m = create(Location::device(0), 2 * kMiB);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t at = va + t * kGiB + (i % 8) * 2 * kMiB;
        if (!be().mmu().map(at, 2 * kMiB, mem[t], 0, InitialAccess::kOwnerReadWrite).ok() ||
            !be().mmu().unmap(at, 2 * kMiB).ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < 8; ++i) {
      AddressInfo info;
      EXPECT_EQ(be().mmu().query(va + t * kGiB + i * 2 * kMiB, &info).condition(),
                harness().traits().unmapped_query);
    }
  }
  for (PhysicalId m : mem) ASSERT_TRUE(be().physical().release(m).ok());
  EXPECT_EQ(harness().held_resources(), baseline);
}

// C50: host registration (runtime-extra.md §5, halHostRegister): the process's own pages register
// for a device, pinned or not, and unregister with the same arguments; a range with a page the
// process does not have (the null page, in every backend) is kBadAddress and registers nothing.
TEST_P(MmuConformance, C50_HostPagesRegisterAndUnregister) {
  if (!harness().traits().host_registration) {
    GTEST_SKIP() << "no host registration (hal: halHostRegister is not part of hal.md)";
  }
  constexpr uint64_t kPage = 4096;
  std::vector<uint8_t> buffer(8 * kPage, 0x5a);
  const uint64_t pages = (reinterpret_cast<uint64_t>(buffer.data()) + kPage - 1) / kPage * kPage;
  for (const bool pin : {false, true}) {
    SCOPED_TRACE(pin ? "pinned" : "not pinned");
    ASSERT_TRUE(be().mmu().register_host(pages, 4 * kPage, 0, pin).ok());
    // Another device registers the same pages on its own.
    ASSERT_TRUE(be().mmu().register_host(pages, 4 * kPage, 1, pin).ok());
    EXPECT_TRUE(be().mmu().unregister_host(pages, 4 * kPage, 0, pin).ok());
    EXPECT_TRUE(be().mmu().unregister_host(pages, 4 * kPage, 1, pin).ok());
  }
  EXPECT_EQ(buffer[0], 0x5a) << "registration changed the bytes";
  EXPECT_EQ(be().mmu().register_host(0, 2 * kPage, 0, false).condition(), Condition::kBadAddress);
}

ACLVMM_CONFORMANCE_SUITE(MmuConformance);

}  // namespace
}  // namespace aclvmm::conformance
