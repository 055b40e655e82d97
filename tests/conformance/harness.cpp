#include "conformance/harness.h"

#include <dirent.h>

namespace aclvmm::conformance {

const std::vector<HarnessFactory>& harnesses() {
  static const std::vector<HarnessFactory> all = {
      {"emu", &make_emu_harness},
      {"fake", &make_fake_harness},
      {"hal", &make_hal_harness},
  };
  return all;
}

std::string harness_name(const ::testing::TestParamInfo<HarnessFactory>& info) {
  return info.param.name;
}

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

void BackendTest::SetUp() {
  harness_ = GetParam().make();
  ASSERT_NE(harness_, nullptr);
  if (const std::string why = harness_->unavailable(setup()); !why.empty()) GTEST_SKIP() << why;
  const dev::Result opened = harness_->open(setup(), &listener_, &backend_);
  ASSERT_TRUE(opened.ok()) << "open: errno " << opened.errno_value();
  ASSERT_NE(backend_, nullptr);
}

}  // namespace aclvmm::conformance
