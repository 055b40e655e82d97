// aclvmm_fake_hal_tests' main: GoogleTest, or a child role (children.cpp) when the first
// argument is --fake-hal-child=<role> (the tests run this binary again as a second process).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

int fakehal_test_child_main(int argc, char** argv);

#if defined(__SANITIZE_THREAD__)
// The library's state lives as long as the process (as the driver's does): the emulator's share
// listener, once it has nothing to serve, ends without being joined. That is no leak to report.
extern "C" const char* __tsan_default_options() { return "report_thread_leaks=0"; }
#endif

int main(int argc, char** argv) {
  if (argc >= 2 && std::strncmp(argv[1], "--fake-hal-child=", 17) == 0) {
    return fakehal_test_child_main(argc, argv);
  }
  // The cases assume the library's defaults (8 x Ascend910B1, 64 GiB, no rules); the library
  // reads its environment at the first call, which has not happened yet.
  for (const char* name : {"ACLVMM_SOC", "ACLVMM_DEVICE_COUNT", "ACLVMM_DEVICE_MEMORY",
                           "ACLVMM_HOST_ACCESS", "ACLVMM_HOST_NUMA", "ACLVMM_SERVER_ID",
                           "ACLVMM_HAL_FAULTS", "ACLVMM_HAL_FAKE_VERBOSE"}) {
    unsetenv(name);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
