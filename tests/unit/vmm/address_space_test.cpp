// Unit tests of AddressSpace (the emulated device MMU) on the real emu backend: reservations,
// mapping geometry, access rights, pointer queries, device-side translation and what the CPU may
// touch (behavior.md sections 2-4, 8, 9; emulation.md sections 3-4).
#include "vmm/address_space.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "drivers/device_mmu.h"
#include "unit/testing/fault_signals.h"
#include "unit/testing/test_device.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

constexpr int kParamInvalid = 107000;   // ACL_ERROR_RT_PARAM_INVALID
constexpr int kContextNull = 107002;    // ACL_ERROR_RT_CONTEXT_NULL
constexpr int kInvalidHandle = 107017;  // ACL_ERROR_RT_INVALID_HANDLE
constexpr int kMemAlloc = 207001;       // ACL_ERROR_RT_MEMORY_ALLOCATION
constexpr int kDrvError = 507899;       // ACL_ERROR_RT_DRV_INTERNAL_ERROR

uint8_t* ptr(uint64_t v) { return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(v)); }
uint64_t addr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

using testing::reset_fault_signals_for_child;

class AddressSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    as_ = std::make_unique<AddressSpace>();
    attach_device(false);
  }
  void TearDown() override {
    as_.reset();      // regions and physical memory go first
    device_.reset();  // then the device: its MMU's mappings, its windows and their CPU views
  }
  // The device MMU's options (ACLVMM_HOST_ACCESS=open is emu's, D13).
  void attach_device(bool host_access_open) {
    device_ = testing::open_test_device(host_access_open);
    as_->attach_device(device_);
  }

  std::shared_ptr<PhysicalAllocation> phys(int device, uint64_t size, Side side = Side::kDevice) {
    auto p = std::make_shared<PhysicalAllocation>();
    p->side = side;
    p->device = side == Side::kDevice ? device : 0;
    p->size = size;
    testing::create_in(device_, *p);
    return p;
  }

  uint64_t reserve(uint64_t size) {
    auto r = as_->reserve(size, 0, false, "test");
    EXPECT_TRUE(r.ok()) << "reserve(" << size << "): " << r.status().code() << " "
                        << r.status().message();
    return r.ok() ? *r : 0;
  }

  // Maps `size` bytes of a fresh allocation of device `device` at va; returns the allocation.
  std::shared_ptr<PhysicalAllocation> map_new(uint64_t va, uint64_t size, int device = 0,
                                              uint64_t handle = 0x1234) {
    auto p = phys(device, size);
    Status st = as_->map(va, size, handle, p, false);
    EXPECT_TRUE(st.ok()) << "map at +" << std::hex << va << ": " << st.code() << " "
                         << st.message();
    return p;
  }

  // One piece per mapping the device MMU passes on [va, va+n) (what the copy engine walks): the
  // object mapped there, the offset into it, and how many of the n bytes it holds. Empty for
  // an address the MMU does not know (process memory).
  struct Piece {
    dev::PhysicalId memory;
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  std::vector<Piece> walk(uint64_t va, uint64_t n) {
    std::vector<Piece> pieces;
    while (n > 0) {
      dev::AddressInfo info;
      if (!device_->mmu().query(va, &info).ok() || info.kind != dev::AddressInfo::Kind::kMapping) break;
      const uint64_t length = std::min(n, info.range.base + info.range.size - va);
      pieces.push_back(Piece{info.memory, info.offset, length});
      va += length;
      n -= length;
    }
    return pieces;
  }

  std::shared_ptr<dev::DeviceBackend> device_;
  std::unique_ptr<AddressSpace> as_;
};

// ---------------------------------------------------------------------------------------------
// Windows

// The windows are the device backend's (drivers/emu/device/windows.h): claiming them, once per
// process and where a forked child's parent had them, is tested there
// (tests/unit/drivers/emu/device/windows_test.cpp).

TEST_F(AddressSpaceTest, WindowSizesAndReservationsInTheGeneralPart) {
  // Host pinned 1 TiB, managed 3 TiB, device 8 TiB (emulation.md section 3); they may have been
  // moved, so only sizes and relative placement are checked.
  const dev::WindowLayout& layout = device_->windows().layout();
  std::vector<std::pair<uint64_t, uint64_t>> w = {
      {layout.host_pinned.base, layout.host_pinned.size},
      {layout.managed.base, layout.managed.size},
      {layout.device.base, layout.device.size}};
  std::sort(w.begin(), w.end(), [](auto& a, auto& b) { return a.second < b.second; });
  EXPECT_EQ(as_->uvm_window(), layout.managed.base);
  EXPECT_EQ(w[0].second, 1 * kTiB);
  EXPECT_EQ(w[1].second, 3 * kTiB);
  EXPECT_EQ(w[2].second, 8 * kTiB);
  for (auto& [b, size] : w) EXPECT_EQ(b % kGiB, 0u) << std::hex << b;
  const uint64_t svm = w[2].first;
  const uint64_t general = svm + (0x12C000000000ull - 0x100000000000ull);
  for (uint64_t size : std::initializer_list<uint64_t>{512, 1 * kGiB, 64 * kMiB}) {
    uint64_t base = reserve(size);
    EXPECT_GE(base, general) << std::hex << base;
    EXPECT_LE(base + size, svm + 8 * kTiB) << std::hex << base;
  }
}

// ---------------------------------------------------------------------------------------------
// Reservations (behavior.md section 2)

struct ReserveCase {
  uint64_t size;
  uint64_t usable;  // the rounded size that can be mapped
  uint64_t align;   // required base alignment
};

