// Conformance of UnifiedMemory (docs/device-interface.md §9, C37-C43): managed ranges, the
// residency policy a device access applies through the copy engine's kManaged endpoints, the
// CPU's faults (the harness's cpu_access), advice, eviction, attributes and synchronous prefetch;
// and C27, the queued form (CommandKind::kPrefetch) in order with a queue's copies. Counts are
// read from the backend's "managed" statistics group, events from the listener.
// A backend without the unit (capability managed_memory false) skips every case.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::CopyEndpoint;
using dev::CopyRequest;
using dev::EndpointKind;
using dev::Executor;
using dev::kMiB;
using dev::Location;
using dev::ManagedAdvice;
using dev::ManagedAttribute;

constexpr uint64_t kPage = 2 * kMiB;

class Counters final : public dev::StatisticsVisitor {
 public:
  void counter(const char* group, const char* name, uint64_t value) override {
    if (std::string(group) == "managed") values[name] = value;
  }
  void flag(const char* group, const char* name, bool value) override {
    if (std::string(group) == "managed") values[name] = value ? 1 : 0;
  }
  std::map<std::string, uint64_t> values;
};

class UnifiedConformance : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    if (!be().capabilities().managed_memory) GTEST_SKIP() << "capability managed_memory is false";
  }
  void TearDown() override {
    for (uint64_t base : live_) EXPECT_TRUE(um().free(base, dev::FreeMode::kNormal).ok());
    BackendTest::TearDown();
  }

  dev::UnifiedMemory& um() { return be().unified_memory(); }
  uint64_t allocate(uint64_t size) {
    uint64_t base = 0;
    EXPECT_TRUE(um().allocate(size, &base).ok());
    if (base != 0) live_.push_back(base);
    return base;
  }
  void release(uint64_t base) {
    EXPECT_TRUE(um().free(base, dev::FreeMode::kNormal).ok());
    live_.erase(std::remove(live_.begin(), live_.end(), base), live_.end());
  }
  uint64_t stat(const char* name) {
    Counters c;
    be().visit_statistics(c);
    return c.values[name];
  }
  uint64_t device_free(dev::DeviceIndex d) {
    dev::MemoryInfo info;
    EXPECT_TRUE(be().devices().memory_info(d, dev::MemoryKind::kHbm, &info).ok());
    return info.free;
  }
  // Device `d` writes (or reads) n bytes at va: the copy engine's kManaged endpoint.
  dev::Result device_write(dev::DeviceIndex d, uint64_t va, const void* src, uint64_t n) {
    CopyRequest r{CopyEndpoint{va, EndpointKind::kManaged},
                  CopyEndpoint{reinterpret_cast<uint64_t>(src), EndpointKind::kHostMemory}, n,
                  Executor{d, 0}};
    return be().copy_engine().copy(r).result;
  }
  dev::Result device_read(dev::DeviceIndex d, uint64_t va, void* dst, uint64_t n) {
    CopyRequest r{CopyEndpoint{reinterpret_cast<uint64_t>(dst), EndpointKind::kHostMemory},
                  CopyEndpoint{va, EndpointKind::kManaged}, n, Executor{d, 0}};
    return be().copy_engine().copy(r).result;
  }
  dev::Result cpu_read(uint64_t va, void* dst, size_t n) {
    return harness().cpu_access(va, dst, n, false);
  }
  dev::Result cpu_write(uint64_t va, const void* src, size_t n) {
    return harness().cpu_access(va, const_cast<void*>(src), n, true);
  }
  std::vector<int32_t> attr(ManagedAttribute a, uint64_t va, uint64_t size, size_t slots = 1) {
    std::vector<int32_t> v(slots, 99);
    EXPECT_TRUE(um().attribute(a, va, size, v.data(), slots).ok());
    return v;
  }
  int32_t attr1(ManagedAttribute a, uint64_t va, uint64_t size) { return attr(a, va, size)[0]; }
  bool residency() { return um().tracking().residency; }
  // A device access here is a copy the named device executes (device_read, device_write): an
  // engine whose copies carry no executing device (copies_check_access false; hal: drvMemcpy
  // takes none, hal.md §3.11) never faults a managed page onto a device.
  bool device_accesses() { return be().capabilities().copies_check_access; }

  std::vector<uint64_t> live_;
};

