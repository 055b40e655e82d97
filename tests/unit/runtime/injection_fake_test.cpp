// The core's failure-injection registry (src/runtime/injection.*): which names are backend
// steps, how a rule counts calls and fires once, what ACLVMM_FAULTS' reset keeps, the kinds a
// call counts against; and rules armed there reaching a device backend: the fake opened with the
// core's listener behind the injection decorator, as the runtime opens its backend, so a dev.*
// rule fails the fake's operation at its nth execution without the fake doing it.
#include "runtime/injection.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/injection_steps.h"
#include "runtime/core_listener.h"
#include "unit/testing/fake_device.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

class InjectionFakeTest : public ::testing::Test {
 protected:
  void TearDown() override {
    injection_reset({});
    for (const char* name : kNames) injection_arm(name, 0, 0);
    EXPECT_FALSE(injection_armed_flag().load()) << "a test left a rule armed";
  }
  static constexpr const char* kNames[] = {
      "aclrtMallocPhysical", "aclrtMapMem",       "aclrtFree",          steps::kPhysicalCreate,
      steps::kPhysicalRelease, steps::kShareExport, steps::kShareSetPids, steps::kShareImport,
      steps::kDeviceOpen};
};

TEST_F(InjectionFakeTest, BackendStepsAreNamedByTheirPrefix) {
  const struct {
    const char* name;
    bool step;
  } cases[] = {
      {"drv.map_cpu", true},        {"dev.mmu.map", true},     {"emu.cpu.map", true},
      {"host.shm.segment", true},   {"fake.anything", true},   {"hal.mem.alloc", true},
      {"aclrtMallocPhysical", false}, {"drv", false},          {"dev", false},
      {"", false},                  {"DRV.map_cpu", false},    {"emu_cpu.map", false},
      {"xdev.mmu.map", false},
  };
  for (const auto& c : cases) EXPECT_EQ(is_backend_step(c.name), c.step) << "\"" << c.name << "\"";
}

TEST_F(InjectionFakeTest, ARuleFailsItsNthCallOnceAndCountsOnlyItsName) {
  EXPECT_FALSE(injection_armed_flag().load());
  EXPECT_EQ(injection_check("aclrtMapMem"), 0) << "nothing armed";
  injection_arm("aclrtMapMem", 3, 207001);
  EXPECT_TRUE(injection_armed_flag().load());
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 3u);
  EXPECT_EQ(injection_check("aclrtFree"), 0) << "another name";
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 3u);
  EXPECT_EQ(injection_check("aclrtMapMem"), 0);
  EXPECT_EQ(injection_check("aclrtMapMem"), 0);
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 1u);
  EXPECT_EQ(injection_check("aclrtMapMem"), 207001);
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 0u) << "fired";
  EXPECT_EQ(injection_check("aclrtMapMem"), 0) << "once";
  EXPECT_FALSE(injection_armed_flag().load());

  // Arming again replaces the rule; nth 0 clears it.
  injection_arm("aclrtMapMem", 5, 1);
  injection_arm("aclrtMapMem", 2, 2);
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 2u);
  injection_arm("aclrtMapMem", 0, 0);
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 0u);
  EXPECT_FALSE(injection_armed_flag().load());
}

TEST_F(InjectionFakeTest, ThrowingAndReturningRulesCountOnlyTheirOwnKindOfCheck) {
  injection_arm("aclrtFree", 1, kInjectThrowLengthError);
  EXPECT_EQ(injection_check("aclrtFree"), 0) << "the runtime's check does not count a throw rule";
  EXPECT_EQ(injection_remaining("aclrtFree"), 1u);
  EXPECT_EQ(injection_check_throw("aclrtFree"), kInjectThrowLengthError);
  injection_arm("aclrtFree", 1, 207001);
  EXPECT_EQ(injection_check_throw("aclrtFree"), 0) << "the barrier does not count a code rule";
  EXPECT_EQ(injection_check("aclrtFree"), 207001);

  const struct {
    int code;
    bool throws;
  } kinds[] = {{kInjectThrowBadAlloc, true},     {kInjectThrowLengthError, true},
               {kInjectThrowSystemError, true},  {kInjectThrowRuntimeError, true},
               {kInjectThrowNonStandard, true},  {kInjectThrowNonStandard - 1, false},
               {0, false},                       {207001, false}};
  for (const auto& k : kinds) EXPECT_EQ(is_throw_injection(k.code), k.throws) << k.code;
}

TEST_F(InjectionFakeTest, AResetReplacesTheEnvironmentsRulesAndKeepsArmedOnes) {
  injection_arm("aclrtFree", 4, 1);  // aclvmmInjectFault
  injection_reset({{"aclrtMapMem", 2, 3}, {"aclrtMallocPhysical", 1, 4}});  // ACLVMM_FAULTS
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 2u);
  EXPECT_EQ(injection_remaining("aclrtMallocPhysical"), 1u);
  injection_reset({{"aclrtMallocPhysical", 3, 5}});
  EXPECT_EQ(injection_remaining("aclrtMapMem"), 0u) << "an old environment rule is gone";
  EXPECT_EQ(injection_remaining("aclrtMallocPhysical"), 3u);
  EXPECT_EQ(injection_remaining("aclrtFree"), 4u) << "an armed rule stays";
  injection_reset({});
  EXPECT_EQ(injection_remaining("aclrtMallocPhysical"), 0u);
  EXPECT_TRUE(injection_armed_flag().load()) << "aclrtFree's rule";
}

