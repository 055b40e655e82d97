// What the hal-path tests share: the runtime started over the fake driver library with a given
// set of hidden functions, and the fake's fault injection, resolved by name as a caller that
// does not know whether it runs on the fake must (drivers/hal/fake/fake_hal_ext.h).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "acl/acl.h"

namespace aclvmm_hal_test {

inline constexpr aclError kOk = ACL_SUCCESS;
inline constexpr size_t k2M = size_t{2} << 20;

// Every test starts the runtime with ACLVMM_DRIVER=hal over the fake (the ctest environment
// names the library) and ACLVMM_HAL_HIDE = `hide`, and finalizes it afterwards.
class HalTest : public ::testing::Test {
 protected:
  void start(const char* hide = "") {
    ASSERT_EQ(::setenv("ACLVMM_HAL_HIDE", hide, 1), 0);
    ASSERT_EQ(aclInit(nullptr), kOk) << aclGetRecentErrMsg();
    started_ = true;
  }
  void TearDown() override {
    clear_injections();
    if (started_) (void)aclFinalize();
    ::unsetenv("ACLVMM_HAL_HIDE");
  }
  // The fake's calls of `function` fail with `error` after `skip` passing calls, `count` times.
  static void inject(const char* function, unsigned error, unsigned skip = 0, unsigned count = 1) {
    using Inject = int (*)(const char*, unsigned, unsigned, unsigned);
    auto fn = reinterpret_cast<Inject>(::dlsym(RTLD_DEFAULT, "aclvmmFakeHalInject"));
    ASSERT_NE(fn, nullptr) << "the fake driver library is not loaded";
    ASSERT_EQ(fn(function, skip, count, error), 0) << function;
  }
  static void clear_injections() {
    using Clear = void (*)();
    if (auto fn = reinterpret_cast<Clear>(::dlsym(RTLD_DEFAULT, "aclvmmFakeHalClearInjections"))) {
      fn();
    }
  }
  static std::string message() {
    const char* m = aclGetRecentErrMsg();
    return m != nullptr ? m : "";
  }
  static aclrtPhysicalMemProp device_prop(int device = 0) {
    aclrtPhysicalMemProp p{};
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = static_cast<uint32_t>(device);
    return p;
  }
  bool started_ = false;
};

}  // namespace aclvmm_hal_test