class AddressSpaceReserve : public AddressSpaceTest,
                            public ::testing::WithParamInterface<ReserveCase> {};

TEST_P(AddressSpaceReserve, RoundedSizeAndAlignment) {
  const ReserveCase& c = GetParam();
  // A small reservation first so that the next base is not 1 GiB aligned by accident.
  ASSERT_NE(reserve(512), 0u);
  uint64_t base = reserve(c.size);
  ASSERT_NE(base, 0u);
  EXPECT_EQ(base % c.align, 0u) << std::hex << base;
  // The whole rounded size is mappable...
  auto p = phys(0, c.usable);
  Status st = as_->map(base, c.usable, 1, p, false);
  EXPECT_TRUE(st.ok()) << st.code() << " " << st.message();
  // ...and nothing beyond it.
  ASSERT_TRUE(as_->unmap(base).ok());
  auto bigger = phys(0, c.usable + kChunk);
  st = as_->map(base, c.usable + kChunk, 2, bigger, false);
  EXPECT_EQ(st.code(), kDrvError) << st.message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddressSpaceReserve,
    ::testing::Values(ReserveCase{512, 2 * kMiB, 2 * kMiB}, ReserveCase{1, 2 * kMiB, 2 * kMiB},
                      ReserveCase{2 * kMiB, 2 * kMiB, 2 * kMiB},
                      ReserveCase{2 * kMiB + 1, 4 * kMiB, 2 * kMiB},
                      ReserveCase{5 * kMiB, 6 * kMiB, 2 * kMiB},
                      ReserveCase{512 * kMiB, 512 * kMiB, 2 * kMiB},
                      ReserveCase{1 * kGiB, 1 * kGiB, 1 * kGiB},
                      ReserveCase{1 * kGiB + 2 * kMiB, 1 * kGiB + 2 * kMiB, 1 * kGiB},
                      ReserveCase{3 * kGiB, 3 * kGiB, 1 * kGiB}));

TEST_F(AddressSpaceTest, SmallReservationTakesExactlyOneChunk) {
  uint64_t a = reserve(512);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(a % (2 * kMiB), 0u);
  // 2 MiB maps; the chunk after it is not part of the reservation.
  map_new(a, 2 * kMiB);
  auto p = phys(0, 2 * kMiB);
  EXPECT_EQ(as_->map(a + 2 * kMiB, 2 * kMiB, 9, p, false).code(), kDrvError);
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), 1u);
  EXPECT_EQ(as_->mapping_count(), 1u);
}

TEST_F(AddressSpaceTest, ReservationsDoNotOverlap) {
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (uint64_t size : std::initializer_list<uint64_t>{512, 3 * kMiB, 1 * kGiB, 2 * kMiB, 600 * kMiB, 1}) {
    uint64_t b = reserve(size);
    ASSERT_NE(b, 0u);
    got.emplace_back(b, size);
  }
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t j = i + 1; j < got.size(); ++j) {
      const auto& [b1, s1] = got[i];
      const auto& [b2, s2] = got[j];
      EXPECT_TRUE(b1 + s1 <= b2 || b2 + s2 <= b1) << i << " and " << j << " overlap";
    }
  }
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), got.size());
}

TEST_F(AddressSpaceTest, ReleaseMakesTheRangeReusable) {
  uint64_t a = reserve(4 * kMiB);
  ASSERT_NE(a, 0u);
  ASSERT_TRUE(as_->release(a).ok());
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), 0u);
  uint64_t b = reserve(4 * kMiB);
  EXPECT_EQ(b, a);  // first fit: the freed range is the lowest free one again
}

struct ReleaseCase {
  const char* name;
  int which;  // 0 unknown in window, 1 interior, 2 released twice, 3 zero, 4 heap, 5 malloc
};

class AddressSpaceReleaseBad : public AddressSpaceTest,
                               public ::testing::WithParamInterface<ReleaseCase> {};

TEST_P(AddressSpaceReleaseBad, ParamInvalid) {
  const ReleaseCase& c = GetParam();
  uint64_t base = reserve(8 * kMiB);
  ASSERT_NE(base, 0u);
  std::vector<uint8_t> heap(64);
  uint64_t target = 0;
  switch (c.which) {
    case 0: target = base + 64 * kGiB; break;
    case 1: target = base + 2 * kMiB; break;
    case 2: {
      uint64_t other = reserve(2 * kMiB);
      ASSERT_TRUE(as_->release(other).ok());
      target = other;
      break;
    }
    case 3: target = 0; break;
    case 4: target = addr(heap.data()); break;
    case 5: {
      auto r = testing::add_device_block(*as_, 2 * kMiB, 100, 2 * kMiB, 0, phys(0, 2 * kMiB));
      ASSERT_TRUE(r.ok()) << r.status().message();
      target = *r;
      break;
    }
  }
  Status st = as_->release(target);
  EXPECT_EQ(st.code(), kParamInvalid) << c.name << ": " << st.message();
  // The live reservation is untouched.
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), 1u) << c.name;
  EXPECT_TRUE(as_->release(base).ok()) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Table, AddressSpaceReleaseBad,
                         ::testing::Values(ReleaseCase{"unknown_in_window", 0},
                                           ReleaseCase{"interior", 1},
                                           ReleaseCase{"already_released", 2},
                                           ReleaseCase{"zero", 3}, ReleaseCase{"heap", 4},
                                           ReleaseCase{"malloc_pointer", 5}),
                         [](const ::testing::TestParamInfo<ReleaseCase>& info) {
                           return std::string(info.param.name);
                         });

