// aclInit / aclFinalize and configuration from the environment (behavior.md decisions + §13;
// emulation.md §2, §7; clients.md A19).
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "api/test_env.h"
#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

// No runtime initialised by the fixture; the configuration variables are unset for the test (the
// runtime reads them at its start) and restored afterwards. TearDown drops any init reference a
// failed assertion left behind, so the next test starts from a stopped runtime.
class RuntimeLifecycle : public ::testing::Test {
 protected:
  void SetUp() override { (void)aclGetRecentErrMsg(); }
  void TearDown() override {
    for (int i = 0; i < 8 && aclFinalize() == ACL_SUCCESS; ++i) {
    }
    (void)aclGetRecentErrMsg();
  }
  ScopedEnv soc_{"ACLVMM_SOC", nullptr}, count_{"ACLVMM_DEVICE_COUNT", nullptr},
      mem_{"ACLVMM_DEVICE_MEMORY", nullptr}, vis_{"ASCEND_RT_VISIBLE_DEVICES", nullptr},
      access_{"ACLVMM_HOST_ACCESS", nullptr}, quirks_{"ACLVMM_QUIRKS", nullptr},
      injections_{"ACLVMM_FAULTS", nullptr};
};
using RuntimeEnv = RuntimeLifecycle;

// ---------------------------------------------------------------------------------------------
// aclInit / aclFinalize (behavior.md decisions at the top and §13)

TEST_F(RuntimeLifecycle, FinalizeWithoutInitIsRepeatFinalize) {
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);  // A19: finalize twice
}

TEST_F(RuntimeLifecycle, InitTwiceCountsOneMoreReference) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* p = nullptr;
  void* leaked = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&leaked, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  // First finalize drops the extra reference only: the runtime and its allocations stay.
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(p, 4096, 0x11, 4096), ACL_SUCCESS);
  std::string back(4096, '\0');
  EXPECT_EQ(aclrtMemcpy(&back[0], back.size(), p, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, std::string(4096, '\x11'));
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  // The last one finalises and releases what was still held.
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(leaked), ACL_ERROR_RT_PARAM_INVALID);  // gone with the old runtime
  size_t free_b = 0, total = 0;
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total), ACL_SUCCESS);
  EXPECT_EQ(free_b, total);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST_F(RuntimeLifecycle, InitWithConfigFile) {
  const std::string good = temp_file(R"({"err_msg_mode":"0","dump":{"dump_path":"/tmp"}})");
  struct Case {
    const char* name;
    std::string path;
    aclError expected;
  } cases[] = {
      // §13: a readable JSON file is accepted; unreadable path → 100003; bad JSON → 100006.
      {"valid json", good, ACL_SUCCESS},
      {"missing file", "/nonexistent/aclvmm/acl.json", ACL_ERROR_INVALID_FILE},
      {"directory path component", good + "/x.json", ACL_ERROR_INVALID_FILE},
      {"unterminated object", temp_file(R"({"dump":{"dump_path":"/tmp"})"), ACL_ERROR_PARSE_FILE},
      {"trailing comma", temp_file(R"({"err_msg_mode":"0",})"), ACL_ERROR_PARSE_FILE},
      {"not json", temp_file("this is not json"), ACL_ERROR_PARSE_FILE},
      {"garbage after object", temp_file(R"({"a":1} {"b":2})"), ACL_ERROR_PARSE_FILE},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclInit(c.path.c_str()), c.expected);
    if (c.expected == ACL_SUCCESS) {
      EXPECT_EQ(aclrtGetSocName() != nullptr, true);
      EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    } else {
      EXPECT_NE(recent_msg().find(std::to_string(c.expected)), std::string::npos);
      EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);  // a failed aclInit initialises nothing
    }
  }
  for (const Case& c : cases) unlink(c.path.c_str());
}

TEST_F(RuntimeLifecycle, SecondInitWithDifferentConfigIsInvalidParam) {
  const std::string a = temp_file(R"({"err_msg_mode":"0","dump":{"dump_path":"/tmp"}})");
  const std::string b = temp_file(R"({"err_msg_mode":"1"})");
  ASSERT_EQ(aclInit(a.c_str()), ACL_SUCCESS);
  EXPECT_EQ(aclInit(b.c_str()), ACL_ERROR_INVALID_PARAM);              // §13: content differs
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_INVALID_PARAM);                // no config differs too
  EXPECT_EQ(aclInit(a.c_str()), ACL_ERROR_REPEAT_INITIALIZE);          // same content: counted
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);  // the rejected calls took no reference
  unlink(a.c_str());
  unlink(b.c_str());
}

// ---------------------------------------------------------------------------------------------
// Configuration from the environment (emulation.md §7: a malformed value is an error at aclInit
// naming the variable; ACL-layer parameter error 100000)