// C37: a range is whole 2 MiB pages, zeros, the CPU's at once; free takes only its base.
TEST_P(UnifiedConformance, C37_AllocateGivesZeroedCpuMemoryAndFreeTakesTheBase) {
  const uint64_t base = allocate(2 * kPage);
  ASSERT_NE(base, 0u);
  EXPECT_EQ(base % kPage, 0u);
  std::vector<uint8_t> got(4096, 0xee), want(4096, 0);
  ASSERT_TRUE(cpu_read(base + kPage + 8192, got.data(), got.size()).ok());
  EXPECT_EQ(got, want);
  const char text[] = "managed bytes";
  ASSERT_TRUE(cpu_write(base + 100, text, sizeof text).ok());
  char back[sizeof text] = {};
  ASSERT_TRUE(device_read(0, base + 100, back, sizeof back).ok());
  EXPECT_STREQ(back, text);
  const uint64_t other = allocate(kPage);
  EXPECT_TRUE(other >= base + 2 * kPage || other + kPage <= base) << "ranges do not overlap";

  EXPECT_EQ(um().free(base + kPage, dev::FreeMode::kNormal).condition(),
            Condition::kInvalidArgument)
      << "an interior address is not a range";
  release(base);
  EXPECT_EQ(cpu_read(base, got.data(), got.size()).condition(), Condition::kBadAddress);
  EXPECT_EQ(device_read(0, base, got.data(), got.size()).condition(),
            harness().traits().copy_fault);
}

// C38: a device access migrates the page to the device (charged there); the CPU's next access
// brings it back; the bytes stay right either way.
TEST_P(UnifiedConformance, C38_DeviceAccessMigratesAndCpuAccessBringsThePageBack) {
  const uint64_t base = allocate(2 * kPage);
  ASSERT_NE(base, 0u);
  if (!residency()) GTEST_SKIP() << "tracking().residency is false on this machine";
  if (!device_accesses()) {
    GTEST_SKIP() << "capability copies_check_access is false: copies name no executing device";
  }
  const uint64_t free0 = device_free(0);
  const std::vector<uint8_t> pattern(8192, 0x5a);
  ASSERT_TRUE(device_write(0, base + kPage + 4096, pattern.data(), pattern.size()).ok());
  EXPECT_EQ(stat("device_faults"), 1u);
  EXPECT_EQ(stat("bytes_to_device"), kPage);
  EXPECT_EQ(device_free(0), free0 - kPage) << "the page is charged to the device";
  ASSERT_TRUE(device_write(0, base + kPage, pattern.data(), 16).ok());
  EXPECT_EQ(stat("device_faults"), 1u) << "a resident page does not fault again";

  std::vector<uint8_t> got(pattern.size());
  ASSERT_TRUE(cpu_read(base + kPage + 4096, got.data(), got.size()).ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(stat("host_faults"), 1u);
  EXPECT_EQ(stat("bytes_to_host"), kPage);
  EXPECT_EQ(device_free(0), free0);
  std::vector<std::string> events;
  for (const dev::ResidencyEvent& e : listener_.residency_events()) events.push_back(e.what);
  EXPECT_EQ(events, (std::vector<std::string>{"device_fault", "to_device", "cpu_fault", "to_host"}));
}

// C38 without residency: nothing moves, nothing is charged, the bytes are right.
class UnifiedWithoutTracking : public UnifiedConformance {
 protected:
  BackendSetup setup() const override {
    BackendSetup s;
    s.managed_residency = false;
    return s;
  }
};

TEST_P(UnifiedWithoutTracking, C38_WithoutResidencyDevicesReachPagesInPlace) {
  const uint64_t base = allocate(kPage);
  ASSERT_NE(base, 0u);
  if (residency()) GTEST_SKIP() << "this backend's machine tracks residency (not configurable)";
  EXPECT_FALSE(um().tracking().cpu_writes);
  const uint64_t free1 = device_free(1);
  const std::vector<uint8_t> pattern(4096, 0x33);
  ASSERT_TRUE(device_write(1, base, pattern.data(), pattern.size()).ok());
  ASSERT_TRUE(um().prefetch(base, kPage, Location::device(1)).ok());
  std::vector<uint8_t> got(pattern.size());
  ASSERT_TRUE(cpu_read(base, got.data(), got.size()).ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(device_free(1), free1);
  for (const char* name : {"device_faults", "host_faults", "bytes_to_device", "prefetch_bytes"}) {
    EXPECT_EQ(stat(name), 0u) << name;
  }
  EXPECT_EQ(stat("fault_tracking"), 0u);
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocation, base, kPage), 1)
      << "the prefetch is remembered even though nothing moved";
}

