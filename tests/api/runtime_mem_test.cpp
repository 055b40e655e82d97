// aclrtGetMemInfo, aclGetRecentErrMsg and plain allocations (aclrtMalloc / aclrtMallocHost)
// (behavior.md §0, §13; emulation.md §2; clients.md A18).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

size_t free_of(aclrtMemAttr attr) { return mem_info(attr).free; }

const aclrtMemAttr kHbmAttrs[] = {ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G};

// ---------------------------------------------------------------------------------------------
// aclrtGetMemInfo (§13; A18: free memory reflects physical allocations exactly)

using RuntimeMemInfo = AclTest;

TEST_F(RuntimeMemInfo, TotalIsTheDeviceHbm) {
  for (aclrtMemAttr attr : kHbmAttrs) {
    SCOPED_TRACE(static_cast<int>(attr));
    size_t f = 0, t = 0;
    ASSERT_EQ(aclrtGetMemInfo(attr, &f, &t), ACL_SUCCESS);
    EXPECT_GT(t, 0u);
    EXPECT_EQ(t % k2M, 0u);
    EXPECT_EQ(f, t);  // a fresh runtime holds nothing
  }
}

TEST_F(RuntimeMemInfo, PhysicalAllocationsLowerFreeExactly) {
  struct Case {
    const char* name;
    aclrtMemAttr prop_attr;
    size_t size;
    size_t charged;
  } cases[] = {
      {"HBM_MEM_HUGE 2M", ACL_HBM_MEM_HUGE, k2M, k2M},
      {"HBM_MEM_HUGE 64M", ACL_HBM_MEM_HUGE, 64 * kMiB, 64 * kMiB},
      {"HBM_MEM_NORMAL 4M", ACL_HBM_MEM_NORMAL, 4 * kMiB, 4 * kMiB},
      {"HBM_MEM_HUGE 1 byte (rounded to 2M)", ACL_HBM_MEM_HUGE, 1, k2M},  // decisions: rounds up
      {"HBM_MEM_HUGE1G 1G", ACL_HBM_MEM_HUGE1G, kGiB, kGiB},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<size_t> before;
    for (aclrtMemAttr a : kHbmAttrs) before.push_back(free_of(a));
    aclrtPhysicalMemProp prop = device_prop(0, c.prop_attr);
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, c.size, &prop, 0), ACL_SUCCESS);
    for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i] - free_of(kHbmAttrs[i]), c.charged);
    // Mapping does not charge again.
    void* va = reserve(c.charged);
    ASSERT_EQ(aclrtMapMem(va, c.charged, 0, h, 0), ACL_SUCCESS);
    EXPECT_EQ(before[0] - free_of(ACL_HBM_MEM), c.charged);
    // Freed while mapped: the memory stays charged until the unmap (§1).
    EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(before[0] - free_of(ACL_HBM_MEM), c.charged);
    EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(free_of(kHbmAttrs[i]), before[i]);
  }
}

TEST_F(RuntimeMemInfo, PerDeviceAccounting) {
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  const size_t free1 = free_of(ACL_HBM_MEM);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  const size_t free0 = free_of(ACL_HBM_MEM);
  aclrtDrvMemHandle h = make_handle(8 * kMiB, 1);  // on device 1 while device 0 is current
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(free_of(ACL_HBM_MEM), free0);
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  EXPECT_EQ(free1 - free_of(ACL_HBM_MEM), 8 * kMiB);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(free_of(ACL_HBM_MEM), free1);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
}

// aclrtMalloc is charged its padded size (§13: rounded to 32 plus 32 bytes of padding) rounded to
// the 2 MiB huge page of the driver heap (§9: the allocation node size is page-rounded).
TEST_F(RuntimeMemInfo, MallocLowersFree) {
  struct Case {
    size_t size;
    aclrtMemMallocPolicy policy;
    size_t charged;
  } cases[] = {
      {k2M, ACL_MEM_MALLOC_HUGE_ONLY, round_up(k2M + 32, k2M)},
      {3 * kMiB + 5, ACL_MEM_MALLOC_HUGE_ONLY, round_up(round_up(3 * kMiB + 5, 32) + 32, k2M)},
      {64 * kMiB - 64, ACL_MEM_MALLOC_HUGE_ONLY, 64 * kMiB},
      {kGiB, ACL_MEM_MALLOC_HUGE1G_ONLY, kGiB},  // §13: no padding for HUGE1G policies
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.size);
    const size_t before = free_of(ACL_HBM_MEM);
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, c.size, c.policy), ACL_SUCCESS);
    for (aclrtMemAttr a : kHbmAttrs) EXPECT_EQ(before - free_of(a), c.charged);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    EXPECT_EQ(free_of(ACL_HBM_MEM), before);
  }
}

