// The configuration is an immutable snapshot per start (src/runtime/config_snapshots.h): calls
// that read it on some threads while another finalises and re-initialises the runtime see one
// whole configuration, never one being replaced. Run under ThreadSanitizer by CI (the name has
// "Concurrency"): with the configuration assigned in place at each start, the readers' loads race
// the restart's stores.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"
#include "api/thread_test_util.h"

using namespace aclvmm_test;

namespace {

class ConfigSnapshotConcurrency : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int i = 0; i < 8 && aclFinalize() == ACL_SUCCESS; ++i) {
    }
    (void)aclGetRecentErrMsg();
  }
  // The same configuration at every start: what changes is only which snapshot is current.
  ScopedEnv soc_{"ACLVMM_SOC", "Ascend910B3"}, count_{"ACLVMM_DEVICE_COUNT", "4"},
      vis_{"ASCEND_RT_VISIBLE_DEVICES", "1,3"};
};

TEST_F(ConfigSnapshotConcurrency, ReadersSeeOneWholeConfigurationAcrossRestarts) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  const char* first = aclrtGetSocName();
  ASSERT_NE(first, nullptr);
  ASSERT_STREQ(first, "Ascend910B3");
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);

  const int restarts = kTsan ? 60 : 200;
  constexpr int kReaders = 3;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, running{0};
  Failures failures;
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      running.fetch_add(1);
      while (!done.load()) {
        // A call may start the runtime itself (calls work without aclInit), as it can between
        // an aclFinalize and the next aclInit.
        const char* soc = aclrtGetSocName();
        if (soc == nullptr || std::strcmp(soc, "Ascend910B3") != 0) {
          failures.add(std::string("aclrtGetSocName: ") + (soc ? soc : "NULL"));
        }
        uint32_t count = 0;
        const aclError e = aclrtGetDeviceCount(&count);
        if (e != ACL_SUCCESS || count != 2) {
          failures.add("aclrtGetDeviceCount: code " + std::to_string(e) + ", count " +
                       std::to_string(count));
        }
        reads.fetch_add(1);
      }
    });
  }
  while (running.load() < kReaders) std::this_thread::yield();
  // At least `restarts`, and on until the readers have read during them (a scheduler may let the
  // restarts run ahead); bounded, so a stuck reader fails the test instead of hanging it.
  int init_failures = 0, finalize_failures = 0;
  for (int i = 0; i < restarts || (reads.load() < 20 * kReaders && i < 100 * restarts); ++i) {
    init_failures += aclInit(nullptr) != ACL_SUCCESS;
    finalize_failures += aclFinalize() != ACL_SUCCESS;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(init_failures, 0);
  EXPECT_EQ(finalize_failures, 0);
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_GE(reads.load(), 20 * kReaders);
  // The name handed out before the restarts is still the application's to read.
  EXPECT_STREQ(first, "Ascend910B3");
}

}  // namespace