TEST_F(AddressSpaceTest, ReleaseWithMappingsIsRefused) {
  uint64_t base = reserve(8 * kMiB);
  map_new(base + 2 * kMiB, 2 * kMiB, 0, 77);
  Status st = as_->release(base);
  EXPECT_EQ(st.code(), kDrvError) << st.message();
  // Nothing changed: the reservation and its mapping are still there.
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), 1u);
  EXPECT_EQ(as_->mapping_count(), 1u);
  auto h = as_->mapping_handle(base + 2 * kMiB);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, 77u);
  ASSERT_TRUE(as_->unmap(base + 2 * kMiB).ok());
  EXPECT_TRUE(as_->release(base).ok());
  EXPECT_EQ(as_->region_count(RegionKind::kReservation), 0u);
}

// ---------------------------------------------------------------------------------------------
// Mapping geometry (behavior.md section 3). Reservation of 16 MiB with [4 MiB, 8 MiB) mapped.

struct MapCase {
  const char* name;
  int64_t offset;  // from the reservation base
  uint64_t size;
  uint64_t phys_size;
  int device;
  int code;
};

class AddressSpaceMap : public AddressSpaceTest, public ::testing::WithParamInterface<MapCase> {};

TEST_P(AddressSpaceMap, Table) {
  const MapCase& c = GetParam();
  uint64_t base = reserve(16 * kMiB);
  ASSERT_NE(base, 0u);
  map_new(base + 4 * kMiB, 4 * kMiB, 0, 1);
  ASSERT_EQ(as_->mapping_count(), 1u);
  auto p = phys(c.device, c.phys_size);
  Status st = as_->map(base + c.offset, c.size, 2, p, false);
  EXPECT_EQ(st.code(), c.code) << c.name << ": " << st.message();
  EXPECT_EQ(as_->mapping_count(), c.code == 0 ? 2u : 1u) << c.name;
  if (c.code == 0) {
    auto h = as_->mapping_handle(base + c.offset);
    ASSERT_TRUE(h.ok()) << c.name;
    EXPECT_EQ(*h, 2u) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddressSpaceMap,
    ::testing::Values(
        MapCase{"at_base", 0, 2 * kMiB, 2 * kMiB, 0, 0},
        MapCase{"before_existing", 2 * kMiB, 2 * kMiB, 2 * kMiB, 0, 0},
        MapCase{"right_after_existing", 8 * kMiB, 8 * kMiB, 8 * kMiB, 0, 0},
        MapCase{"smaller_than_handle", 0, 2 * kMiB, 4 * kMiB, 0, 0},
        MapCase{"va_misaligned_4k", 4096, 2 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"va_misaligned_1m", 9 * kMiB, 2 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"size_misaligned", 0, 2 * kMiB + 4096, 4 * kMiB, 0, kDrvError},
        MapCase{"size_below_chunk", 0, 1 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"past_end", 14 * kMiB, 4 * kMiB, 4 * kMiB, 0, kDrvError},
        MapCase{"after_end", 16 * kMiB, 2 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"before_base", -2 * static_cast<int64_t>(kMiB), 2 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"overlap_same", 4 * kMiB, 4 * kMiB, 4 * kMiB, 0, kDrvError},
        MapCase{"overlap_inside", 6 * kMiB, 2 * kMiB, 2 * kMiB, 0, kDrvError},
        MapCase{"overlap_head", 2 * kMiB, 4 * kMiB, 4 * kMiB, 0, kDrvError},
        MapCase{"overlap_tail", 6 * kMiB, 4 * kMiB, 4 * kMiB, 0, kDrvError},
        MapCase{"overlap_cover", 0, 16 * kMiB, 16 * kMiB, 0, kDrvError},
        MapCase{"other_device", 0, 2 * kMiB, 2 * kMiB, 1, kDrvError},
        MapCase{"larger_than_handle", 0, 4 * kMiB, 2 * kMiB, 0, kMemAlloc},
        MapCase{"larger_than_handle_at_end", 8 * kMiB, 8 * kMiB, 6 * kMiB, 0, kMemAlloc}),
    [](const ::testing::TestParamInfo<MapCase>& info) { return std::string(info.param.name); });

TEST_F(AddressSpaceTest, MapOutsideAnyReservationFails) {
  auto p = phys(0, 2 * kMiB);
  std::vector<uint8_t> heap(4 * kMiB);
  uint64_t aligned_heap = (addr(heap.data()) + kChunk - 1) / kChunk * kChunk;
  EXPECT_EQ(as_->map(aligned_heap, 2 * kMiB, 1, p, false).code(), kDrvError);
  // Inside the device window but not reserved.
  uint64_t base = reserve(2 * kMiB);
  ASSERT_TRUE(as_->release(base).ok());
  EXPECT_EQ(as_->map(base, 2 * kMiB, 1, p, false).code(), kDrvError);
  // A malloc region is not a reservation.
  auto m = testing::add_device_block(*as_, 2 * kMiB, 2 * kMiB, 2 * kMiB, 0, phys(0, 2 * kMiB));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(as_->map(*m, 2 * kMiB, 1, p, false).code(), kDrvError);
  EXPECT_EQ(as_->mapping_count(), 0u);
}

TEST_F(AddressSpaceTest, OneHandleAtSeveralAddresses) {
  uint64_t base = reserve(8 * kMiB);
  auto p = phys(0, 2 * kMiB);
  ASSERT_TRUE(as_->map(base, 2 * kMiB, 5, p, false).ok());
  ASSERT_TRUE(as_->map(base + 4 * kMiB, 2 * kMiB, 5, p, false).ok());
  EXPECT_EQ(as_->mapping_count(), 2u);
  EXPECT_EQ(*as_->mapping_handle(base), 5u);
  EXPECT_EQ(*as_->mapping_handle(base + 4 * kMiB), 5u);
}

TEST_F(AddressSpaceTest, UnmapNeedsTheExactStart) {
  uint64_t base = reserve(8 * kMiB);
  map_new(base, 4 * kMiB, 0, 11);
  EXPECT_EQ(as_->unmap(base + 2 * kMiB).status().code(), kDrvError);   // interior
  EXPECT_EQ(as_->unmap(base + 4 * kMiB).status().code(), kDrvError);   // never mapped
  std::vector<uint8_t> heap(16);
  EXPECT_EQ(as_->unmap(addr(heap.data())).status().code(), kDrvError);  // random pointer
  EXPECT_EQ(as_->mapping_count(), 1u);
  auto m = as_->unmap(base);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->va, base);
  EXPECT_EQ(m->size, 4 * kMiB);
  EXPECT_EQ(m->handle, 11u);
  EXPECT_EQ(as_->mapping_count(), 0u);
  EXPECT_EQ(as_->unmap(base).status().code(), kDrvError);  // already unmapped
  // The range can be mapped again.
  map_new(base, 8 * kMiB, 0, 12);
  EXPECT_EQ(*as_->mapping_handle(base), 12u);
}