// ---------------------------------------------------------------------------------------------
// aclGetRecentErrMsg (§13: per-thread buffer, NULL when there is no message)

using RuntimeErrMsg = AclTest;

TEST_F(RuntimeErrMsg, NullWhenNothingFailed) {
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // successful calls leave no message
}

TEST_F(RuntimeErrMsg, NamesTheApiAndTheCodeOnce) {
  int x = 0;
  struct Case {
    const char* api;
    std::function<aclError()> call;
    aclError code;
  } cases[] = {
      {"aclrtMalloc", [] { return aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST); }, ACL_ERROR_INVALID_PARAM},
      {"aclrtFree", [&] { return aclrtFree(&x); }, ACL_ERROR_RT_PARAM_INVALID},
      {"aclrtSetDevice", [] { return aclrtSetDevice(-1); }, ACL_ERROR_RT_INVALID_DEVICEID},
      {"aclrtMemcpy", [&] { return aclrtMemcpy(&x, 4, &x, 4, static_cast<aclrtMemcpyKind>(99)); }, ACL_ERROR_INVALID_PARAM},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.api);
    ASSERT_EQ(c.call(), c.code);
    const char* m = aclGetRecentErrMsg();
    ASSERT_NE(m, nullptr);
    const std::string msg(m);
    EXPECT_NE(msg.find(c.api), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(c.code)), std::string::npos) << msg;
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // read once
  }
}

