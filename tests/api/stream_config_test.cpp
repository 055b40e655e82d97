// aclrtCreateStreamWithConfig (runtime-extra.md §2, §10): the checks in the spec's order with
// their exact codes (one table row per check, products switched with ACLVMM_SOC), the flags that
// are accepted (FAST_LAUNCH, FAST_SYNC, HUGE off INF, bits above 0x3F) with any priority, and
// that such a stream works like an aclrtCreateStream stream: copies, fills, kernels,
// synchronisation, destruction.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "api/test_env.h"
#include "api/test_util.h"
#include "unit/testing/product_families.h"

using namespace aclvmm_test;

namespace {

constexpr const char* kConfigInfSoc = "Ascend310P3";  // the INF family: no huge streams

// `call` on a new thread, which has no current context.
aclError config_on_bare_thread(const std::function<aclError()>& call) {
  aclError rc = -1;
  std::thread([&] { rc = call(); }).join();
  return rc;
}

// aclrtCreateStreamWithConfig; a stream it hands out despite `want` != 0 is destroyed.
aclError config_create(uint32_t priority, uint32_t flag) {
  aclrtStream s = nullptr;
  const aclError rc = aclrtCreateStreamWithConfig(&s, priority, flag);
  if (rc != kOk && s != nullptr) {
    ADD_FAILURE() << "a failed call handed out a stream";
  }
  if (s != nullptr) {
    EXPECT_EQ(aclrtDestroyStream(s), kOk);
  }
  return rc;
}

void config_count_kernel(aclvmmKernelContext*, void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

// The stream works: H2D, fill, kernel, D2H in order; synchronisation (plain and timed) returns 0
// with every byte in place; destruction succeeds and the handle is then dead.
void config_exercise(aclrtStream s, char* d, char* host, unsigned seed) {
  constexpr size_t n = 8192;
  const std::string pat = pattern(n, seed);
  std::memcpy(host, pat.data(), n);
  std::atomic<int> ran{0};
  ASSERT_EQ(aclrtMemcpyAsync(d, n, host, n, ACL_MEMCPY_HOST_TO_DEVICE, s), kOk);
  ASSERT_EQ(aclrtMemsetAsync(d + 100, n - 100, 0xa5, 50, s), kOk);
  ASSERT_EQ(aclvmmLaunchKernel(s, config_count_kernel, &ran), kOk);
  ASSERT_EQ(aclrtMemcpyAsync(host + n, n, d, n, ACL_MEMCPY_DEVICE_TO_HOST, s), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  std::string want = pat;
  want.replace(100, 50, std::string(50, '\xa5'));
  EXPECT_TRUE(std::string(host + n, n) == want) << "the stream's work did not land";
  EXPECT_EQ(ran.load(), 1);
  ASSERT_EQ(aclrtMemsetAsync(d, n, 0x5a, 16, s), kOk);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 5000), kOk);
  EXPECT_EQ(get(d, 16), std::string(16, '\x5a'));
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kRtParam) << "the destroyed stream is still live";
}

struct ConfigMisuseRow {
  const char* name;
  const char* soc;  // nullptr: the default product (A2)
  std::function<aclError()> call;
  aclError want;
};

using StreamConfigTest = AllocTest;

