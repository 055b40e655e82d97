// Conformance of CopyEngine's synchronous form (docs/device-interface.md §9, C19-C21): copies and
// fills name virtual addresses and the backend translates them when they execute (D4), across
// mapping boundaries, with the executor's rights; bad host pointers are answers, never crashes.
// The queued half of C19 (a copy queued before an unmap fails at execution) is in queue_test.cpp
// with C22-C26.
#include <cstring>
#include <vector>

#include "conformance/harness.h"
#include "unit/testing/endpoints.h"

namespace aclvmm::conformance {
namespace {

using dev::Access;
using dev::AccessGrant;
using dev::Block;
using dev::BlockKind;
using dev::BlockRequest;
using dev::Condition;
using dev::CopyEndpoint;
using dev::CopyOutcome;
using dev::CopyRequest;
using dev::EndpointKind;
using dev::Executor;
using dev::FillRequest;
using dev::InitialAccess;
using dev::kGiB;
using dev::kMiB;
using dev::Location;
using dev::PhysicalId;
using Side = CopyOutcome::Side;

constexpr uint64_t kHalf = 36 * kMiB;  // each of the two objects behind the device range

using testing::host;
using testing::mapped;
Executor on(dev::DeviceIndex d, uint64_t peers = 0) { return Executor{d, peers}; }

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 31 + seed + i / 4096);
  return p;
}

class CopyConformance : public BackendTest {
 protected:
  BackendSetup setup() const override { return BackendSetup{2, 256 * kMiB}; }

  void SetUp() override {
    BackendTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // Device 0's range: two objects mapped back to back, so copies cross an entry boundary.
    dev_va_ = harness().reserve_va(kGiB);
    ASSERT_NE(dev_va_, 0u);
    for (int i = 0; i < 2; ++i) {
      dev_mem_[i] = create(Location::device(0), kHalf);
      ASSERT_TRUE(be().mmu()
                      .map(dev_va_ + i * kHalf, kHalf, dev_mem_[i], 0,
                           InitialAccess::kOwnerReadWrite)
                      .ok());
    }
    host_va_ = harness().reserve_va(kGiB);
    ASSERT_NE(host_va_, 0u);
    host_mem_ = create(Location::host(), 2 * kHalf);
    ASSERT_TRUE(
        be().mmu().map(host_va_, 2 * kHalf, host_mem_, 0, InitialAccess::kOwnerReadWrite).ok());
  }
  void TearDown() override {
    if (backend_) {
      for (int i = 0; i < 2; ++i) (void)be().mmu().unmap(dev_va_ + i * kHalf, kHalf);
      (void)be().mmu().unmap(host_va_, 2 * kHalf);
      for (PhysicalId id : {dev_mem_[0], dev_mem_[1], host_mem_}) {
        if (id) (void)be().physical().release(id);
      }
    }
    BackendTest::TearDown();
  }

  CopyOutcome copy(CopyEndpoint dst, CopyEndpoint src, uint64_t size, Executor who = on(0)) {
    return be().copy_engine().copy(CopyRequest{dst, src, size, who});
  }
  CopyOutcome fill(CopyEndpoint dst, uint8_t value, uint64_t size, Executor who = on(0)) {
    return be().copy_engine().fill(FillRequest{dst, value, size, who});
  }
  // The device range's bytes [offset, +n), as the physical objects hold them.
  std::vector<uint8_t> device_bytes(uint64_t offset, uint64_t n) {
    std::vector<uint8_t> out(n);
    for (uint64_t done = 0; done < n;) {
      const uint64_t at = offset + done;
      const int i = at < kHalf ? 0 : 1;
      const uint64_t len = std::min(n - done, (i + 1) * kHalf - at);
      EXPECT_TRUE(harness().read_physical(dev_mem_[i], at - i * kHalf, out.data() + done, len).ok());
      done += len;
    }
    return out;
  }

  // The cases of the engine's own range and rights checks (D4): a backend whose engine checks
  // neither (hal: drvMemcpy takes no executing device and names no side, hal.md §3.11) has the
  // core check them first (memops::checked_first).
  bool engine_checks() { return be().capabilities().copies_check_access; }

