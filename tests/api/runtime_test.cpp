// Devices, contexts and identity queries (behavior.md §0 device ids, §13; clients.md A19).
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/test_util.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // aclrtGetVersion, aclsysGetCANNVersion

using namespace aclvmm_test;

namespace {

// Runs fn on a fresh thread (which has no current context) and waits for it.
void on_new_thread(const std::function<void()>& fn) { std::thread(fn).join(); }

// ---------------------------------------------------------------------------------------------
// Devices and contexts (behavior.md §0 device ids, §13)

class RuntimeDevice : public AclTest {
 protected:
  int32_t count() {
    uint32_t n = 0;
    EXPECT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    return static_cast<int32_t>(n);
  }
};

TEST_F(RuntimeDevice, InvalidArguments) {
  const int32_t n = count();
  ASSERT_GE(n, 2);
  uint32_t u32 = 0;
  int32_t i32 = 0;
  aclrtContext ctx = nullptr;
  aclrtUuid uuid{};
  size_t sz = 0;
  char buf[ACL_PKG_VERSION_MAX_SIZE] = {0};
  char cann[] = "cann";
  aclrtRunMode mode;
  int forged_storage = 0;
  aclrtContext forged = &forged_storage;
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  } cases[] = {
      // §13 and §0 ACL layer: NULL outputs → 100000
      {"GetDeviceCount(NULL)", [] { return aclrtGetDeviceCount(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetDevice(NULL)", [] { return aclrtGetDevice(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetCurrentContext(NULL)", [] { return aclrtGetCurrentContext(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"CreateContext(NULL)", [] { return aclrtCreateContext(nullptr, 0); }, ACL_ERROR_INVALID_PARAM},
      {"DestroyContext(NULL)", [] { return aclrtDestroyContext(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"SetCurrentContext(NULL)", [] { return aclrtSetCurrentContext(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersion(NULL,..)", [&] { return aclrtGetVersion(nullptr, &i32, &i32); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersion(..,NULL,..)", [&] { return aclrtGetVersion(&i32, nullptr, &i32); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersion(..,NULL)", [&] { return aclrtGetVersion(&i32, &i32, nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersionStr(NULL,buf)", [&] { return aclsysGetVersionStr(nullptr, buf); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersionStr(cann,NULL)", [&] { return aclsysGetVersionStr(cann, nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersionNum(NULL,&n)", [&] { return aclsysGetVersionNum(nullptr, &i32); }, ACL_ERROR_INVALID_PARAM},
      {"GetVersionNum(cann,NULL)", [&] { return aclsysGetVersionNum(cann, nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetCANNVersion(NULL)", [] { return aclsysGetCANNVersion(ACL_PKG_NAME_CANN, nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetRunMode(NULL)", [] { return aclrtGetRunMode(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"DeviceGetUuid(0,NULL)", [] { return aclrtDeviceGetUuid(0, nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"GetMemInfo(free NULL)", [&] { return aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &sz); }, ACL_ERROR_INVALID_PARAM},
      {"GetMemInfo(total NULL)", [&] { return aclrtGetMemInfo(ACL_HBM_MEM, &sz, nullptr); }, ACL_ERROR_INVALID_PARAM},
      // §0: user device id <0 or >= count → 107001
      {"SetDevice(-1)", [] { return aclrtSetDevice(-1); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"SetDevice(count)", [&] { return aclrtSetDevice(n); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"SetDevice(64)", [] { return aclrtSetDevice(64); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"SetDevice(INT32_MAX)", [] { return aclrtSetDevice(INT32_MAX); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"ResetDevice(-1)", [] { return aclrtResetDevice(-1); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"ResetDeviceForce(count)", [&] { return aclrtResetDeviceForce(n); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"CreateContext(count)", [&] { return aclrtCreateContext(&ctx, n); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"DeviceGetUuid(-1)", [&] { return aclrtDeviceGetUuid(-1, &uuid); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"DeviceGetUuid(count)", [&] { return aclrtDeviceGetUuid(n, &uuid); }, ACL_ERROR_RT_INVALID_DEVICEID},
      // forged contexts → runtime RT_ERROR_INVALID_VALUE → 107000
      {"SetCurrentContext(forged)", [&] { return aclrtSetCurrentContext(forged); }, ACL_ERROR_RT_PARAM_INVALID},
      {"DestroyContext(forged)", [&] { return aclrtDestroyContext(forged); }, ACL_ERROR_RT_PARAM_INVALID},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
    const std::string msg = recent_msg();
    EXPECT_NE(msg.find(std::to_string(c.expected)), std::string::npos) << msg;
  }
  (void)u32;
  (void)mode;
  int32_t dev = -1;  // nothing above changed the current device
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
}

TEST_F(RuntimeDevice, SetDeviceMakesItCurrent) {
  int32_t dev = -1;
  ASSERT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 3);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(aclrtResetDevice(3), ACL_SUCCESS);
}

TEST_F(RuntimeDevice, ResetDeviceDropsReferences) {
  int32_t dev = -1;
  ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(2), ACL_SUCCESS);  // one reference left: still current
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 2);
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(2), ACL_SUCCESS);  // last reference: the default context goes
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);

  for (int i = 0; i < 3; ++i) ASSERT_EQ(aclrtSetDevice(4), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDeviceForce(4), ACL_SUCCESS);  // all references at once
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtSetDevice(4), ACL_SUCCESS);  // reopening works
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 4);
  EXPECT_EQ(aclrtResetDevice(4), ACL_SUCCESS);
}

TEST_F(RuntimeDevice, SynchronizeDeviceWithoutWork) {
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
}

// A19: aclrtGetCurrentContext returns a non-null context after aclrtSetDevice.
TEST_F(RuntimeDevice, CurrentContextAfterSetDevice) {
  aclrtContext c0 = nullptr, again = nullptr, c1 = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&c0), ACL_SUCCESS);
  EXPECT_NE(c0, nullptr);
  EXPECT_EQ(aclrtGetCurrentContext(&again), ACL_SUCCESS);
  EXPECT_EQ(again, c0);
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&c1), ACL_SUCCESS);
  EXPECT_NE(c1, nullptr);
  EXPECT_NE(c1, c0);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // the device's default context comes back
  EXPECT_EQ(aclrtGetCurrentContext(&again), ACL_SUCCESS);
  EXPECT_EQ(again, c0);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
}

TEST_F(RuntimeDevice, ContextLifecycle) {
  aclrtContext primary = nullptr, ctx = nullptr, cur = nullptr;
  int32_t dev = -1;
  ASSERT_EQ(aclrtGetCurrentContext(&primary), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&ctx, 1), ACL_SUCCESS);
  ASSERT_NE(ctx, nullptr);
  EXPECT_NE(ctx, primary);
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);  // a new context becomes current
  EXPECT_EQ(cur, ctx);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 1);

  // Memory allocated in the context is charged to its device.
  size_t free1 = 0, total = 0, free1_after = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total), ACL_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 4 * kMiB, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free1_after, &total), ACL_SUCCESS);
  EXPECT_LT(free1_after, free1);

  EXPECT_EQ(aclrtSetCurrentContext(primary), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  size_t free0 = 0;
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total), ACL_SUCCESS);
  EXPECT_EQ(free0, total);  // device 0 untouched
  EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, ctx);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);

  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);  // the current one was destroyed
  // A destroyed context is no longer a context (§0: RT_ERROR_INVALID_VALUE → 107000).
  EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtSetCurrentContext(primary), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
}

// ---------------------------------------------------------------------------------------------
// Version and identity queries (§13)

TEST_F(RuntimeDevice, VersionQueries) {
  int32_t major = -1, minor = -1, patch = -1;
  ASSERT_EQ(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
  EXPECT_EQ(major, 1);
  EXPECT_EQ(minor, 17);
  EXPECT_EQ(patch, 0);

  char cann[] = "cann";
  char str[ACL_PKG_VERSION_MAX_SIZE];
  std::memset(str, 0x7f, sizeof str);
  ASSERT_EQ(aclsysGetVersionStr(cann, str), ACL_SUCCESS);
  ASSERT_NE(std::memchr(str, '\0', sizeof str), nullptr);  // terminated inside the buffer
  const std::string version(str);
  ASSERT_FALSE(version.empty());
  EXPECT_TRUE(isdigit(static_cast<unsigned char>(version[0]))) << version;
  EXPECT_NE(version.find('.'), std::string::npos) << version;

  int32_t num = -1;
  ASSERT_EQ(aclsysGetVersionNum(cann, &num), ACL_SUCCESS);
  EXPECT_GT(num, 0);

  aclCANNPackageVersion v;
  std::memset(&v, 0x7f, sizeof v);
  ASSERT_EQ(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &v), ACL_SUCCESS);
  EXPECT_EQ(std::string(v.version), version);
  EXPECT_EQ(version.rfind(std::string(v.majorVersion) + ".", 0), 0u) << v.majorVersion;
  EXPECT_EQ(std::to_string(std::atoi(v.majorVersion)), std::string(v.majorVersion));

  aclrtRunMode mode = ACL_DEVICE;
  ASSERT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_HOST);
}

TEST_F(RuntimeDevice, UuidIsStableAndPerDevice) {
  const int32_t n = count();
  std::set<std::string> seen;
  for (int32_t d = 0; d < n; ++d) {
    SCOPED_TRACE(d);
    aclrtUuid a{}, b{};
    ASSERT_EQ(aclrtDeviceGetUuid(d, &a), ACL_SUCCESS);
    ASSERT_EQ(aclrtDeviceGetUuid(d, &b), ACL_SUCCESS);
    static_assert(sizeof a.bytes == 16, "16 raw bytes");
    EXPECT_EQ(std::memcmp(a.bytes, b.bytes, 16), 0);
    EXPECT_NE(std::string(a.bytes, 16), std::string(16, '\0'));
    seen.insert(std::string(a.bytes, 16));
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  // Stable across a runtime restart too.
  aclrtUuid before{}, after{};
  ASSERT_EQ(aclrtDeviceGetUuid(1, &before), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDeviceForce(0), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtDeviceGetUuid(1, &after), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(before.bytes, after.bytes, 16), 0);
}

// ---------------------------------------------------------------------------------------------
// A thread that never set a device has no current context (§13: 107002).

using RuntimeNoContextConcurrency = AclTest;

TEST_F(RuntimeNoContextConcurrency, CallsNeedingAContextFail) {
  void* dev_mem = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev_mem, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  aclrtContext main_ctx = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&main_ctx), ACL_SUCCESS);
  on_new_thread([&] {
    int32_t dev = -1;
    void* p = nullptr;
    aclrtContext ctx = nullptr;
    aclrtStream stream = nullptr;
    size_t f = 0, t = 0;
    char host[64] = {0};
    struct Case {
      const char* name;
      std::function<aclError()> call;
    } cases[] = {
        {"aclrtGetDevice", [&] { return aclrtGetDevice(&dev); }},
        {"aclrtGetCurrentContext", [&] { return aclrtGetCurrentContext(&ctx); }},
        {"aclrtSynchronizeDevice", [] { return aclrtSynchronizeDevice(); }},
        {"aclrtGetMemInfo", [&] { return aclrtGetMemInfo(ACL_HBM_MEM, &f, &t); }},
        {"aclrtMalloc", [&] { return aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST); }},
        {"aclrtMallocHost", [&] { return aclrtMallocHost(&p, 4096); }},
        {"aclrtCreateStream", [&] { return aclrtCreateStream(&stream); }},
        {"aclrtSynchronizeStream", [] { return aclrtSynchronizeStream(nullptr); }},
        {"aclrtMemcpy", [&] { return aclrtMemcpy(host, sizeof host, dev_mem, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST); }},
        {"aclrtMemset", [&] { return aclrtMemset(dev_mem, 4096, 1, 64); }},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      EXPECT_EQ(c.call(), ACL_ERROR_RT_CONTEXT_NULL);
      EXPECT_NE(recent_msg().find(c.name), std::string::npos);
    }
    // Adopting the main thread's context makes the same calls work on this thread.
    ASSERT_EQ(aclrtSetCurrentContext(main_ctx), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(aclrtMemset(dev_mem, 4096, 0x42, 64), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(host, sizeof host, dev_mem, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(std::string(host, 64), std::string(64, '\x42'));
  });
  EXPECT_EQ(aclrtFree(dev_mem), ACL_SUCCESS);
}

}  // namespace