// §2 checks in order, one row per check; the rows after the first of a check show that it comes
// before the later ones (a later check's misuse in the same call, or no context).
TEST_F(StreamConfigTest, ChecksInOrder) {
  constexpr uint32_t kUseOnly = ACL_STREAM_DEVICE_USE_ONLY;
  const ConfigMisuseRow rows[] = {
      // 1. stream == NULL
      {"NULL", nullptr, [] { return aclrtCreateStreamWithConfig(nullptr, 0, 0); }, kParam},
      {"NULL with DEVICE_USE_ONLY|FAST_LAUNCH", nullptr,
       [] { return aclrtCreateStreamWithConfig(nullptr, 0, kUseOnly | ACL_STREAM_FAST_LAUNCH); }, kParam},
      {"NULL with PERSISTENT", nullptr,
       [] { return aclrtCreateStreamWithConfig(nullptr, 0, ACL_STREAM_PERSISTENT); }, kParam},
      {"NULL without a context", nullptr,
       [] { return config_on_bare_thread([] { return aclrtCreateStreamWithConfig(nullptr, 0, 0); }); },
       kParam},
      {"NULL with HUGE on INF", kConfigInfSoc,
       [] { return aclrtCreateStreamWithConfig(nullptr, 0, ACL_STREAM_HUGE); }, kParam},
      // 2. HUGE on INF
      {"HUGE on INF", kConfigInfSoc, [] { return config_create(0, ACL_STREAM_HUGE); }, kNotSupported},
      {"HUGE|FAST_LAUNCH on INF", kConfigInfSoc,
       [] { return config_create(3, ACL_STREAM_HUGE | ACL_STREAM_FAST_LAUNCH); }, kNotSupported},
      {"HUGE|DEVICE_USE_ONLY on INF", kConfigInfSoc,
       [] { return config_create(0, ACL_STREAM_HUGE | kUseOnly); }, kNotSupported},
      {"HUGE on INF without a context", kConfigInfSoc,
       [] { return config_on_bare_thread([] { return config_create(0, ACL_STREAM_HUGE); }); },
       kNotSupported},
      // 3. DEVICE_USE_ONLY with another known flag
      {"DEVICE_USE_ONLY|FAST_LAUNCH", nullptr,
       [] { return config_create(0, kUseOnly | ACL_STREAM_FAST_LAUNCH); }, kRtParam},
      {"DEVICE_USE_ONLY|FAST_SYNC", nullptr, [] { return config_create(0, kUseOnly | ACL_STREAM_FAST_SYNC); },
       kRtParam},
      {"DEVICE_USE_ONLY|PERSISTENT", nullptr,
       [] { return config_create(0, kUseOnly | ACL_STREAM_PERSISTENT); }, kRtParam},
      {"DEVICE_USE_ONLY|HUGE", nullptr, [] { return config_create(0, kUseOnly | ACL_STREAM_HUGE); },
       kRtParam},
      {"DEVICE_USE_ONLY|CPU_SCHEDULE", nullptr,
       [] { return config_create(0, kUseOnly | ACL_STREAM_CPU_SCHEDULE); }, kRtParam},
      {"DEVICE_USE_ONLY|FAST_LAUNCH without a context", nullptr,
       [] {
         return config_on_bare_thread([] { return config_create(0, kUseOnly | ACL_STREAM_FAST_LAUNCH); });
       },
       kRtParam},
      // 4. no context
      {"0 without a context", nullptr,
       [] { return config_on_bare_thread([] { return config_create(0, 0); }); }, kNoContext},
      {"FAST_LAUNCH without a context", nullptr,
       [] { return config_on_bare_thread([] { return config_create(0, ACL_STREAM_FAST_LAUNCH); }); },
       kNoContext},
      {"PERSISTENT without a context", nullptr,
       [] { return config_on_bare_thread([] { return config_create(0, ACL_STREAM_PERSISTENT); }); },
       kNoContext},
      {"DEVICE_USE_ONLY without a context", nullptr,
       [] { return config_on_bare_thread([] { return config_create(0, kUseOnly); }); }, kNoContext},
      // 5. aclvmm: the stream kinds that are not emulated
      {"PERSISTENT", nullptr, [] { return config_create(0, ACL_STREAM_PERSISTENT); }, kNotSupported},
      {"CPU_SCHEDULE", nullptr, [] { return config_create(0, ACL_STREAM_CPU_SCHEDULE); }, kNotSupported},
      {"DEVICE_USE_ONLY", nullptr, [] { return config_create(0, kUseOnly); }, kNotSupported},
      {"PERSISTENT|FAST_LAUNCH", nullptr,
       [] { return config_create(0, ACL_STREAM_PERSISTENT | ACL_STREAM_FAST_LAUNCH); }, kNotSupported},
      {"CPU_SCHEDULE|HUGE", nullptr, [] { return config_create(0, ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_HUGE); },
       kNotSupported},
      // bits above 0x3F are ignored: DEVICE_USE_ONLY with them is DEVICE_USE_ONLY alone
      {"DEVICE_USE_ONLY|0x40", nullptr, [] { return config_create(0, kUseOnly | 0x40u); }, kNotSupported},
      {"DEVICE_USE_ONLY|0x80000000", nullptr, [] { return config_create(0, kUseOnly | 0x80000000u); },
       kNotSupported},
      {"PERSISTENT on INF", kConfigInfSoc, [] { return config_create(0, ACL_STREAM_PERSISTENT); },
       kNotSupported},
  };
  for (const ConfigMisuseRow& r : rows) {
    SCOPED_TRACE(r.name);
    if (r.soc == nullptr) {
      EXPECT_EQ(r.call(), r.want);
      continue;
    }
    ScopedEnvRuntime env("ACLVMM_SOC", r.soc);
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(r.call(), r.want);
  }
}