// ---------------------------------------------------------------------------------------------
// mapping_handle (behavior.md section 6)

TEST_F(AddressSpaceTest, MappingHandleCodes) {
  uint64_t base = reserve(8 * kMiB);
  uint64_t empty = reserve(4 * kMiB);
  map_new(base, 4 * kMiB, 0, 0xabc);
  auto exact = as_->mapping_handle(base);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(*exact, 0xabcu);
  EXPECT_EQ(as_->mapping_handle(base + 2 * kMiB).status().code(), kDrvError);   // interior
  EXPECT_EQ(as_->mapping_handle(base + 4096).status().code(), kDrvError);       // interior
  EXPECT_EQ(as_->mapping_handle(empty).status().code(), kInvalidHandle);        // never mapped
  EXPECT_EQ(as_->mapping_handle(base + 6 * kMiB).status().code(), kInvalidHandle);
  std::vector<uint8_t> heap(16);
  EXPECT_EQ(as_->mapping_handle(addr(heap.data())).status().code(), kDrvError);  // unknown
}

// ---------------------------------------------------------------------------------------------
// Access rights (behavior.md section 8, default mode)

TEST_F(AddressSpaceTest, MapGrantsTheOwnerReadWriteOnly) {
  uint64_t base = reserve(4 * kMiB);
  map_new(base, 4 * kMiB, 2);
  EXPECT_EQ(*as_->get_access(base, false, 2), 3);
  EXPECT_EQ(*as_->get_access(base, false, 0), 0);
  EXPECT_EQ(*as_->get_access(base, false, 3), 0);
  EXPECT_EQ(*as_->get_access(base, true, 0), 0);
  // Any address inside the mapping answers.
  EXPECT_EQ(*as_->get_access(base + 2 * kMiB + 12345, false, 2), 3);
}

TEST_F(AddressSpaceTest, NoAccessMappingGrantsNothing) {
  uint64_t base = reserve(2 * kMiB);
  auto p = phys(1, 2 * kMiB);
  ASSERT_TRUE(as_->map(base, 2 * kMiB, 1, p, true).ok());
  EXPECT_EQ(*as_->get_access(base, false, 1), 0);
  EXPECT_EQ(*as_->get_access(base, true, 0), 0);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 3}}, false).ok());
  EXPECT_EQ(*as_->get_access(base, false, 1), 3);
}

struct AccessCase {
  const char* name;
  bool host;
  int device;
  std::vector<int> sequence;  // flags set one after another; each is read back
};

class AddressSpaceAccess : public AddressSpaceTest,
                           public ::testing::WithParamInterface<AccessCase> {};