// C39: READ_MOSTLY pages give devices read copies and stay where they are; a CPU write drops
// the copies when CPU writes are tracked, and the next device read takes a new one.
TEST_P(UnifiedConformance, C39_ReadMostlyGivesReadCopiesThatACpuWriteInvalidates) {
  const uint64_t base = allocate(kPage);
  ASSERT_NE(base, 0u);
  if (!residency()) GTEST_SKIP() << "tracking().residency is false on this machine";
  if (!device_accesses()) {
    GTEST_SKIP() << "capability copies_check_access is false: copies name no executing device";
  }
  ASSERT_TRUE(um().advise(base, kPage, ManagedAdvice::kReadMostly, Location{}).ok());
  EXPECT_EQ(attr1(ManagedAttribute::kReadMostly, base, kPage), 1);
  const uint64_t free0 = device_free(0);
  uint8_t got[64] = {};
  ASSERT_TRUE(device_read(0, base, got, sizeof got).ok());
  ASSERT_TRUE(device_read(1, base, got, sizeof got).ok());
  EXPECT_EQ(stat("device_faults"), 2u) << "one read copy per device";
  ASSERT_TRUE(device_read(0, base + 64, got, sizeof got).ok());
  EXPECT_EQ(stat("device_faults"), 2u) << "a device reads its own copy again";
  EXPECT_EQ(device_free(0), free0) << "the page stayed on the host";
  ASSERT_TRUE(cpu_read(base, got, sizeof got).ok());
  EXPECT_EQ(stat("host_faults"), 0u) << "the CPU reads a read-mostly page in place";

  const uint8_t byte = 7;
  ASSERT_TRUE(cpu_write(base + 10, &byte, 1).ok());
  if (!um().tracking().cpu_writes) return;
  EXPECT_EQ(stat("read_copy_invalidations"), 1u);
  ASSERT_TRUE(device_read(0, base + 10, got, 1).ok());
  EXPECT_EQ(got[0], byte);
  EXPECT_EQ(stat("device_faults"), 3u) << "a new read copy after the write";
  ASSERT_TRUE(cpu_write(base + 11, &byte, 1).ok());
  EXPECT_EQ(stat("read_copy_invalidations"), 2u);

  // A device write to a read-mostly page migrates it like any page.
  ASSERT_TRUE(device_write(1, base, &byte, 1).ok());
  EXPECT_EQ(device_free(1), device_free(0) - kPage);
}

