// Conformance of failure injection (docs/device-interface.md §9, C46): every "dev.*" step of the
// units a backend has, failed at its 1st ... nth execution, fails exactly that execution with the
// rule's code and leaves the backend as it was: free memory, open devices, peer links, routes,
// and what the backend holds of the machine (emu: its descriptors and segment files).
#include <cerrno>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/harness.h"
#include "drivers/injection_steps.h"

namespace aclvmm::conformance {
namespace {

using dev::kMiB;
using dev::Location;
using dev::PhysicalId;
using dev::Result;
namespace steps = dev::steps;

constexpr int kCode = EXDEV;  // no backend answers it of its own accord
constexpr int kDevices = 4;
constexpr int kRuns = 3;

dev::PhysicalSpec small_spec() {
  return dev::PhysicalSpec{Location::device(0), dev::PageType::kHuge, dev::MemType::kHbm,
                           2 * kMiB};
}

struct Context {
  dev::DeviceBackend& be;
  Harness& harness;
  std::vector<PhysicalId> objects;  // prepared (or created by the runs)
  std::vector<std::shared_ptr<dev::StatisticsSegment>> segments;
  std::vector<uint64_t> ranges;  // the block and reservation scenarios' addresses, one per run
};

struct Scenario {
  const char* step;
  void (*prepare)(Context&);
  Result (*run)(Context&, int k);  // the step's operation, for the k-th time
  void (*undo)(Context&, int k);   // of a successful run
  void (*finish)(Context&);        // gives back what prepare made
};

void nothing(Context&) {}
void create_objects(Context& c) {
  c.objects.assign(kRuns, PhysicalId{});
  for (PhysicalId& id : c.objects) ASSERT_TRUE(c.be.physical().create(small_spec(), &id).ok());
}
void release_objects(Context& c) {
  for (PhysicalId id : c.objects) {
    if (id) {
      ASSERT_TRUE(c.be.physical().release(id).ok());
    }
  }
  c.objects.clear();
}

dev::BlockRequest small_block() {
  dev::BlockRequest r;
  r.kind = dev::BlockKind::kDevice;
  r.device = 0;
  r.size = 64 * 1024;
  r.page_type = dev::PageType::kNormal;
  return r;
}
void no_ranges(Context& c) { c.ranges.assign(kRuns, 0); }
Result allocate_block(Context& c, int k) {
  dev::Block block;
  const Result r = c.be.blocks().allocate(small_block(), &block);
  if (r.ok()) c.ranges[k] = block.address;
  return r;
}
void allocate_blocks(Context& c) {
  no_ranges(c);
  for (int k = 0; k < kRuns; ++k) ASSERT_TRUE(allocate_block(c, k).ok());
}
void free_blocks(Context& c) {
  for (int k = 0; k < kRuns; ++k) ASSERT_TRUE(c.be.blocks().free(c.ranges[k]).ok());
}
dev::ReserveRequest small_reservation() {
  dev::ReserveRequest r;
  r.size = 2 * kMiB;
  r.alignment = 2 * kMiB;
  return r;
}
Result reserve_range(Context& c, int k) {
  return c.be.windows().reserve(small_reservation(), &c.ranges[k]);
}
void reserve_ranges(Context& c) {
  no_ranges(c);
  for (int k = 0; k < kRuns; ++k) ASSERT_TRUE(reserve_range(c, k).ok());
}
void release_ranges(Context& c) {
  for (int k = 0; k < kRuns; ++k) ASSERT_TRUE(c.be.windows().release(c.ranges[k], 2 * kMiB).ok());
}

const Scenario kScenarios[] = {
    {steps::kDeviceOpen, nothing, [](Context& c, int k) { return c.be.devices().open(k); },
     [](Context& c, int k) { ASSERT_TRUE(c.be.devices().close(k).ok()); }, nothing},
    {steps::kDeviceClose,
     [](Context& c) {
       for (int d = 0; d < kRuns; ++d) ASSERT_TRUE(c.be.devices().open(d).ok());
     },
     [](Context& c, int k) { return c.be.devices().close(k); },
     [](Context& c, int k) { ASSERT_TRUE(c.be.devices().open(k).ok()); },
     [](Context& c) {
       for (int d = 0; d < kRuns; ++d) ASSERT_TRUE(c.be.devices().close(d).ok());
     }},
    {steps::kDevicePeer, nothing,
     [](Context& c, int k) { return c.be.devices().enable_peer(0, k + 1); },
     [](Context& c, int k) { ASSERT_TRUE(c.be.devices().disable_peer(0, k + 1).ok()); },
     nothing},
    {steps::kPhysicalCreate, [](Context& c) { c.objects.assign(kRuns, PhysicalId{}); },
     [](Context& c, int k) { return c.be.physical().create(small_spec(), &c.objects[k]); },
     [](Context& c, int k) {
       ASSERT_TRUE(c.be.physical().release(c.objects[k]).ok());
       c.objects[k] = PhysicalId{};
     },
     release_objects},
    {steps::kPhysicalRelease, create_objects,
     [](Context& c, int k) { return c.be.physical().release(c.objects[k]); },
     [](Context& c, int k) {  // a new object in the released one's place
       ASSERT_TRUE(c.be.physical().create(small_spec(), &c.objects[k]).ok());
     },
     release_objects},
    {steps::kPhysicalRoute, create_objects,
     [](Context& c, int k) {
       // The default route where the driver knows its chip's routes only (hal).
       return c.be.physical().set_map_route(c.objects[k], c.harness.traits().every_route ? 3 : 0);
     },
     [](Context& c, int k) { ASSERT_TRUE(c.be.physical().set_map_route(c.objects[k], 0).ok()); },
     release_objects},
    {steps::kBlockAllocate, no_ranges, allocate_block,
     [](Context& c, int k) { ASSERT_TRUE(c.be.blocks().free(c.ranges[k]).ok()); },
     nothing},
    {steps::kBlockFree, allocate_blocks,
     [](Context& c, int k) { return c.be.blocks().free(c.ranges[k]); },
     [](Context& c, int k) { ASSERT_TRUE(allocate_block(c, k).ok()); },  // one in its place
     free_blocks},
    {steps::kWindowReserve, no_ranges, reserve_range,
     [](Context& c, int k) { ASSERT_TRUE(c.be.windows().release(c.ranges[k], 2 * kMiB).ok()); },
     nothing},
    {steps::kWindowRelease, reserve_ranges,
     [](Context& c, int k) { return c.be.windows().release(c.ranges[k], 2 * kMiB); },
     [](Context& c, int k) { ASSERT_TRUE(reserve_range(c, k).ok()); },  // one in its place
     release_ranges},
    {steps::kHostStatsSegment, [](Context& c) { c.segments.assign(kRuns, nullptr); },
     [](Context& c, int k) {
       return c.be.host().create_statistics_segment(
           c.harness.segment_dir(), "injection" + std::to_string(k), 4096, &c.segments[k]);
     },
     [](Context& c, int k) { c.segments[k].reset(); }, nothing},
    {steps::kHostTable, nothing,
     [](Context& c, int) {
       // Tables are never given back; a failure is "no table".
       return c.be.host().allocate_table(4096) != nullptr ? Result::success()
                                                           : Result::from_errno(kCode);
     },
     [](Context&, int) {}, nothing},
};

class InjectionConformance : public BackendTest {
 protected:
  BackendSetup setup() const override { return BackendSetup{kDevices, 64 * kMiB}; }

