// ManagedMemory (src/vmm/managed.cpp) over the fake backend: each allocation is one range of the
// fake's UnifiedMemory in the layout's managed window, recorded by the core for pointer queries
// and frees; prefetches and advice reach the fake's residency model (its pages charged to the
// executing device's ledger, the pools mirroring it), attributes come back with the device ids
// the application knows (the stand-in's user ids); each refusal of the fake is worded and leaves
// the records matching the fake's ranges; the core's own checks answer before the fake is asked.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "drivers/injection_steps.h"
#include "unit/testing/fake_runtime.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

constexpr ManagedLocation kDevice0{1, 0};
constexpr ManagedLocation kDevice1{1, 1};
constexpr ManagedLocation kHost{2, 0};

using testing::hex;

// Whether the fake holds a managed range at va (its attribute query answers for it).
bool fake_holds(testing::FakeRuntime& f, uint64_t va) {
  int32_t v = 0;
  return f.device()
      .device()
      ->unified_memory()
      .attribute(dev::ManagedAttribute::kReadMostly, va, kManagedPage, &v, 1)
      .ok();
}

int32_t attribute(testing::FakeRuntime& f, int which, uint64_t va) {
  auto out = f.managed.attribute(which, va, 2 * kManagedPage, 1);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? (*out)[0] : -100;
}

TEST(ManagedFakeTest, AnAllocationIsARangeOfTheFakesUnifiedMemory) {
  testing::FakeRuntime f;
  auto base = f.managed.allocate(3 * kMiB);  // whole 2 MiB pages
  ASSERT_TRUE(base.ok()) << base.status().message();
  EXPECT_TRUE(f.layout().managed.contains(*base));
  EXPECT_TRUE(f.managed.in_window(*base));
  EXPECT_TRUE(fake_holds(f, *base));
  EXPECT_TRUE(fake_holds(f, *base + kManagedPage));
  auto range = f.managed.range_of(*base + 5);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->base, *base);
  EXPECT_EQ(range->size, 4 * kMiB);
  EXPECT_EQ(f.managed.live(), 1u);
  // Through Vmm: aclrtFree's dispatch and the pointer queries.
  auto info = f.vmm.pointer_info(*base + 5);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, PointerInfo::kManaged);
  auto asked = f.vmm.address_range(*base + kMiB);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->base, *base);
  EXPECT_EQ(f.fake().live_mappings(), 0u) << "no MMU entry of the core's";
  ASSERT_TRUE(f.vmm.device_free(*base).ok());
  EXPECT_FALSE(fake_holds(f, *base));
  EXPECT_EQ(f.managed.live(), 0u);
  EXPECT_EQ(f.vmm.address_range(*base).status().code(), ACL_ERROR_RT_PARAM_INVALID);
  f.device().expect_no_violations();
}

TEST(ManagedFakeTest, PrefetchAndAdviceReachTheFakesPagesInTheApplicationsIds) {
  testing::FakeRuntime f;
  auto base = f.managed.allocate(4 * kMiB);
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(f.managed.prefetch(*base, 4 * kMiB, kDevice1).ok());
  EXPECT_EQ(f.recorder().usage_sum(1), static_cast<int64_t>(4 * kMiB)) << "both pages on device 1";
  EXPECT_EQ(f.rt.pools[1]->used(), 4 * kMiB);
  // Physical device 1 is the application's device 0 (the stand-in's ids).
  EXPECT_EQ(attribute(f, 6, *base), 0) << "last prefetch location";
  EXPECT_EQ(attribute(f, 7, *base), 1) << "of type device";
  EXPECT_EQ(attribute(f, 8, *base), 0);
  EXPECT_NE(f.managed.stats_json().find("\"prefetch_bytes\": 4194304"), std::string::npos)
      << f.managed.stats_json();

  ASSERT_TRUE(f.managed.advise(*base, 4 * kMiB, 2, kDevice0).ok());  // preferred location
  EXPECT_EQ(attribute(f, 2, *base), 1) << "physical device 0 is the application's 1";
  EXPECT_EQ(attribute(f, 4, *base), 1);
  EXPECT_EQ(attribute(f, 5, *base), 1);
  ASSERT_TRUE(f.managed.prefetch(*base, 4 * kMiB, kHost).ok());
  EXPECT_EQ(f.recorder().usage_sum(1), 0) << "the pages left device 1";
  EXPECT_EQ(attribute(f, 6, *base), -1) << "the host";
  ASSERT_TRUE(f.managed.free(*base).ok());
  f.device().expect_no_violations();
}

