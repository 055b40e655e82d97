// Conformance of PhysicalAllocator (docs/device-interface.md §9, C9-C11).
#include <cstring>
#include <vector>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::kGiB;
using dev::kMiB;
using dev::Location;
using dev::MemType;
using dev::PageType;
using dev::PhysicalId;
using dev::PhysicalSpec;

PhysicalSpec device_spec(dev::DeviceIndex d, uint64_t size) {
  return PhysicalSpec{Location::device(d), PageType::kHuge, MemType::kHbm, size};
}

class PhysicalConformance : public BackendTest {
 protected:
  bool all_zero(PhysicalId id, uint64_t offset, size_t n) {
    std::vector<uint8_t> bytes(n, 0xee);
    EXPECT_TRUE(harness().read_physical(id, offset, bytes.data(), n).ok());
    for (uint8_t b : bytes) {
      if (b != 0) return false;
    }
    return true;
  }
};

// C9: new memory reads zeros, also where an earlier object's bytes were.
TEST_P(PhysicalConformance, C9_NewMemoryReadsZeros) {
  for (const PhysicalSpec& spec :
       {device_spec(0, 4 * kMiB),
        PhysicalSpec{Location::host(), PageType::kHuge, MemType::kDdr, 4 * kMiB}}) {
    PhysicalId id;
    ASSERT_TRUE(be().physical().create(spec, &id).ok());
    EXPECT_TRUE(all_zero(id, 0, 4096));
    EXPECT_TRUE(all_zero(id, 2 * kMiB - 100, 200));  // across the 2 MiB boundary
    EXPECT_TRUE(all_zero(id, 4 * kMiB - 4096, 4096));
    std::vector<uint8_t> pattern(64 * 1024);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_TRUE(harness().write_physical(id, kMiB, pattern.data(), pattern.size()).ok());
    std::vector<uint8_t> back(pattern.size());
    ASSERT_TRUE(harness().read_physical(id, kMiB, back.data(), back.size()).ok());
    EXPECT_EQ(back, pattern);
    ASSERT_TRUE(be().physical().release(id).ok());

    PhysicalId again;
    ASSERT_TRUE(be().physical().create(spec, &again).ok());
    EXPECT_TRUE(all_zero(again, kMiB, pattern.size())) << "an old object's bytes showed";
    ASSERT_TRUE(be().physical().release(again).ok());
  }
}