  uint64_t dev_va_ = 0, host_va_ = 0;
  PhysicalId dev_mem_[2], host_mem_;
};

// C19: host -> device -> host mapping -> host, across the boundary of the two device objects, at
// unaligned offsets, from 1 B to 64 MiB; the bytes land where the page table says.
TEST_P(CopyConformance, C19_CopiesGoWhereThePageTableSaysAcrossEntries) {
  for (uint64_t size : {uint64_t{1}, uint64_t{4097}, 3 * kMiB + 5, 64 * kMiB}) {
    SCOPED_TRACE(size);
    const uint64_t offset = kHalf - size / 2 - 3;  // the copy straddles the two objects
    const std::vector<uint8_t> bytes = pattern(size, static_cast<uint8_t>(size));
    CopyOutcome out = copy(mapped(dev_va_ + offset), host(bytes.data()), size);
    ASSERT_TRUE(out.result.ok()) << out.result.raw();
    EXPECT_TRUE(device_bytes(offset, size) == bytes);
    // Device memory to host memory behind the MMU, at another unaligned offset.
    out = copy(mapped(host_va_ + 4099), mapped(dev_va_ + offset), size);
    ASSERT_TRUE(out.result.ok()) << out.result.raw();
    std::vector<uint8_t> back(size);
    out = copy(host(back.data()), mapped(host_va_ + 4099), size);
    ASSERT_TRUE(out.result.ok()) << out.result.raw();
    EXPECT_TRUE(back == bytes);
    // Host memory to host memory.
    std::vector<uint8_t> again(size);
    ASSERT_TRUE(copy(host(again.data()), host(back.data()), size).result.ok());
    EXPECT_TRUE(again == bytes);
  }
}

// C19: a range that is not fully mapped fails at its first unmapped address, naming the side;
// a mapping removed before the copy executes is what the copy sees.
TEST_P(CopyConformance, C19_UnmappedRangesFailAtTheirFirstUnmappedAddress) {
  if (!engine_checks()) {
    GTEST_SKIP() << "capability copies_check_access is false: the core checks ranges and rights";
  }
  std::vector<uint8_t> buffer(8 * kMiB, 0x11);
  // Runs past the end of the device range.
  CopyOutcome out = copy(host(buffer.data()), mapped(dev_va_ + 2 * kHalf - kMiB), 2 * kMiB);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kSource);
  EXPECT_EQ(out.failed_address, dev_va_ + 2 * kHalf);
  out = copy(mapped(dev_va_ + 2 * kHalf - 4096), host(buffer.data()), 8192);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, dev_va_ + 2 * kHalf);
  out = fill(mapped(dev_va_ + 2 * kHalf - 1), 0x5a, 2);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_address, dev_va_ + 2 * kHalf);
  // The second object is unmapped: the copy that crossed into it now fails there.
  ASSERT_TRUE(be().mmu().unmap(dev_va_ + kHalf, kHalf).ok());
  out = copy(mapped(dev_va_ + kHalf - 100), host(buffer.data()), 200);
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_side, Side::kDestination);
  EXPECT_EQ(out.failed_address, dev_va_ + kHalf);
  ASSERT_TRUE(be().mmu().map(dev_va_ + kHalf, kHalf, dev_mem_[1], 0,
                             InitialAccess::kOwnerReadWrite).ok());
}