TEST_F(RuntimeErrMsg, NewestFailureComesFirst) {
  ASSERT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  ASSERT_EQ(aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  const std::string msg = recent_msg();
  const size_t malloc_at = msg.find("aclrtMalloc"), set_at = msg.find("aclrtSetDevice");
  ASSERT_NE(malloc_at, std::string::npos) << msg;
  if (set_at != std::string::npos) {
    EXPECT_LT(malloc_at, set_at) << msg;
  }
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

using RuntimeErrMsgConcurrency = AclTest;

TEST_F(RuntimeErrMsgConcurrency, MessagesArePerThread) {
  std::atomic<int> stage{0};
  std::string seen_by_b = "unset";
  std::thread a([&] {
    EXPECT_EQ(aclrtSetDevice(-7), ACL_ERROR_RT_INVALID_DEVICEID);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
    const std::string msg = recent_msg();  // still there: B did not consume it
    EXPECT_NE(msg.find("aclrtSetDevice"), std::string::npos) << msg;
  });
  std::thread b([&] {
    while (stage.load() != 1) std::this_thread::yield();
    const char* m = aclGetRecentErrMsg();
    seen_by_b = m ? m : "";
    EXPECT_EQ(m, nullptr);
    stage = 2;
  });
  a.join();
  b.join();
  EXPECT_EQ(seen_by_b, "");
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // nor the main thread
}

// ---------------------------------------------------------------------------------------------
// aclrtMalloc / aclrtMallocHost / aclrtFree / aclrtFreeHost

using RuntimeMalloc = AclTest;

TEST_F(RuntimeMalloc, InvalidArguments) {
  void* p = nullptr;
  void* dev = nullptr;
  void* host = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 8192, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&host, 8192), ACL_SUCCESS);
  void* freed = nullptr;
  ASSERT_EQ(aclrtMalloc(&freed, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(freed), ACL_SUCCESS);
  void* freed_host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&freed_host, 64), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(freed_host), ACL_SUCCESS);
  void* va = reserve(k2M);
  int stack = 0;
  char* d = static_cast<char*>(dev);
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  } cases[] = {
      // §13: NULL / size 0 → 100000
      {"Malloc(NULL)", [] { return aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST); }, ACL_ERROR_INVALID_PARAM},
      {"Malloc(size 0)", [&] { return aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST); }, ACL_ERROR_INVALID_PARAM},
      {"MallocHost(NULL)", [] { return aclrtMallocHost(nullptr, 64); }, ACL_ERROR_INVALID_PARAM},
      {"MallocHost(size 0)", [&] { return aclrtMallocHost(&p, 0); }, ACL_ERROR_INVALID_PARAM},
      {"Free(NULL)", [] { return aclrtFree(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"FreeHost(NULL)", [] { return aclrtFreeHost(nullptr); }, ACL_ERROR_INVALID_PARAM},
      // runtime: not the start of a live allocation of that kind → 107000
      {"Free(stack)", [&] { return aclrtFree(&stack); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Free(interior)", [&] { return aclrtFree(d + 32); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Free(double)", [&] { return aclrtFree(freed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Free(VMM reservation)", [&] { return aclrtFree(va); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Free(MallocHost memory)", [&] { return aclrtFree(host); }, ACL_ERROR_RT_PARAM_INVALID},
      {"FreeHost(Malloc memory)", [&] { return aclrtFreeHost(dev); }, ACL_ERROR_RT_PARAM_INVALID},
      {"FreeHost(stack)", [&] { return aclrtFreeHost(&stack); }, ACL_ERROR_RT_PARAM_INVALID},
      {"FreeHost(interior)", [&] { return aclrtFreeHost(static_cast<char*>(host) + 64); }, ACL_ERROR_RT_PARAM_INVALID},
      {"FreeHost(double)", [&] { return aclrtFreeHost(freed_host); }, ACL_ERROR_RT_PARAM_INVALID},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  // None of the failures released anything.
  EXPECT_EQ(aclrtMemset(dev, 8192, 7, 8192), ACL_SUCCESS);
  static_cast<char*>(host)[8191] = 1;
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

// §13: unknown policy values fall back to the default policy.
TEST_F(RuntimeMalloc, UnknownPolicyFallsBackToDefault) {
  for (int policy : {0x7f, 0x1234, 0x40000000}) {
    SCOPED_TRACE(policy);
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 5000, static_cast<aclrtMemMallocPolicy>(policy)), ACL_SUCCESS);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(aclrtMemset(p, 5000, 0x6b, 5000), ACL_SUCCESS);
    std::string back(5000, '\0');
    EXPECT_EQ(aclrtMemcpy(&back[0], 5000, p, 5000, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back, std::string(5000, '\x6b'));
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
}

TEST_F(RuntimeMalloc, HostMemoryIsCpuAccessible) {
  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 3 * kMiB + 7), ACL_SUCCESS);
  ASSERT_NE(host, nullptr);
  const std::string pat = pattern(3 * kMiB + 7, 5);
  std::memcpy(host, pat.data(), pat.size());
  EXPECT_EQ(std::memcmp(host, pat.data(), pat.size()), 0);
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

// Host blocks sit at 2 MiB steps whatever their size (only device blocks of 1 GiB or more are
// 1 GiB aligned): a block of a GiB or more after a small one comes right after it, and works
// (the fuzzer found it refused with 507899 once blocks moved into the backend).
TEST_F(RuntimeMalloc, LargeHostBlocksFollowSmallOnesAtTwoMebibyteSteps) {
  void* small = nullptr;
  void* large = nullptr;
  void* larger = nullptr;
  ASSERT_EQ(aclrtMallocHost(&small, 4096), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&large, kGiB), ACL_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtMallocHost(&larger, kGiB + 4096), ACL_SUCCESS) << aclGetRecentErrMsg();
  const auto at = [](void* p) { return reinterpret_cast<uintptr_t>(p); };
  EXPECT_EQ(at(large) % (2 * kMiB), 0u);
  EXPECT_EQ(at(large), at(small) + 2 * kMiB);
  EXPECT_EQ(at(larger), at(large) + kGiB);
  static_cast<volatile char*>(larger)[kGiB + 4095] = 7;  // the last byte is the CPU's
  EXPECT_EQ(static_cast<volatile char*>(larger)[kGiB + 4095], 7);
  EXPECT_EQ(aclrtFreeHost(larger), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(large), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(small), ACL_SUCCESS);
}

TEST_F(RuntimeMalloc, DeviceMemoryIsNotCpuAccessible) {
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_CHILD_FAULT(run_cpu_access([&] {
    volatile char c = *static_cast<volatile char*>(dev);  // emulation.md §4: faults
    (void)c;
    return 0;
  }));
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST_F(RuntimeMalloc, ManySmallAllocations) {
  const size_t before = free_of(ACL_HBM_MEM);
  constexpr int kCount = 1000;
  std::vector<std::pair<char*, size_t>> ptrs;
  for (int i = 0; i < kCount; ++i) {
    const size_t size = 1 + (i * 37) % 3000;
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << i;
    ASSERT_NE(p, nullptr);
    ptrs.emplace_back(static_cast<char*>(p), size);
  }
  EXPECT_LT(free_of(ACL_HBM_MEM), before);
  std::vector<std::pair<char*, size_t>> sorted = ptrs;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    EXPECT_LE(sorted[i].first + sorted[i].second, sorted[i + 1].first) << "allocations overlap";
  }
  // Each one holds its own bytes.
  for (size_t i = 0; i < ptrs.size(); i += 97) {
    EXPECT_EQ(aclrtMemset(ptrs[i].first, ptrs[i].second, static_cast<int>(i & 0xff), ptrs[i].second), ACL_SUCCESS);
  }
  for (size_t i = 0; i < ptrs.size(); i += 97) {
    std::string back(ptrs[i].second, '\0');
    ASSERT_EQ(aclrtMemcpy(&back[0], back.size(), ptrs[i].first, back.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back, std::string(back.size(), static_cast<char>(i & 0xff))) << i;
  }
  for (auto& [p, size] : ptrs) ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(free_of(ACL_HBM_MEM), before);
}

}  // namespace