TEST(ManagedFakeTest, EachRefusalOfTheFakeIsWordedAndKeepsTheRecordsMatching) {
  const struct {
    const char* what;
    const char* step;
    int error;
    int code;
    std::string words;  // a part of the message
  } allocations[] = {
      {"an injected EIO", steps::kManagedAllocate, EIO, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "the managed range could not be made: "},
      {"an injected ENOMEM", steps::kManagedAllocate, ENOMEM, ACL_ERROR_RT_MEMORY_ALLOCATION,
       "no memory for a managed allocation of 2097152 bytes"},
      {"an injected EAGAIN", steps::kManagedAllocate, EAGAIN, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
       "the managed-memory fault thread could not be created"},
  };
  for (const auto& c : allocations) {
    SCOPED_TRACE(c.what);
    testing::FakeRuntime f;
    f.recorder().arm(c.step, 1, c.error);
    auto base = f.managed.allocate(2 * kMiB);
    EXPECT_FALSE(f.recorder().armed(c.step)) << "the fake was not asked";
    EXPECT_EQ(base.status().code(), c.code) << base.status().message();
    EXPECT_NE(base.status().message().find(c.words), std::string::npos) << base.status().message();
    EXPECT_EQ(f.managed.live(), 0u);
    // Nothing in use: the whole window is still to be had.
    EXPECT_TRUE(f.managed.allocate(2 * kMiB).ok());
    f.device().expect_no_violations();
  }

  testing::FakeRuntime f;
  auto base = f.managed.allocate(4 * kMiB);
  ASSERT_TRUE(base.ok()) << base.status().message();
  const uint64_t at = *base;
  const struct {
    const char* what;
    const char* step;
    int error;
    Status (*call)(ManagedMemory&, uint64_t);
    int code;
    std::string message;
  } calls[] = {
      {"free", steps::kManagedFree, EIO, [](ManagedMemory& m, uint64_t va) { return m.free(va); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR,
       "the managed range at " + hex(at) + " could not be unmapped: errno 5"},
      {"advise", steps::kManagedAdvise, EIO,
       [](ManagedMemory& m, uint64_t va) { return m.advise(va, 4 * kMiB, 2, kDevice0); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "managed advice failed: errno 5"},
      {"prefetch", steps::kManagedPrefetch, EIO,
       [](ManagedMemory& m, uint64_t va) { return m.prefetch(va, 4 * kMiB, kDevice1); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "managed prefetch failed: errno 5"},
  };
  for (const auto& c : calls) {
    SCOPED_TRACE(c.what);
    f.recorder().arm(c.step, 1, c.error);
    const Status st = c.call(f.managed, at);
    EXPECT_FALSE(f.recorder().armed(c.step)) << "the fake was not asked";
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_EQ(st.message(), c.message);
    EXPECT_EQ(f.managed.live(), 1u) << "the range stays";
    EXPECT_TRUE(fake_holds(f, at));
    EXPECT_EQ(f.recorder().usage_sum(1), 0) << "nothing migrated";
    EXPECT_EQ(attribute(f, 4, at), 0) << "no preferred location was set";
  }
  // A prefetch that finds the device full: 207001, the pages stay where they were.
  vmm::PhysicalSpec all_of_1;
  all_of_1.device = 1;
  auto filler = f.vmm.malloc_physical(64 * kMiB, all_of_1);
  ASSERT_TRUE(filler.ok()) << filler.status().message();
  const Status full = f.managed.prefetch(at, 4 * kMiB, kDevice1);
  EXPECT_EQ(full.code(), ACL_ERROR_RT_MEMORY_ALLOCATION) << full.message();
  EXPECT_EQ(full.message(), "managed prefetch: a device has no room for a managed page");
  EXPECT_EQ(f.rt.pools[1]->used(), 64 * kMiB);
  ASSERT_TRUE(f.vmm.free_physical(*filler).ok());
  ASSERT_TRUE(f.managed.free(at).ok());
  EXPECT_FALSE(fake_holds(f, at));
  f.device().expect_no_violations();
}

TEST(ManagedFakeTest, TheCoresOwnChecksNeverReachTheFake) {
  dev::fake::FakeConfig small;
  small.managed_window_size = 8 * kMiB;
  testing::FakeRuntime f(small);
  auto held = f.managed.allocate(6 * kMiB);
  ASSERT_TRUE(held.ok()) << held.status().message();
  const uint64_t at = *held;
  const uint64_t past = at + 6 * kMiB;  // in the window, never allocated
  const struct {
    const char* what;
    Status (*call)(testing::FakeRuntime&, uint64_t at, uint64_t past);
    int code;
    std::string message;
  } cases[] = {
      {"more than the window",
       [](testing::FakeRuntime& f, uint64_t, uint64_t) {
         return f.managed.allocate(10 * kMiB).status();
       },
       ACL_ERROR_RT_MEMORY_ALLOCATION, "managed memory is limited to 8388608 bytes per process"},
      {"more than the window holds now",
       [](testing::FakeRuntime& f, uint64_t, uint64_t) {
         return f.managed.allocate(4 * kMiB).status();
       },
       ACL_ERROR_RT_MEMORY_ALLOCATION,
       "managed memory is limited to 8388608 bytes per process; 6291456 are in use"},
      {"a size that wraps",
       [](testing::FakeRuntime& f, uint64_t, uint64_t) { return f.managed.allocate(~0ull).status(); },
       ACL_ERROR_RT_MEMORY_ALLOCATION, "size is too large"},
      {"free inside a range",
       [](testing::FakeRuntime& f, uint64_t a, uint64_t) { return f.managed.free(a + kManagedPage); },
       ACL_ERROR_RT_PARAM_INVALID,
       hex(at + kManagedPage) + " is not the start of a managed allocation"},
      {"an unknown attribute",
       [](testing::FakeRuntime& f, uint64_t a, uint64_t) {
         return f.managed.attribute(9, a, kManagedPage, 1).status();
       },
       ACL_ERROR_RT_PARAM_INVALID, "unknown range attribute"},
      {"the attribute of pages never allocated",
       [](testing::FakeRuntime& f, uint64_t a, uint64_t) {
         return f.managed.attribute(1, a, 8 * kMiB, 1).status();
       },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, hex(past) + " is not inside a managed allocation"},
      {"more result slots than can be held",
       [](testing::FakeRuntime& f, uint64_t a, uint64_t) {
         return f.managed.attribute(3, a, kManagedPage, ~size_t{0}).status();
       },
       ACL_ERROR_RT_MEMORY_ALLOCATION,
       "18446744073709551615 result slots of attribute 3 are more than can be held"},
      {"no device backend",
       [](testing::FakeRuntime& f, uint64_t, uint64_t) {
         f.rt.device_backend = nullptr;
         const Status st = f.managed.allocate(kManagedPage).status();
         f.rt.device_backend = f.device().device();
         return st;
       },
       kAclInternalError, "managed memory found no device backend (the runtime is stopped)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    // Armed: a step still armed afterwards was never asked.
    for (const char* step : {steps::kManagedAllocate, steps::kManagedFree,
                             steps::kManagedAdvise, steps::kManagedPrefetch}) {
      f.recorder().arm(step, 1, EIO);
    }
    const Status st = c.call(f, at, past);
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_EQ(st.message(), c.message);
    EXPECT_TRUE(f.recorder().armed(steps::kManagedAllocate));
    EXPECT_TRUE(f.recorder().armed(steps::kManagedFree));
    EXPECT_EQ(f.managed.live(), 1u);
    EXPECT_FALSE(fake_holds(f, past));
  }
  for (const char* step : {steps::kManagedAllocate, steps::kManagedFree, steps::kManagedAdvise,
                           steps::kManagedPrefetch}) {
    f.recorder().arm(step, 0, 0);
  }
  EXPECT_TRUE(f.recorder().usage().empty()) << "no page was ever charged";
  ASSERT_TRUE(f.managed.free(at).ok());
  f.device().expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