TEST_P(AddressSpaceAccess, SetThenGet) {
  const AccessCase& c = GetParam();
  uint64_t base = reserve(4 * kMiB);
  map_new(base, 4 * kMiB, 0);
  for (int flags : c.sequence) {
    Status st = as_->set_access(base, 4 * kMiB, {{c.host, c.device, flags}}, false);
    ASSERT_TRUE(st.ok()) << c.name << " flags " << flags << ": " << st.code() << " "
                         << st.message();
    auto got = as_->get_access(base, c.host, c.device);
    ASSERT_TRUE(got.ok()) << c.name;
    EXPECT_EQ(*got, flags) << c.name;
    EXPECT_EQ(*as_->get_access(base + 2 * kMiB, c.host, c.device), flags) << c.name;
  }
  // Other locations were not touched.
  if (c.host || c.device != 0) {
    EXPECT_EQ(*as_->get_access(base, false, 0), 3) << c.name;
  }
  if (!c.host) {
    EXPECT_EQ(*as_->get_access(base, true, 0), 0) << c.name;
  }
  if (c.host || c.device != 5) {
    EXPECT_EQ(*as_->get_access(base, false, 5), 0) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddressSpaceAccess,
    ::testing::Values(AccessCase{"host_rw", true, 0, {3}}, AccessCase{"host_read", true, 0, {1}},
                      AccessCase{"host_none", true, 0, {0}},
                      AccessCase{"host_grant_downgrade_revoke", true, 0, {3, 1, 0, 3}},
                      AccessCase{"peer_rw", false, 1, {3}}, AccessCase{"peer_read", false, 1, {1}},
                      AccessCase{"peer_none", false, 1, {0}},
                      AccessCase{"peer_grant_downgrade_revoke", false, 1, {3, 1, 0, 1, 3}},
                      AccessCase{"device_63", false, 63, {1, 3, 0}},
                      AccessCase{"owner_downgrade", false, 0, {1, 0, 3}}),
    [](const ::testing::TestParamInfo<AccessCase>& info) { return std::string(info.param.name); });

TEST_F(AddressSpaceTest, SetAccessSeveralLocationsAtOnce) {
  uint64_t base = reserve(2 * kMiB);
  map_new(base, 2 * kMiB, 0);
  ASSERT_TRUE(
      as_->set_access(base, 2 * kMiB, {{true, 0, 1}, {false, 1, 3}, {false, 2, 1}}, false).ok());
  EXPECT_EQ(*as_->get_access(base, true, 0), 1);
  EXPECT_EQ(*as_->get_access(base, false, 1), 3);
  EXPECT_EQ(*as_->get_access(base, false, 2), 1);
  EXPECT_EQ(*as_->get_access(base, false, 0), 3);
}

TEST_F(AddressSpaceTest, SetAccessNeedsExactlyOneMapping) {
  uint64_t base = reserve(16 * kMiB);
  map_new(base, 4 * kMiB, 0);
  map_new(base + 4 * kMiB, 4 * kMiB, 0);
  struct {
    uint64_t va, size;
  } bad[] = {{base, 2 * kMiB},           {base, 8 * kMiB},   {base + 2 * kMiB, 2 * kMiB},
             {base + 2 * kMiB, 4 * kMiB}, {base, 6 * kMiB},   {base + 8 * kMiB, 2 * kMiB},
             {base + 4096, 4 * kMiB}};
  for (const auto& b : bad) {
    Status st = as_->set_access(b.va, b.size, {{false, 1, 3}}, false);
    EXPECT_EQ(st.code(), kDrvError) << std::hex << b.va - base << " " << b.size;
  }
  EXPECT_EQ(*as_->get_access(base, false, 1), 0);
  EXPECT_EQ(*as_->get_access(base + 4 * kMiB, false, 1), 0);
  EXPECT_TRUE(as_->set_access(base + 4 * kMiB, 4 * kMiB, {{false, 1, 3}}, false).ok());
  EXPECT_EQ(*as_->get_access(base, false, 1), 0);
  EXPECT_EQ(*as_->get_access(base + 4 * kMiB, false, 1), 3);
}

TEST_F(AddressSpaceTest, GetAccessOutsideAMappingFails) {
  uint64_t base = reserve(8 * kMiB);
  map_new(base, 2 * kMiB, 0);
  EXPECT_EQ(as_->get_access(base + 4 * kMiB, false, 0).status().code(), kDrvError);
  EXPECT_EQ(as_->get_access(base + 2 * kMiB, true, 0).status().code(), kDrvError);
  std::vector<uint8_t> heap(16);
  EXPECT_EQ(as_->get_access(addr(heap.data()), false, 0).status().code(), kDrvError);
}

TEST_F(AddressSpaceTest, VendorQuirksKeepOwnerAndRejectChangesAllOrNothing) {
  uint64_t base = reserve(2 * kMiB);
  map_new(base, 2 * kMiB, 0);
  // The owner's access is left alone in vendor mode.
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 0, 1}}, true).ok());
  EXPECT_EQ(*as_->get_access(base, false, 0), 3);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 3}}, true).ok());
  EXPECT_EQ(*as_->get_access(base, false, 1), 3);
  // Same value again: no-op success.
  EXPECT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 3}}, true).ok());
  // A different value for a location already set fails, and the whole call changes nothing.
  Status st = as_->set_access(base, 2 * kMiB, {{false, 2, 3}, {false, 1, 1}}, true);
  EXPECT_EQ(st.code(), kDrvError) << st.message();
  EXPECT_EQ(*as_->get_access(base, false, 2), 0);
  EXPECT_EQ(*as_->get_access(base, false, 1), 3);
}

// ---------------------------------------------------------------------------------------------
// pointer_info (behavior.md section 9)

TEST_F(AddressSpaceTest, PointerInfoMappedDeviceMemory) {
  uint64_t base = reserve(8 * kMiB);
  map_new(base, 4 * kMiB, 3);
  for (uint64_t off : std::initializer_list<uint64_t>{0, 4096, 2 * kMiB + 7, 4 * kMiB - 1}) {
    auto info = as_->pointer_info(base + off, 4096);
    ASSERT_TRUE(info.ok()) << off << ": " << info.status().message();
    EXPECT_EQ(info->kind, PointerInfo::kDevice) << off;
    EXPECT_EQ(info->device, 3) << off;
    EXPECT_EQ(info->page_size, 2 * kMiB) << off;
  }
  // The reserved but unmapped rest of the reservation.
  EXPECT_EQ(as_->pointer_info(base + 4 * kMiB, 4096).status().code(), kInvalidHandle);
  EXPECT_EQ(as_->pointer_info(base + 8 * kMiB - 1, 4096).status().code(), kInvalidHandle);
}

