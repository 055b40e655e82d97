// The core's BackendListener (src/runtime/core_listener.h): a device backend's injection points
// answered from the core's rule registry, under the current step names and under the legacy
// drv.* names of the same work; the usage a backend reports; the backend the runtime opens.
#include "runtime/core_listener.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "drivers/injection_steps.h"
#include "runtime/injection.h"

namespace aclvmm {
namespace {

namespace steps = dev::steps;

class CoreListenerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"drv.map_cpu", "emu.cpu.map", "drv.create_physical",
                             "dev.phys.create", "emu.memfd.create"}) {
      injection_arm(name, 0, 0);
    }
  }
  CoreListener& listener() { return core_listener(); }
};

TEST_F(CoreListenerTest, ARuleFiresUnderItsNameAndItsLegacyName) {
  EXPECT_FALSE(listener().injection_armed().load());
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "nothing armed";
  injection_arm("drv.map_cpu", 2, ENOMEM);
  EXPECT_TRUE(listener().injection_armed().load());
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "the first execution counts";
  EXPECT_EQ(injection_remaining("drv.map_cpu"), 1u);
  EXPECT_EQ(listener().injected(steps::kEmuCpuUnmap), 0) << "another step is not counted";
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), ENOMEM);
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), 0) << "a rule fires once";
  EXPECT_FALSE(listener().injection_armed().load());

  injection_arm("emu.cpu.map", 1, EIO);
  EXPECT_EQ(listener().injected(steps::kEmuCpuMap), EIO);
  injection_arm("dev.phys.create", 1, ENOSPC);
  EXPECT_EQ(listener().injected(steps::kPhysicalCreate), ENOSPC);
}

TEST_F(CoreListenerTest, TheOpenedBackendReportsItsUsageAndAsksTheRegistry) {
  Config config;
  config.device_count = 2;
  config.device_memory = 0;  // the SoC's size
  config.product.memory_bytes = 64 * dev::kMiB;
  auto opened = open_device(config);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::shared_ptr<dev::DeviceBackend> be = *opened;
  dev::MemoryInfo info;
  ASSERT_TRUE(be->devices().memory_info(1, dev::MemoryKind::kHbm, &info).ok());
  EXPECT_EQ(info.total, 64 * dev::kMiB);

  const int64_t before = listener().reported_usage(1);
  dev::PhysicalId id;
  const dev::PhysicalSpec spec{dev::Location::device(1), dev::PageType::kHuge, dev::MemType::kHbm,
                               4 * dev::kMiB};
  ASSERT_TRUE(be->physical().create(spec, &id).ok());
  EXPECT_EQ(listener().reported_usage(1), before + static_cast<int64_t>(4 * dev::kMiB));
  ASSERT_TRUE(be->physical().release(id).ok());
  EXPECT_EQ(listener().reported_usage(1), before);

  // A legacy rule reaches the backend's inner step through the listener.
  injection_arm("drv.create_physical", 1, EMFILE);
  EXPECT_EQ(be->physical().create(spec, &id), dev::Result::from_errno(EMFILE));
  EXPECT_EQ(listener().reported_usage(1), before) << "the failed create gave its charge back";
  ASSERT_TRUE(be->physical().create(spec, &id).ok());
  ASSERT_TRUE(be->physical().release(id).ok());
}

}  // namespace
}  // namespace aclvmm