// C40: a preferred location keeps pages there and lets others reach them in place;
// ACCESSED_BY keeps a device's access wherever the page lives.
TEST_P(UnifiedConformance, C40_PreferredLocationAndAccessedByReachPagesInPlace) {
  const uint64_t base = allocate(3 * kPage);
  ASSERT_NE(base, 0u);
  if (!residency()) GTEST_SKIP() << "tracking().residency is false on this machine";
  if (!device_accesses()) {
    GTEST_SKIP() << "capability copies_check_access is false: copies name no executing device";
  }
  const uint8_t byte = 1;
  // Page 0 prefers the host: device 0 writes it in place.
  ASSERT_TRUE(um().advise(base, kPage, ManagedAdvice::kPreferredLocation, Location::host()).ok());
  ASSERT_TRUE(device_write(0, base, &byte, 1).ok());
  EXPECT_EQ(stat("device_faults"), 0u);
  // Page 1 prefers device 1: device 1 pulls it, device 0 then reaches it in place, and the CPU
  // reaches it in place too (no fault brings it back).
  ASSERT_TRUE(um().advise(base + kPage, kPage, ManagedAdvice::kPreferredLocation,
                          Location::device(1)).ok());
  ASSERT_TRUE(device_write(1, base + kPage, &byte, 1).ok());
  EXPECT_EQ(stat("device_faults"), 1u);
  ASSERT_TRUE(device_write(0, base + kPage, &byte, 1).ok());
  EXPECT_EQ(stat("device_faults"), 1u);
  uint8_t got = 0;
  ASSERT_TRUE(cpu_read(base + kPage, &got, 1).ok());
  EXPECT_EQ(got, byte);
  EXPECT_EQ(stat("host_faults"), 0u);
  // Page 2 lives on device 1; device 0 is accessed-by and reaches it there.
  ASSERT_TRUE(device_write(1, base + 2 * kPage, &byte, 1).ok());
  EXPECT_EQ(stat("device_faults"), 2u);
  ASSERT_TRUE(um().advise(base + 2 * kPage, kPage, ManagedAdvice::kAccessedBy,
                          Location::device(0)).ok());
  ASSERT_TRUE(device_read(0, base + 2 * kPage, &got, 1).ok());
  EXPECT_EQ(stat("device_faults"), 2u);
  // Without the advice device 0 migrates it.
  ASSERT_TRUE(um().advise(base + 2 * kPage, kPage, ManagedAdvice::kUnsetAccessedBy,
                          Location::device(0)).ok());
  ASSERT_TRUE(device_read(0, base + 2 * kPage, &got, 1).ok());
  EXPECT_EQ(stat("device_faults"), 3u);

  EXPECT_EQ(um().advise(base, kPage, ManagedAdvice::kPreferredLocation, Location{}).condition(),
            Condition::kInvalidArgument)
      << "a location the advice needs";
  EXPECT_EQ(um().advise(base + 3 * kPage, kPage, ManagedAdvice::kReadMostly, Location{})
                .condition(),
            harness().traits().outside_managed)
      << "past the range";
}

// C41: a full device evicts its least recently used managed page; charges balance.
TEST_P(UnifiedConformance, C41_OversubscriptionEvictsTheLeastRecentlyUsedPage) {
  const uint64_t fit = device_free(0) / kPage;
  ASSERT_GE(fit, 2u);
  const uint64_t base = allocate((fit + 1) * kPage);
  ASSERT_NE(base, 0u);
  if (!residency()) GTEST_SKIP() << "tracking().residency is false on this machine";
  if (!device_accesses()) {
    GTEST_SKIP() << "capability copies_check_access is false: copies name no executing device";
  }
  ASSERT_TRUE(um().prefetch(base, fit * kPage, Location::device(0)).ok());
  EXPECT_EQ(device_free(0), 0u);
  EXPECT_EQ(stat("evictions"), 0u);
  uint8_t byte = 0;
  ASSERT_TRUE(device_read(0, base, &byte, 1).ok());  // page 0 is now the most recent
  ASSERT_TRUE(um().prefetch(base + fit * kPage, kPage, Location::device(0)).ok());
  EXPECT_EQ(stat("evictions"), 1u);
  EXPECT_EQ(device_free(0), 0u);
  // Page 1 went (the CPU reads it without a fault); page 0 stayed (the CPU's read faults).
  ASSERT_TRUE(cpu_read(base + kPage, &byte, 1).ok());
  EXPECT_EQ(stat("host_faults"), 0u);
  ASSERT_TRUE(cpu_read(base, &byte, 1).ok());
  EXPECT_EQ(stat("host_faults"), 1u);

  release(base);
  EXPECT_EQ(listener_.usage_sum(0), 0) << "every charge went back";
  EXPECT_EQ(device_free(0), fit * kPage);
}