// C19: the executor's rights at execution, as the core checked them before step 3. Table-driven.
TEST_P(CopyConformance, C19_TheExecutorNeedsItsRightsOnEachSide) {
  if (!engine_checks()) {
    GTEST_SKIP() << "capability copies_check_access is false: the core checks ranges and rights";
  }
  // Device 0's range readable only from device 1; host mapping read-only for the HOST.
  const AccessGrant read_only[] = {{Location::device(1), Access::kRead}};
  size_t applied = 0;
  ASSERT_TRUE(be().mmu().set_access(dev_va_, kHalf, read_only, 1, &applied).ok());
  const AccessGrant host_read[] = {{Location::host(), Access::kRead}};
  ASSERT_TRUE(be().mmu().set_access(host_va_, 2 * kHalf, host_read, 1, &applied).ok());
  std::vector<uint8_t> buffer(4096, 7);
  const CopyEndpoint buf = host(buffer.data());
  struct Case {
    const char* what;
    CopyEndpoint dst, src;
    Executor who;
    Condition expected;
    Side side;
    uint64_t address;
  };
  const Case cases[] = {
      {"device 1 reads where it may", buf, mapped(dev_va_ + 8), on(1), Condition::kOk, Side::kNone,
       0},
      {"device 1 may not write", mapped(dev_va_ + 8), buf, on(1), Condition::kNotPermitted,
       Side::kDestination, dev_va_ + 8},
      {"peer access does not open a mapping", mapped(dev_va_ + 8), buf, on(1, 1),
       Condition::kNotPermitted, Side::kDestination, dev_va_ + 8},
      {"device 0 writes its own memory", mapped(dev_va_ + 8), buf, on(0), Condition::kOk,
       Side::kNone, 0},
      {"no current device on device memory", buf, mapped(dev_va_ + 8), on(dev::kNoDevice),
       Condition::kNotPermitted, Side::kSource, dev_va_ + 8},
      {"host memory follows the HOST's read right", buf, mapped(host_va_ + 5), on(1),
       Condition::kOk, Side::kNone, 0},
      {"and refuses a write from any device", mapped(host_va_ + 5), buf, on(0),
       Condition::kNotPermitted, Side::kDestination, host_va_ + 5},
      {"the second side is checked too", mapped(host_va_), mapped(dev_va_ + 8), on(1),
       Condition::kNotPermitted, Side::kDestination, host_va_},
      {"a managed endpoint outside every managed range", buf,
       CopyEndpoint{dev_va_, EndpointKind::kManaged}, on(0),
       be().capabilities().managed_memory ? Condition::kBadAddress : Condition::kNotSupported,
       Side::kSource, dev_va_},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    CopyOutcome out = copy(c.dst, c.src, 64, c.who);
    EXPECT_EQ(out.result.condition(), c.expected);
    EXPECT_EQ(out.failed_side, c.side);
    EXPECT_EQ(out.failed_address, c.address);
  }
  EXPECT_EQ(copy(buf, buf, 0).result.condition(), Condition::kInvalidArgument);
  EXPECT_EQ(fill(mapped(host_va_), 1, 64, on(0)).result.condition(), Condition::kNotPermitted);
}

// C19: a device block is reachable from a device with peer access to its owner.
TEST_P(CopyConformance, C19_PeerAccessReachesADeviceBlock) {
  if (!engine_checks()) {
    GTEST_SKIP() << "capability copies_check_access is false: the core checks ranges and rights";
  }
  BlockRequest request;
  request.kind = BlockKind::kDevice;
  request.device = 0;
  request.size = 8192;
  Block block;
  ASSERT_TRUE(be().blocks().allocate(request, &block).ok());
  const uint64_t va = block.address;
  std::vector<uint8_t> bytes = pattern(8192, 3), back(8192);
  EXPECT_EQ(copy(mapped(va), host(bytes.data()), 8192, on(1)).result.condition(),
            Condition::kNotPermitted);
  ASSERT_TRUE(copy(mapped(va), host(bytes.data()), 8192, on(1, uint64_t{1} << 0)).result.ok());
  ASSERT_TRUE(copy(host(back.data()), mapped(va + 1), 8191, on(0)).result.ok());
  EXPECT_EQ(0, std::memcmp(back.data(), bytes.data() + 1, 8191));
  // The block ends inside its 2 MiB word: past it nothing is mapped.
  CopyOutcome out = copy(host(back.data()), mapped(va + 4096), 8192, on(0));
  EXPECT_EQ(out.result.condition(), Condition::kBadAddress);
  EXPECT_EQ(out.failed_address, va + 8192);
  ASSERT_TRUE(be().blocks().free(va).ok());
}