TEST_F(RuntimeEnv, MalformedValuesFailInit) {
  struct Case {
    const char* var;
    const char* value;
  } cases[] = {
      {"ACLVMM_DEVICE_COUNT", "0"},     {"ACLVMM_DEVICE_COUNT", "abc"},
      {"ACLVMM_DEVICE_COUNT", "65"},    {"ACLVMM_SOC", "Ascend999"},
      {"ACLVMM_HOST_ACCESS", "maybe"},  {"ACLVMM_QUIRKS", "x"},
      {"ACLVMM_FAULTS", "bad"},         {"ACLVMM_DEVICE_MEMORY", "12Q"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.var) + "=" + c.value);
    {
      ScopedEnv env(c.var, c.value);
      EXPECT_EQ(aclInit(nullptr), ACL_ERROR_INVALID_PARAM);
      const std::string msg = recent_msg();
      EXPECT_NE(msg.find(c.var), std::string::npos) << msg;
      EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    }
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);  // variable unset again: starts normally
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }
}

TEST_F(RuntimeEnv, DeviceCount) {
  struct Case {
    const char* name;
    const char* count;    // ACLVMM_DEVICE_COUNT (nullptr: unset)
    const char* visible;  // ASCEND_RT_VISIBLE_DEVICES (nullptr: unset)
    aclError code;
    uint32_t expected;
  } cases[] = {
      {"default", nullptr, nullptr, ACL_SUCCESS, 8},
      {"count 3", "3", nullptr, ACL_SUCCESS, 3},
      {"count 1", "1", nullptr, ACL_SUCCESS, 1},
      {"count 64", "64", nullptr, ACL_SUCCESS, 64},
      {"visible 1,3", nullptr, "1,3", ACL_SUCCESS, 2},
      {"visible 0", nullptr, "0", ACL_SUCCESS, 1},
      // behavior.md §0: ids must be ascending; an invalid list → 107001 naming the variable.
      {"visible 3,1", nullptr, "3,1", ACL_ERROR_RT_INVALID_DEVICEID, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScopedEnv e1("ACLVMM_DEVICE_COUNT", c.count), e2("ASCEND_RT_VISIBLE_DEVICES", c.visible);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    uint32_t n = 12345;
    EXPECT_EQ(aclrtGetDeviceCount(&n), c.code);
    if (c.code == ACL_SUCCESS) {
      EXPECT_EQ(n, c.expected);
      EXPECT_EQ(aclrtSetDevice(static_cast<int32_t>(n) - 1), ACL_SUCCESS);
      EXPECT_EQ(aclrtSetDevice(static_cast<int32_t>(n)), ACL_ERROR_RT_INVALID_DEVICEID);
      EXPECT_EQ(aclrtResetDeviceForce(static_cast<int32_t>(n) - 1), ACL_SUCCESS);
    } else {
      EXPECT_NE(recent_msg().find("ASCEND_RT_VISIBLE_DEVICES"), std::string::npos);
    }
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }
}

TEST_F(RuntimeEnv, VisibleDevicesRenumber) {
  aclrtUuid phys3{};
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtDeviceGetUuid(3, &phys3), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);

  ScopedEnv vis("ASCEND_RT_VISIBLE_DEVICES", "1,3");
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  aclrtUuid user1{};
  EXPECT_EQ(aclrtDeviceGetUuid(1, &user1), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(user1.bytes, phys3.bytes, sizeof user1.bytes), 0);  // user 1 is device 3
  EXPECT_EQ(aclrtSetDevice(2), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  int32_t dev = -1;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

// aclrtGetSocName works before any device is set; the SoC decides the HBM size (emulation.md §2).
TEST_F(RuntimeEnv, SocNameAndMemorySize) {
  struct Case {
    const char* soc;  // nullptr: default
    const char* memory;
    const char* expected_soc;
    size_t expected_total;
  } cases[] = {
      {nullptr, nullptr, "Ascend910B1", 64 * kGiB},
      {"Ascend910B4", nullptr, "Ascend910B4", 32 * kGiB},
      {"Ascend910B1", "8G", "Ascend910B1", 8 * kGiB},
      {"Ascend910B4", "1536M", "Ascend910B4", 1536 * kMiB},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.expected_soc) + (c.memory ? std::string(" mem ") + c.memory : ""));
    ScopedEnv e1("ACLVMM_SOC", c.soc), e2("ACLVMM_DEVICE_MEMORY", c.memory);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    const char* soc = aclrtGetSocName();
    ASSERT_NE(soc, nullptr);
    EXPECT_STREQ(soc, c.expected_soc);
    for (int32_t d : {0, 7}) {
      ASSERT_EQ(aclrtSetDevice(d), ACL_SUCCESS);
      size_t free_b = 0, total = 0;
      for (aclrtMemAttr attr : {ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G}) {
        EXPECT_EQ(aclrtGetMemInfo(attr, &free_b, &total), ACL_SUCCESS);
        EXPECT_EQ(total, c.expected_total);
        EXPECT_EQ(free_b, c.expected_total);
      }
      EXPECT_EQ(aclrtResetDevice(d), ACL_SUCCESS);
    }
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }
}

}  // namespace