TEST_F(AddressSpaceTest, PointerInfoMappedHostMemory) {
  uint64_t base = reserve(2 * kMiB);
  auto p = phys(0, 2 * kMiB, Side::kHost);
  ASSERT_TRUE(as_->map(base, 2 * kMiB, 1, p, false).ok());
  auto info = as_->pointer_info(base + 100, 4096);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->kind, PointerInfo::kHost);
  EXPECT_EQ(info->device, 0);
  EXPECT_EQ(info->page_size, 4096u);
}

TEST_F(AddressSpaceTest, PointerInfoReservedNeverMapped) {
  uint64_t base = reserve(512);
  EXPECT_EQ(as_->pointer_info(base, 4096).status().code(), kInvalidHandle);
  EXPECT_EQ(as_->pointer_info(base + 1 * kMiB, 4096).status().code(), kInvalidHandle);
}

TEST_F(AddressSpaceTest, PointerInfoPlainHeapMemory) {
  std::vector<uint8_t> heap(100);
  int stack_var = 0;
  for (uint64_t p : {addr(heap.data()), addr(&stack_var)}) {
    auto info = as_->pointer_info(p, 4096);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_EQ(info->kind, PointerInfo::kUnregistered);
    EXPECT_EQ(info->page_size, 4096u);
  }
}

TEST_F(AddressSpaceTest, PointerInfoUnallocatedInsideWindow) {
  uint64_t base = reserve(4 * kMiB);
  ASSERT_TRUE(as_->release(base).ok());
  EXPECT_EQ(as_->pointer_info(base, 4096).status().code(), kDrvError);
  EXPECT_EQ(as_->pointer_info(base + 1 * kMiB, 4096).status().code(), kDrvError);
  uint64_t live = reserve(2 * kMiB);
  EXPECT_EQ(as_->pointer_info(live + 100 * kGiB, 4096).status().code(), kDrvError);
}

TEST_F(AddressSpaceTest, PointerInfoMallocAndHostPinned) {
  auto d = testing::add_device_block(*as_, 4 * kMiB, 4 * kMiB - 64, 2 * kMiB, 5, phys(5, 4 * kMiB));
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto info = as_->pointer_info(*d + 3 * kMiB, 4096);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, PointerInfo::kDevice);
  EXPECT_EQ(info->device, 5);
  EXPECT_EQ(info->page_size, 2 * kMiB);

  auto hp = phys(0, 64 * 1024, Side::kHost);
  auto h = testing::add_host_block(*as_, 64 * 1024, 64 * 1024, hp);
  ASSERT_TRUE(h.ok()) << h.status().message();
  info = as_->pointer_info(*h + 10, 4096);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, PointerInfo::kHost);
  EXPECT_EQ(info->page_size, 4096u);
  // Host pinned memory is CPU memory: bytes written by the CPU are in the physical allocation.
  std::memset(ptr(*h), 0x5c, 64 * 1024);
  uint8_t back[16] = {};
  ASSERT_EQ(testing::bytes_at(*device_, *h).read(64 * 1024 - 16, back, 16), 0);
  for (uint8_t b : back) EXPECT_EQ(b, 0x5c);
  EXPECT_EQ(as_->region_count(RegionKind::kDeviceMalloc), 1u);
  EXPECT_EQ(as_->region_count(RegionKind::kHostPinned), 1u);
  EXPECT_EQ(as_->mapping_count(), 0u);  // only VMM mappings are counted
}

TEST_F(AddressSpaceTest, AddressRangeOfAMapping) {
  uint64_t base = reserve(16 * kMiB);
  map_new(base + 4 * kMiB, 6 * kMiB, 0);
  auto r = as_->address_range(base + 5 * kMiB);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->base, base + 4 * kMiB);
  EXPECT_EQ(r->size, 6 * kMiB);
  EXPECT_EQ(as_->address_range(base).status().code(), kParamInvalid);  // reserved, unmapped
  std::vector<uint8_t> heap(16);
  EXPECT_EQ(as_->address_range(addr(heap.data())).status().code(), kParamInvalid);
}

// ---------------------------------------------------------------------------------------------
// check_device_access (the core's records) and the device MMU's translation

TEST_F(AddressSpaceTest, TranslateAcrossSeveralMappings) {
  uint64_t base = reserve(16 * kMiB);
  auto a = map_new(base, 4 * kMiB, 0);
  auto b = map_new(base + 4 * kMiB, 2 * kMiB, 0);
  auto c = map_new(base + 6 * kMiB, 4 * kMiB, 0);
  Status st = as_->check_device_access(base + 1 * kMiB, 8 * kMiB, true, Accessor{0, 0});
  ASSERT_TRUE(st.ok()) << st.code() << " " << st.message();
  const std::vector<Piece> t = walk(base + 1 * kMiB, 8 * kMiB);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].memory, a->device_memory.id());
  EXPECT_EQ(t[0].offset, 1 * kMiB);
  EXPECT_EQ(t[0].length, 3 * kMiB);
  EXPECT_EQ(t[1].memory, b->device_memory.id());
  EXPECT_EQ(t[1].offset, 0u);
  EXPECT_EQ(t[1].length, 2 * kMiB);
  EXPECT_EQ(t[2].memory, c->device_memory.id());
  EXPECT_EQ(t[2].offset, 0u);
  EXPECT_EQ(t[2].length, 3 * kMiB);
  uint64_t total = 0;
  for (const Piece& piece : t) total += piece.length;
  EXPECT_EQ(total, 8 * kMiB);
}

struct TranslateCase {
  const char* name;
  uint64_t offset, n;
  size_t segments;
  uint64_t first_offset, first_length;
};

class AddressSpaceTranslate : public AddressSpaceTest,
                              public ::testing::WithParamInterface<TranslateCase> {};