// C20: fills with 0 and 0x5a, across the boundary, unaligned, in device and host memory.
TEST_P(CopyConformance, C20_FillsWriteTheValueAndNothingAround) {
  const std::vector<uint8_t> bytes = pattern(6 * kMiB, 9);
  const uint64_t offset = kHalf - 3 * kMiB;
  ASSERT_TRUE(copy(mapped(dev_va_ + offset), host(bytes.data()), bytes.size()).result.ok());
  for (uint8_t value : {uint8_t{0x5a}, uint8_t{0}}) {
    SCOPED_TRACE(static_cast<int>(value));
    const uint64_t size = 2 * kMiB + 4097;
    ASSERT_TRUE(fill(mapped(dev_va_ + offset + 1001), value, size).result.ok());
    std::vector<uint8_t> expected = bytes;
    std::memset(expected.data() + 1001, value, size);
    EXPECT_TRUE(device_bytes(offset, bytes.size()) == expected);
    // The fill across the boundary: the last 1 MiB of object 0 and the first of object 1.
    ASSERT_TRUE(fill(mapped(dev_va_ + kHalf - kMiB), value, 2 * kMiB).result.ok());
    std::memset(expected.data() + 2 * kMiB, value, 2 * kMiB);
    EXPECT_TRUE(device_bytes(offset, bytes.size()) == expected);
    std::vector<uint8_t> plain(10000, 1);
    ASSERT_TRUE(fill(host(plain.data() + 1), value, 9998).result.ok());
    EXPECT_EQ(plain[0], 1);
    EXPECT_EQ(plain[9999], 1);
    EXPECT_EQ(plain[5000], value);
    ASSERT_TRUE(copy(mapped(dev_va_ + offset), host(bytes.data()), bytes.size()).result.ok());
  }
}

// C21: a host pointer the CPU cannot reach is kBadAddress naming its side and first address,
// never a crash: the null page, and device memory named as host memory.
TEST_P(CopyConformance, C21_BadHostPointersAreAnswersNotCrashes) {
  std::vector<uint8_t> buffer(4096, 1);
  struct Case {
    const char* what;
    bool fill;
    CopyEndpoint dst, src;
    Side side;
    uint64_t address;
    // Device memory named as host memory: a driver that takes addresses only (hal.md §3.11: the
    // kind is not passed) cannot tell; the core never names it so.
    bool device_as_host = false;
  };
  const CopyEndpoint null_host{0, EndpointKind::kHostMemory};
  const CopyEndpoint device_as_host{dev_va_ + 64, EndpointKind::kHostMemory};
  const Case cases[] = {
      {"null source into device memory", false, mapped(dev_va_), null_host, Side::kSource, 0},
      {"null source into host memory", false, host(buffer.data()), null_host, Side::kSource, 0},
      {"device memory read into a null destination", false, null_host, mapped(dev_va_),
       Side::kDestination, 0},
      {"device memory as a host destination", false, device_as_host, host(buffer.data()),
       Side::kDestination, dev_va_ + 64, true},
      {"device memory as a host source", false, mapped(host_va_), device_as_host, Side::kSource,
       dev_va_ + 64, true},
      {"fill of a null pointer", true, null_host, null_host, Side::kDestination, 0},
      {"fill of device memory as host memory", true, device_as_host, null_host, Side::kDestination,
       dev_va_ + 64, true},
  };
  for (const Case& c : cases) {
    if (c.device_as_host && !engine_checks()) continue;
    SCOPED_TRACE(c.what);
    CopyOutcome out = c.fill ? fill(c.dst, 0x5a, 4096) : copy(c.dst, c.src, 4096);
    EXPECT_EQ(out.result.condition(), harness().traits().copy_fault);
    if (!engine_checks()) continue;  // one code for the whole request: no side, no address
    EXPECT_EQ(out.failed_side, c.side);
    EXPECT_EQ(out.failed_address, c.address);
  }
  // The device memory named as host memory was not touched.
  EXPECT_TRUE(device_bytes(64, 4096) == std::vector<uint8_t>(4096, 0));
}

ACLVMM_CONFORMANCE_SUITE(CopyConformance);

}  // namespace
}  // namespace aclvmm::conformance