// C10: capacity: create until kOutOfMemory, release, create again; a refusal charges nothing.
TEST_P(PhysicalConformance, C10_CapacityIsExhaustedAndRecovers) {
  std::vector<PhysicalId> held;
  dev::Result last;
  for (int i = 0; i < 64; ++i) {
    PhysicalId id;
    last = be().physical().create(device_spec(1, 2 * kMiB), &id);
    if (!last.ok()) break;
    held.push_back(id);
  }
  EXPECT_EQ(last.condition(), Condition::kOutOfMemory);
  EXPECT_EQ(held.size(), 32u) << "64 MiB hold 32 objects of 2 MiB";
  dev::MemoryInfo info;
  ASSERT_TRUE(be().devices().memory_info(1, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.free, 0u);
  PhysicalId other;
  ASSERT_TRUE(be().physical().create(device_spec(0, 2 * kMiB), &other).ok())
      << "another device is not full";
  ASSERT_TRUE(be().physical().release(held.back()).ok());
  held.pop_back();
  PhysicalId id;
  ASSERT_TRUE(be().physical().create(device_spec(1, 2 * kMiB), &id).ok());
  held.push_back(id);
  EXPECT_EQ(be().physical().create(device_spec(1, 2 * kMiB), &id).condition(),
            Condition::kOutOfMemory);
  for (PhysicalId h : held) ASSERT_TRUE(be().physical().release(h).ok());
  ASSERT_TRUE(be().physical().release(other).ok());
  // Larger than the device: refused, nothing charged.
  EXPECT_EQ(be().physical().create(device_spec(1, 66 * kMiB), &id).condition(),
            Condition::kOutOfMemory);
  ASSERT_TRUE(be().devices().memory_info(1, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.free, 64 * kMiB);
  EXPECT_EQ(listener_.usage_sum(1), 0);
}

class PhysicalPropertiesConformance : public PhysicalConformance {
 protected:
  BackendSetup setup() const override { return BackendSetup{2, 2 * kGiB}; }
};

// C11: properties and granularity per page type; routes round trip.
TEST_P(PhysicalPropertiesConformance, C11_PropertiesGranularityAndRoutes) {
  const dev::Capabilities& caps = be().capabilities();
  std::vector<PhysicalSpec> specs = {
      {Location::device(0), PageType::kNormal, MemType::kHbm, 2 * kMiB},
      {Location::device(1), PageType::kHuge, MemType::kP2pHbm, 4 * kMiB},
      {Location::host(), PageType::kHuge, MemType::kDdr, 2 * kMiB},
      {Location::host(), PageType::kNormal, MemType::kP2pDdr, 6 * kMiB},
  };
  if (caps.giant_page != 0) {
    specs.push_back({Location::device(0), PageType::kGiant, MemType::kHbm, kGiB});
  }
  if (caps.host_numa) {
    specs.push_back({Location::host_numa(0), PageType::kHuge, MemType::kDdr, 2 * kMiB});
  }
  for (const PhysicalSpec& spec : specs) {
    SCOPED_TRACE(::testing::Message() << "page type " << int(spec.page_type) << ", location "
                                    << int(spec.location.kind) << "/" << spec.location.id);
    PhysicalId id;
    ASSERT_TRUE(be().physical().create(spec, &id).ok());
    dev::PhysicalProperties p;
    ASSERT_TRUE(be().physical().properties(id, &p).ok());
    EXPECT_EQ(p.location, spec.location);
    EXPECT_EQ(p.page_type, spec.page_type);
    EXPECT_EQ(p.mem_type, spec.mem_type);
    EXPECT_EQ(p.size, spec.size);
    EXPECT_FALSE(p.imported);
    for (dev::Granularity g : {dev::Granularity::kMinimum, dev::Granularity::kRecommended}) {
      uint64_t granule = 0;
      ASSERT_TRUE(be().physical().granularity(spec, g, &granule).ok());
      EXPECT_EQ(granule, spec.page_type == PageType::kGiant ? kGiB : 2 * kMiB);
    }
    if (caps.map_routes) {
      // A driver that knows its chip's routes only (hal) is asked for the default one.
      const bool every = harness().traits().every_route;
      uint32_t route = 99;
      ASSERT_TRUE(be().physical().map_route(id, &route).ok());
      EXPECT_EQ(route, 0u);
      for (uint32_t r : {3u, 1u, 2u, 0u}) {
        if (!every && r != 0) continue;
        ASSERT_TRUE(be().physical().set_map_route(id, r).ok());
        ASSERT_TRUE(be().physical().map_route(id, &route).ok());
        EXPECT_EQ(route, r);
      }
      const uint32_t kept = every ? 2u : 0u;
      ASSERT_TRUE(be().physical().set_map_route(id, kept).ok());
      EXPECT_EQ(be().physical().set_map_route(id, dev::kMapRouteCount).condition(),
                Condition::kNotFound);
      ASSERT_TRUE(be().physical().map_route(id, &route).ok());
      EXPECT_EQ(route, kept) << "a refused route changes nothing";
    }
    ASSERT_TRUE(be().physical().release(id).ok());
  }
}

// What every backend refuses whatever the core checked: locations naming nothing, partial
// granules; and what the capabilities rule out.
TEST_P(PhysicalPropertiesConformance, C11_RefusedSpecsCreateNothing) {
  const dev::Capabilities& caps = be().capabilities();
  const int32_t nodes = be().host().numa_node_count();
  struct Refusal {
    PhysicalSpec spec;
    Condition condition;
  };
  std::vector<Refusal> refusals = {
      {device_spec(2, 2 * kMiB), Condition::kInvalidArgument},
      {device_spec(-1, 2 * kMiB), Condition::kInvalidArgument},
      {device_spec(0, 0), Condition::kInvalidArgument},
      {device_spec(0, 3 * kMiB), Condition::kInvalidArgument},
      {{Location::host(), PageType::kHuge, MemType::kDdr, kMiB}, Condition::kInvalidArgument},
      {{Location{Location::Kind::kNone, 0}, PageType::kHuge, MemType::kDdr, 2 * kMiB},
       Condition::kInvalidArgument},
  };
  if (caps.giant_page != 0) {
    refusals.push_back({{Location::device(0), PageType::kGiant, MemType::kHbm, 2 * kMiB},
                        Condition::kInvalidArgument});
  }
  if (caps.host_numa) {
    refusals.push_back({{Location::host_numa(nodes), PageType::kHuge, MemType::kDdr, 2 * kMiB},
                        Condition::kInvalidArgument});
  } else {
    refusals.push_back({{Location::host_numa(0), PageType::kHuge, MemType::kDdr, 2 * kMiB},
                        Condition::kNotSupported});
  }
  const std::string resources = harness().held_resources();
  for (const Refusal& r : refusals) {
    PhysicalId id{12345};
    EXPECT_EQ(be().physical().create(r.spec, &id).condition(), r.condition)
        << "location " << int(r.spec.location.kind) << "/" << r.spec.location.id << ", size "
        << r.spec.size;
    EXPECT_EQ(id.value, 12345u) << "*out is set only on success";
  }
  EXPECT_EQ(harness().held_resources(), resources);
  EXPECT_TRUE(listener_.usage().empty());
}

ACLVMM_CONFORMANCE_SUITE(PhysicalConformance);
ACLVMM_CONFORMANCE_SUITE(PhysicalPropertiesConformance);

}  // namespace
}  // namespace aclvmm::conformance