// Each dev.* step of an operation the fake performs, armed in the core's registry: the nth
// execution fails with the rule's errno, the fake holds nothing more for it, the next succeeds.
TEST_F(InjectionFakeTest, ADeviceStepRuleFailsTheFakesOperationAtItsNthExecution) {
  auto [first, second] = testing::fake_process_pair();
  testing::FakeDevice exporter(first, &core_listener());
  testing::FakeDevice importer(second, &core_listener());
  dev::DeviceBackend& be = *exporter.device();
  const dev::PhysicalSpec spec{dev::Location::device(0), dev::PageType::kHuge, dev::MemType::kHbm,
                               2 * dev::kMiB};
  std::vector<dev::PhysicalId> made;
  auto create = [&]() {
    dev::PhysicalId id;
    const dev::Result r = be.physical().create(spec, &id);
    if (r.ok()) made.push_back(id);
    return r;
  };
  auto release = [&]() {
    if (made.empty()) (void)create();
    const dev::Result r = be.physical().release(made.back());
    if (r.ok()) made.pop_back();
    return r;
  };
  auto share = [&]() {
    (void)create();
    dev::ShareToken token;
    return be.sharing().export_memory(made.back(), &token);
  };
  dev::ShareToken shared;
  {
    (void)create();
    ASSERT_TRUE(be.sharing().export_memory(made.back(), &shared).ok());
  }
  auto set_pids = [&]() {
    const int32_t pid = importer.config().pid;
    return be.sharing().set_pids(shared, &pid, 1);
  };
  std::vector<dev::PhysicalId> imported;
  auto import = [&]() {
    dev::ImportedMemory got;
    const dev::Result r = importer.device()->sharing().import_memory(shared, 0, &got);
    if (r.ok()) imported.push_back(got.memory);
    return r;
  };
  const struct {
    const char* step;
    std::function<dev::Result()> op;
  } cases[] = {{steps::kPhysicalCreate, create},
               {steps::kPhysicalRelease, release},
               {steps::kShareExport, share},
               {steps::kShareSetPids, set_pids},
               {steps::kShareImport, import}};
  for (const auto& c : cases) {
    for (uint32_t nth = 1; nth <= 3; ++nth) {
      injection_arm(c.step, nth, ENOSPC);
      for (uint32_t call = 1; call < nth; ++call) {
        ASSERT_TRUE(c.op().ok()) << c.step << " call " << call << " of " << nth;
      }
      const size_t before = exporter.fake().live_physical_objects() + importer.fake().live_physical_objects();
      const dev::Result failed = c.op();
      EXPECT_EQ(failed.errno_value(), ENOSPC) << c.step << " at " << nth;
      EXPECT_EQ(injection_remaining(c.step), 0u) << c.step;
      if (c.step != steps::kShareExport) {  // an export creates its object before it is refused
        EXPECT_EQ(exporter.fake().live_physical_objects() + importer.fake().live_physical_objects(),
                  before)
            << c.step << ": the refused call made or released nothing";
      }
      EXPECT_TRUE(c.op().ok()) << c.step << ": the rule fired once";
    }
  }
  for (dev::PhysicalId id : imported) EXPECT_TRUE(importer.device()->physical().release(id).ok());
  for (dev::PhysicalId id : made) EXPECT_TRUE(be.physical().release(id).ok());
  EXPECT_EQ(exporter.fake().live_physical_objects(), 0u);
  EXPECT_EQ(importer.fake().live_physical_objects(), 0u);
  exporter.expect_no_violations();
  importer.expect_no_violations();
}

// A rule under an ACL function's name never reaches a backend, and one under another backend's
// step name never fires in the fake.
TEST_F(InjectionFakeTest, OnlyTheStepsOwnNameFailsTheFake) {
  testing::FakeDevice device({}, &core_listener());
  injection_arm("aclrtMallocPhysical", 1, ENOMEM);
  injection_arm(steps::kDeviceOpen, 1, ENOMEM);
  dev::PhysicalId id;
  ASSERT_TRUE(device.device()
                  ->physical()
                  .create({dev::Location::device(1), dev::PageType::kHuge, dev::MemType::kHbm,
                           2 * dev::kMiB},
                          &id)
                  .ok());
  EXPECT_EQ(injection_remaining("aclrtMallocPhysical"), 1u);
  EXPECT_EQ(injection_remaining(steps::kDeviceOpen), 1u);
  EXPECT_EQ(device.device()->devices().open(1).errno_value(), ENOMEM);
  EXPECT_TRUE(device.device()->physical().release(id).ok());
  device.expect_no_violations();
}

}  // namespace
}  // namespace aclvmm