// C42: the attributes in the vendor's encodings: -1 the host, -2 mixed or unset, ACCESSED_BY
// packed from slot 0 (device ids are the backend's).
TEST_P(UnifiedConformance, C42_AttributesUseTheVendorEncodings) {
  const uint64_t base = allocate(2 * kPage);
  ASSERT_NE(base, 0u);
  const uint64_t both = 2 * kPage;
  EXPECT_EQ(attr1(ManagedAttribute::kReadMostly, base, both), 0);
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocation, base, both), -2);
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationType, base, both), 0);
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationId, base, both), -2);

  ASSERT_TRUE(um().advise(base, kPage, ManagedAdvice::kPreferredLocation, Location::device(1)).ok());
  ASSERT_TRUE(um().advise(base + kPage, kPage, ManagedAdvice::kPreferredLocation,
                          Location::device(0)).ok());
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocation, base, kPage), 1);
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationType, base, both), 1) << "both devices";
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationId, base, both), -2) << "two ids";
  EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocation, base, both), -2);

  ASSERT_TRUE(um().advise(base, kPage, ManagedAdvice::kPreferredLocation, Location::host()).ok());
  if (be().capabilities().host_numa) {
    ASSERT_TRUE(um().advise(base + kPage, kPage, ManagedAdvice::kPreferredLocation,
                            Location::host_numa(0)).ok());
    EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocation, base, both), -1) << "the host either way";
    EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationType, base, both), 0) << "two kinds";
    EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationType, base + kPage, kPage), 3);
    EXPECT_EQ(attr1(ManagedAttribute::kPreferredLocationId, base + kPage, kPage), 0);
  }

  ASSERT_TRUE(um().advise(base, both, ManagedAdvice::kAccessedBy, Location::device(1)).ok());
  ASSERT_TRUE(um().advise(base, both, ManagedAdvice::kAccessedBy, Location::host()).ok());
  ASSERT_TRUE(um().advise(base, kPage, ManagedAdvice::kAccessedBy, Location::device(0)).ok());
  EXPECT_EQ(attr(ManagedAttribute::kAccessedBy, base, both, 4),
            (std::vector<int32_t>{-1, 1, -2, -2}))
      << "what every page names, the host first";
  EXPECT_EQ(attr(ManagedAttribute::kAccessedBy, base, kPage, 2), (std::vector<int32_t>{-1, 0}))
      << "as many as the slots hold";
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocation, base, both), -2) << "never prefetched";
  std::vector<int32_t> v(1);
  EXPECT_EQ(um().attribute(ManagedAttribute::kReadMostly, base + both, kPage, v.data(), 1)
                .condition(),
            harness().traits().outside_managed);
}

// C43: synchronous prefetch there and back, counted in prefetch_bytes and charged.
TEST_P(UnifiedConformance, C43_PrefetchMovesPagesThereAndBack) {
  const uint64_t base = allocate(2 * kPage);
  ASSERT_NE(base, 0u);
  if (!residency()) GTEST_SKIP() << "tracking().residency is false on this machine";
  const std::vector<uint8_t> pattern(kPage, 0xc3);
  ASSERT_TRUE(cpu_write(base + kPage, pattern.data(), pattern.size()).ok());
  const uint64_t free1 = device_free(1);
  ASSERT_TRUE(um().prefetch(base, 2 * kPage, Location::device(1)).ok());
  EXPECT_EQ(stat("prefetch_bytes"), 2 * kPage);
  EXPECT_EQ(stat("bytes_to_device"), 2 * kPage);
  EXPECT_EQ(device_free(1), free1 - 2 * kPage);
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocation, base, 2 * kPage), 1);
  ASSERT_TRUE(um().prefetch(base, 2 * kPage, Location::device(1)).ok());
  EXPECT_EQ(stat("prefetch_bytes"), 2 * kPage) << "resident pages do not move again";

  ASSERT_TRUE(um().prefetch(base, 2 * kPage, Location::host()).ok());
  EXPECT_EQ(stat("prefetch_bytes"), 4 * kPage);
  EXPECT_EQ(stat("bytes_to_host"), 2 * kPage);
  EXPECT_EQ(stat("host_faults"), 0u);
  EXPECT_EQ(device_free(1), free1);
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocation, base, 2 * kPage), -1);
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocationType, base, 2 * kPage), 2);
  std::vector<uint8_t> got(pattern.size());
  ASSERT_TRUE(cpu_read(base + kPage, got.data(), got.size()).ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(stat("host_faults"), 0u);
}