// Mappings: [0, 4 MiB) and [4 MiB, 6 MiB) of a 16 MiB reservation.
TEST_P(AddressSpaceTranslate, Segments) {
  const TranslateCase& c = GetParam();
  uint64_t base = reserve(16 * kMiB);
  map_new(base, 4 * kMiB, 1);
  map_new(base + 4 * kMiB, 2 * kMiB, 1);
  Status st = as_->check_device_access(base + c.offset, c.n, false, Accessor{1, 0});
  ASSERT_TRUE(st.ok()) << c.name << ": " << st.message();
  const std::vector<Piece> t = walk(base + c.offset, c.n);
  ASSERT_EQ(t.size(), c.segments) << c.name;
  EXPECT_EQ(t[0].offset, c.first_offset) << c.name;
  EXPECT_EQ(t[0].length, c.first_length) << c.name;
  uint64_t total = 0;
  for (const Piece& piece : t) total += piece.length;
  EXPECT_EQ(total, c.n) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddressSpaceTranslate,
    ::testing::Values(TranslateCase{"one_byte", 0, 1, 1, 0, 1},
                      TranslateCase{"inside_first", 4096, 8192, 1, 4096, 8192},
                      TranslateCase{"whole_first", 0, 4 * kMiB, 1, 0, 4 * kMiB},
                      TranslateCase{"last_byte_of_first", 4 * kMiB - 1, 1, 1, 4 * kMiB - 1, 1},
                      TranslateCase{"straddles", 4 * kMiB - 10, 20, 2, 4 * kMiB - 10, 10},
                      TranslateCase{"both_whole", 0, 6 * kMiB, 2, 0, 4 * kMiB},
                      TranslateCase{"second_only", 5 * kMiB, 1 * kMiB, 1, 1 * kMiB, 1 * kMiB}),
    [](const ::testing::TestParamInfo<TranslateCase>& info) { return std::string(info.param.name); });

TEST_F(AddressSpaceTest, TranslateGapFails) {
  uint64_t base = reserve(16 * kMiB);
  map_new(base, 2 * kMiB, 0);
  map_new(base + 4 * kMiB, 2 * kMiB, 0);
  EXPECT_EQ(as_->check_device_access(base, 6 * kMiB, false, Accessor{0, 0}).code(), kDrvError);
  EXPECT_EQ(as_->check_device_access(base + 2 * kMiB - 1, 2, false, Accessor{0, 0}).code(), kDrvError);
  EXPECT_EQ(as_->check_device_access(base + 3 * kMiB, 4, false, Accessor{0, 0}).code(), kDrvError);
  EXPECT_EQ(as_->check_device_access(base + 5 * kMiB, 2 * kMiB, false, Accessor{0, 0}).code(), kDrvError);
  // Past the end of the reservation.
  EXPECT_EQ(as_->check_device_access(base, 17 * kMiB, false, Accessor{0, 0}).code(), kDrvError);
  // The mapped pieces on their own are fine.
  EXPECT_TRUE(as_->check_device_access(base, 2 * kMiB, false, Accessor{0, 0}).ok());
  EXPECT_TRUE(as_->check_device_access(base + 4 * kMiB, 2 * kMiB, false, Accessor{0, 0}).ok());
}

TEST_F(AddressSpaceTest, TranslateNeedsAnExecutingDevice) {
  uint64_t base = reserve(2 * kMiB);
  map_new(base, 2 * kMiB, 0);
  EXPECT_EQ(as_->check_device_access(base, 16, false, Accessor{-1, 0}).code(), kContextNull);
  EXPECT_EQ(as_->check_device_access(base, 16, true, Accessor{-1, 0}).code(), kContextNull);
}

TEST_F(AddressSpaceTest, TranslateChecksTheExecutingDevicesRights) {
  uint64_t base = reserve(2 * kMiB);
  map_new(base, 2 * kMiB, 0);
  EXPECT_EQ(as_->check_device_access(base, 16, false, Accessor{1, 0}).code(), kDrvError);
  EXPECT_EQ(as_->check_device_access(base, 16, true, Accessor{1, 0}).code(), kDrvError);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 1}}, false).ok());
  EXPECT_TRUE(as_->check_device_access(base, 16, false, Accessor{1, 0}).ok());
  EXPECT_EQ(as_->check_device_access(base, 16, true, Accessor{1, 0}).code(), kDrvError);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 3}}, false).ok());
  EXPECT_TRUE(as_->check_device_access(base, 16, true, Accessor{1, 0}).ok());
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{false, 1, 0}}, false).ok());
  EXPECT_EQ(as_->check_device_access(base, 16, false, Accessor{1, 0}).code(), kDrvError);
  // The owner keeps its rights throughout.
  EXPECT_TRUE(as_->check_device_access(base, 16, true, Accessor{0, 0}).ok());
}

TEST_F(AddressSpaceTest, TranslatePlainAndUnallocatedMemory) {
  std::vector<uint8_t> heap(64);
  ASSERT_TRUE(as_->check_device_access(addr(heap.data()), 64, true, Accessor{0, 0}).ok());
  EXPECT_TRUE(walk(addr(heap.data()), 64).empty());  // the CPU's: no piece of the device's
  uint64_t base = reserve(2 * kMiB);
  ASSERT_TRUE(as_->release(base).ok());
  EXPECT_EQ(as_->check_device_access(base, 16, false, Accessor{0, 0}).code(), kDrvError);
}

// ---------------------------------------------------------------------------------------------
// What the CPU may touch (emulation.md section 4)