// FAST_LAUNCH, FAST_SYNC, HUGE (off INF), bits above 0x3F, and any priority: the stream is
// created and works like any other.
TEST_F(StreamConfigTest, AcceptedFlagsAndPrioritiesGiveAWorkingStream) {
  char* d = dev(8192);
  char* host = pinned(2 * 8192);
  const struct {
    uint32_t priority;
    uint32_t flag;
  } rows[] = {
      {0, 0},
      {0, ACL_STREAM_FAST_LAUNCH},
      {0, ACL_STREAM_FAST_SYNC},
      {0, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC},
      {0, ACL_STREAM_HUGE},
      {0, ACL_STREAM_HUGE | ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC},
      {0, 0x40},
      {0, 0xFFFFFFC0u},
      {0, ACL_STREAM_FAST_LAUNCH | 0x100u},
      {7, ACL_STREAM_FAST_LAUNCH},
      {8, ACL_STREAM_FAST_SYNC},
      {1000, 0},
      {UINT32_MAX, ACL_STREAM_HUGE},
  };
  unsigned seed = 1;
  for (const auto& r : rows) {
    SCOPED_TRACE(::testing::Message() << "priority " << r.priority << " flag 0x" << std::hex << r.flag);
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStreamWithConfig(&s, r.priority, r.flag), kOk);
    ASSERT_NE(s, nullptr);
    config_exercise(s, d, host, seed++);
  }
}

// HUGE is refused on INF only (§10); elsewhere the stream is created and works.
TEST_F(StreamConfigTest, HugeIsRefusedOnInfOnly) {
  const aclError want[] = {kOk, kOk, kOk, kOk, kNotSupported, kOk};  // 950 A3 A2 EDGE INF TRAIN
  size_t i = 0;
  for (const char* soc : aclvmm::testing::kFamilySoc) {
    SCOPED_TRACE(soc);
    ScopedEnvRuntime env("ACLVMM_SOC", soc);
    ASSERT_TRUE(env.ok());
    aclrtStream s = nullptr;
    EXPECT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_HUGE), want[i]);
    if (want[i] == kNotSupported) {
      EXPECT_EQ(s, nullptr);
      // the other flags still work there
      ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC), kOk);
    }
    ASSERT_NE(s, nullptr);
    void* d = nullptr;
    void* host = nullptr;
    ASSERT_EQ(aclrtMalloc(&d, 8192, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    ASSERT_EQ(aclrtMallocHost(&host, 2 * 8192), kOk);
    config_exercise(s, static_cast<char*>(d), static_cast<char*>(host), 100 + static_cast<unsigned>(i));
    EXPECT_EQ(aclrtFree(d), kOk);
    EXPECT_EQ(aclrtFreeHost(host), kOk);
    ++i;
  }
}

// The stream belongs to the context current at its creation: destroying that context destroys
// it, and it is not the other context's default stream.
TEST_F(StreamConfigTest, TheStreamBelongsToTheCurrentContext) {
  aclrtContext primary = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&primary), kOk);
  aclrtContext other = nullptr;
  ASSERT_EQ(aclrtCreateContext(&other, 0), kOk);  // current now
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(primary), kOk);
  EXPECT_EQ(aclrtStreamAbort(s), ACL_ERROR_RT_STREAM_CONTEXT);  // 107003: another context's
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(aclrtDestroyContext(other), kOk);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 100), kBadHandle) << "the context's stream survived it";
}

}  // namespace