// C27: a kPrefetch runs in queue order with the copies around it: the page written before it is
// on the device when the copy after it reads there (no device fault), and a prefetch of nothing
// fails alone (kBadAddress) while the queue goes on.
TEST_P(UnifiedConformance, C27_QueuedPrefetchIsOrderedWithCopies) {
  const uint64_t base = allocate(kPage);
  ASSERT_NE(base, 0u);
  const uint64_t free1 = device_free(1);
  dev::QueueConfig config;
  config.device = 1;
  dev::QueueId queue;
  ASSERT_TRUE(be().copy_engine().create_queue(config, &queue).ok());
  struct Outcomes {
    std::vector<Condition> seen;
  } outcomes;
  auto done = [](void* context, const dev::CopyOutcome& o) {
    static_cast<Outcomes*>(context)->seen.push_back(o.result.condition());
  };
  const std::vector<uint8_t> pattern(8192, 0x6b);
  std::vector<uint8_t> got(pattern.size());
  dev::Command write, ahead, nowhere, read;
  write.kind = dev::CommandKind::kCopy;
  write.copy = CopyRequest{CopyEndpoint{base + 4096, EndpointKind::kManaged},
                           CopyEndpoint{reinterpret_cast<uint64_t>(pattern.data()), EndpointKind::kHostMemory},
                           pattern.size(), Executor{dev::kNoDevice, 0}};
  ahead.kind = dev::CommandKind::kPrefetch;
  ahead.prefetch = dev::PrefetchRequest{base, kPage, Location::device(1)};
  nowhere.kind = dev::CommandKind::kPrefetch;
  nowhere.prefetch = dev::PrefetchRequest{base + 64 * kPage, kPage, Location::device(1)};
  read.kind = dev::CommandKind::kCopy;
  read.copy = CopyRequest{CopyEndpoint{reinterpret_cast<uint64_t>(got.data()), EndpointKind::kHostMemory},
                          CopyEndpoint{base + 4096, EndpointKind::kManaged}, got.size(), Executor{1, 0}};
  dev::Fence fence = 0;
  for (dev::Command* c : {&write, &ahead, &nowhere, &read}) {
    c->completion = {done, &outcomes};
    ASSERT_TRUE(be().copy_engine().submit(queue, *c, &fence).ok());
  }
  ASSERT_TRUE(be().copy_engine().wait(queue, fence, -1).ok());
  be().copy_engine().destroy_queue(queue);
  EXPECT_EQ(outcomes.seen, (std::vector<Condition>{Condition::kOk, Condition::kOk,
                                                   harness().traits().outside_managed,
                                                   Condition::kOk}));
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(attr1(ManagedAttribute::kLastPrefetchLocation, base, kPage), 1);
  if (!residency()) return;
  EXPECT_EQ(stat("prefetch_bytes"), kPage);
  EXPECT_EQ(stat("device_faults"), 0u) << "the read found the page already there";
  EXPECT_EQ(device_free(1), free1 - kPage);
}

ACLVMM_CONFORMANCE_SUITE(UnifiedConformance);
ACLVMM_CONFORMANCE_SUITE(UnifiedWithoutTracking);

}  // namespace
}  // namespace aclvmm::conformance