TEST_F(AddressSpaceTest, CpuDereferenceOfDeviceMemoryFaults) {
  uint64_t base = reserve(2 * kMiB);
  auto p = map_new(base, 2 * kMiB, 0);
  ASSERT_EQ(testing::bytes_of(*p).fill(0, 0x11, 2 * kMiB), 0);
  volatile uint8_t* cpu = ptr(base);
  EXPECT_EXIT(
      {
        reset_fault_signals_for_child();
        uint8_t v = cpu[100];
        _exit(v == 0x11 ? 0 : 1);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(
      {
        reset_fault_signals_for_child();
        cpu[100] = 1;
        _exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(AddressSpaceTest, HostReadWriteAccessShowsThePhysicalBytes) {
  uint64_t base = reserve(4 * kMiB);
  auto p = map_new(base, 4 * kMiB, 0);
  std::vector<uint8_t> pattern(8192);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(testing::bytes_of(*p).write(0, pattern.data(), pattern.size()), 0);
  ASSERT_EQ(testing::bytes_of(*p).write(3 * kMiB, pattern.data(), pattern.size()), 0);
  ASSERT_TRUE(as_->set_access(base, 4 * kMiB, {{true, 0, 3}}, false).ok());
  EXPECT_EQ(std::memcmp(ptr(base), pattern.data(), pattern.size()), 0);
  EXPECT_EQ(std::memcmp(ptr(base + 3 * kMiB), pattern.data(), pattern.size()), 0);
  EXPECT_EQ(ptr(base)[2 * kMiB], 0);  // untouched bytes read as zero
  // CPU writes land in the physical memory.
  std::memset(ptr(base + 1 * kMiB), 0xa5, 4096);
  uint8_t back[4096];
  ASSERT_EQ(testing::bytes_of(*p).read(1 * kMiB, back, sizeof back), 0);
  for (uint8_t b : back) ASSERT_EQ(b, 0xa5);
  // Writes through the physical memory after the grant are visible too (a shared mapping).
  uint8_t x = 0x3c;
  ASSERT_EQ(testing::bytes_of(*p).write(4 * kMiB - 1, &x, 1), 0);
  EXPECT_EQ(ptr(base)[4 * kMiB - 1], 0x3c);
}

TEST_F(AddressSpaceTest, HostReadAccessAllowsReadsOnly) {
  uint64_t base = reserve(2 * kMiB);
  auto p = map_new(base, 2 * kMiB, 0);
  uint8_t x = 0x42;
  ASSERT_EQ(testing::bytes_of(*p).write(12345, &x, 1), 0);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{true, 0, 1}}, false).ok());
  EXPECT_EQ(ptr(base)[12345], 0x42);
  volatile uint8_t* cpu = ptr(base);
  EXPECT_EXIT(
      {
        reset_fault_signals_for_child();
        cpu[0] = 1;
        _exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(AddressSpaceTest, RevokingHostAccessFaultsAgain) {
  uint64_t base = reserve(2 * kMiB);
  auto p = map_new(base, 2 * kMiB, 0);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{true, 0, 3}}, false).ok());
  ptr(base)[0] = 9;
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{true, 0, 0}}, false).ok());
  uint8_t back = 0;
  ASSERT_EQ(testing::bytes_of(*p).read(0, &back, 1), 0);
  EXPECT_EQ(back, 9);  // the bytes stay in the physical memory
  volatile uint8_t* cpu = ptr(base);
  EXPECT_EXIT(
      {
        reset_fault_signals_for_child();
        uint8_t v = cpu[0];
        _exit(v);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(AddressSpaceTest, UnmapRestoresThePlaceholder) {
  uint64_t base = reserve(2 * kMiB);
  auto p = map_new(base, 2 * kMiB, 0);
  ASSERT_TRUE(as_->set_access(base, 2 * kMiB, {{true, 0, 3}}, false).ok());
  ptr(base)[0] = 1;
  ASSERT_TRUE(as_->unmap(base).ok());
  volatile uint8_t* cpu = ptr(base);
  EXPECT_EXIT(
      {
        reset_fault_signals_for_child();
        uint8_t v = cpu[0];
        _exit(v);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(AddressSpaceTest, HostPhysicalMemoryMappedIsCpuAccessible) {
  uint64_t base = reserve(2 * kMiB);
  auto p = phys(0, 2 * kMiB, Side::kHost);
  ASSERT_TRUE(as_->map(base, 2 * kMiB, 1, p, false).ok());
  EXPECT_EQ(*as_->get_access(base, true, 0), 3);
  ptr(base)[777] = 0x77;
  uint8_t back = 0;
  ASSERT_EQ(testing::bytes_of(*p).read(777, &back, 1), 0);
  EXPECT_EQ(back, 0x77);
}

TEST_F(AddressSpaceTest, HostAccessOpenMapsDeviceMemoryForTheCpu) {
  attach_device(true);
  uint64_t base = reserve(2 * kMiB);
  auto p = map_new(base, 2 * kMiB, 0);
  uint8_t x = 0xee;
  ASSERT_EQ(testing::bytes_of(*p).write(2 * kMiB - 1, &x, 1), 0);
  EXPECT_EQ(ptr(base)[2 * kMiB - 1], 0xee);
  ptr(base)[0] = 0x12;
  uint8_t back = 0;
  ASSERT_EQ(testing::bytes_of(*p).read(0, &back, 1), 0);
  EXPECT_EQ(back, 0x12);
}

}  // namespace
}  // namespace aclvmm