  // Everything a failed step must leave as it was. Probing opens and closes devices, so it runs
  // with nothing armed.
  std::string state(const Context& c) {
    std::ostringstream s;
    dev::DeviceManager& devices = be().devices();
    for (dev::DeviceIndex d = 0; d < kDevices; ++d) {
      dev::MemoryInfo info;
      EXPECT_TRUE(devices.memory_info(d, dev::MemoryKind::kHbm, &info).ok());
      const Result opened = devices.open(d);
      if (opened.ok()) {
        EXPECT_TRUE(devices.close(d).ok());
      }
      s << "device " << d << ": free " << info.free << (opened.ok() ? ", closed" : ", open")
        << ", peers";
      for (dev::DeviceIndex p = 0; p < kDevices; ++p) s << (devices.can_access_peer(d, p) ? " 1" : " 0");
      s << "\n";
    }
    for (PhysicalId id : c.objects) {
      uint32_t route = 99;
      if (id) {
        EXPECT_TRUE(be().physical().map_route(id, &route).ok());
      }
      s << "route " << (id ? int(route) : -1) << "\n";
    }
    s << "segments";
    for (const auto& seg : c.segments) s << (seg ? " 1" : " 0");
    s << "\n" << harness().held_resources() << "\n";
    return s.str();
  }
};

TEST_P(InjectionConformance, C46_EveryStepFailsOnceAndLeavesTheBackendAsItWas) {
  for (const Scenario& scenario : kScenarios) {
    // The scenarios that open and close devices start from closed ones: devices the harness
    // opened (hal) are closed for them and opened again afterwards.
    const bool own_devices = harness().traits().devices_open &&
                             (std::string(scenario.step) == steps::kDeviceOpen ||
                              std::string(scenario.step) == steps::kDeviceClose);
    if (own_devices) {
      for (dev::DeviceIndex d = 0; d < kRuns; ++d) ASSERT_TRUE(be().devices().close(d).ok());
    }
    for (int nth = 1; nth <= kRuns; ++nth) {
      SCOPED_TRACE(::testing::Message() << scenario.step << " failing at execution " << nth);
      Context c{be(), harness(), {}, {}, {}};
      scenario.prepare(c);
      const std::string before = state(c);
      listener_.arm(scenario.step, static_cast<uint32_t>(nth), kCode);
      Result results[kRuns];
      for (int k = 0; k < kRuns; ++k) results[k] = scenario.run(c, k);
      EXPECT_FALSE(listener_.armed(scenario.step)) << "the rule fired once";
      listener_.arm(scenario.step, 0, 0);
      for (int k = 0; k < kRuns; ++k) {
        if (k == nth - 1) {
          EXPECT_EQ(results[k], Result::from_errno(kCode)) << "execution " << k + 1;
        } else {
          EXPECT_TRUE(results[k].ok()) << "execution " << k + 1 << ": errno "
                                       << results[k].errno_value();
        }
      }
      for (int k = kRuns - 1; k >= 0; --k) {
        if (results[k].ok()) scenario.undo(c, k);
      }
      EXPECT_EQ(state(c), before);
      scenario.finish(c);
    }
    if (own_devices) {
      for (dev::DeviceIndex d = 0; d < kRuns; ++d) ASSERT_TRUE(be().devices().open(d).ok());
    }
  }
  for (dev::DeviceIndex d : {0, 1, 2, 3, dev::kNoDevice}) EXPECT_EQ(listener_.usage_sum(d), 0);
}

// Every interface step a backend's units lack still fires through the decorator (the core's
// rollback sweeps do not depend on the backend), and a query never consumes a rule.
TEST_P(InjectionConformance, C46_RulesReachTheDecoratorOnEveryBackend) {
  // Device 0 starts closed, as emu's and fake's harnesses leave it (hal's opens every device).
  if (harness().traits().devices_open) {
    ASSERT_TRUE(be().devices().close(0).ok());
  }
  listener_.arm(steps::kMmuMap, 1, kCode);
  EXPECT_EQ(be().mmu().map(0, 2 * kMiB, PhysicalId{1}, 0, dev::InitialAccess::kNone),
            Result::from_errno(kCode));
  listener_.arm(steps::kDeviceOpen, 1, kCode);
  dev::DeviceProperties p;
  EXPECT_TRUE(be().devices().properties(0, &p).ok());
  dev::MemoryInfo info;
  EXPECT_TRUE(be().devices().memory_info(0, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_TRUE(listener_.armed(steps::kDeviceOpen)) << "queries are not steps";
  EXPECT_EQ(be().devices().open(0), Result::from_errno(kCode));
  EXPECT_TRUE(be().devices().open(0).ok()) << "once";
  EXPECT_TRUE(be().devices().close(0).ok());
}

ACLVMM_CONFORMANCE_SUITE(InjectionConformance);

}  // namespace
}  // namespace aclvmm::conformance
