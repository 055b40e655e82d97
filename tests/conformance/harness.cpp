#include "conformance/harness.h"

namespace aclvmm::conformance {

const std::vector<HarnessFactory>& harnesses() {
  static const std::vector<HarnessFactory> all = {
      {"emu", &make_emu_harness},
      {"fake", &make_fake_harness},
  };
  return all;
}

std::string harness_name(const ::testing::TestParamInfo<HarnessFactory>& info) {
  return info.param.name;
}

void BackendTest::SetUp() {
  harness_ = GetParam().make();
  ASSERT_NE(harness_, nullptr);
  const dev::Result opened = harness_->open(setup(), &listener_, &backend_);
  ASSERT_TRUE(opened.ok()) << "open: errno " << opened.errno_value();
  ASSERT_NE(backend_, nullptr);
}

}  // namespace aclvmm::conformance
