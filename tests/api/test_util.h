// Shared helpers of the API and integration tests.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

#include "acl/acl.h"
#include "aclvmm/aclvmm.h"

namespace aclvmm_test {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kGiB = size_t(1) << 30;
constexpr size_t k2M = 2 * kMiB;

inline aclrtPhysicalMemProp device_prop(uint32_t device = 0, aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  aclrtPhysicalMemProp p{};
  p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  p.memAttr = attr;
  p.location.id = device;
  p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  p.reserve = 0;
  return p;
}

inline aclrtPhysicalMemProp host_prop(aclrtMemAttr attr = ACL_MEM_HUGE) {
  aclrtPhysicalMemProp p = device_prop(0, attr);
  p.location.type = ACL_MEM_LOCATION_TYPE_HOST;
  return p;
}

// aclInit + aclrtSetDevice(0) before each test, and aclFinalize after it, so every test starts
// from a fresh runtime (aclFinalize releases whatever a test leaked).
class AclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    (void)aclGetRecentErrMsg();
  }
  void TearDown() override {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }

  // A physical handle of `size` bytes on device 0 (fails the test otherwise).
  aclrtDrvMemHandle make_handle(size_t size = k2M, uint32_t device = 0) {
    aclrtPhysicalMemProp p = device_prop(device);
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMallocPhysical(&h, size, &p, 0), ACL_SUCCESS);
    return h;
  }
  void* reserve(size_t size) {
    void* va = nullptr;
    EXPECT_EQ(aclrtReserveMemAddress(&va, size, 0, nullptr, 0), ACL_SUCCESS);
    return va;
  }
};

// Runs `fn` in a forked child; returns the terminating signal (0 if it exited) and stores the exit
// code. The child must not return into gtest.
struct ChildResult {
  int signal = 0;
  int exit_code = -1;
};
inline ChildResult run_in_child(const std::function<int()>& fn) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int code = fn();
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ChildResult r;
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

// Byte helpers.
inline std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  return s;
}

}  // namespace aclvmm_test
