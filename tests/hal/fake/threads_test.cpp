// Every function may be called from any thread (hal.md §1.4): threads that create, reserve,
// map, copy, share and release at once, on one device and on several, each checking its bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

// One thread's round: its own handle and mapping, its bytes in and out, a copy to the next
// device through the host, an import of its own export onto that device; 0 or a failed step.
int round_trip(uint32_t device, uint32_t next, uint32_t seed) {
  const size_t size = 2 * kMiB;
  const drv_mem_prop prop = device_prop(device);
  drv_mem_handle_t* h = nullptr;
  void* va = nullptr;
  void* other = nullptr;
  if (halMemCreate(&h, size, &prop, 0) != DRV_ERROR_NONE) return 1;
  if (halMemAddressReserve(&va, size, 0, nullptr, 0) != DRV_ERROR_NONE) return 2;
  if (halMemMap(va, size, 0, h, 0) != DRV_ERROR_NONE) return 3;
  const std::vector<uint8_t> bytes = pattern(size, seed);
  if (drvMemcpy(ptr(va), size, ptr(bytes.data()), size) != DRV_ERROR_NONE) return 4;
  if (halMemAlloc(&other, size, 0x2100000000924400ull + next) != DRV_ERROR_NONE) return 5;
  if (drvMemcpy(ptr(other), size, ptr(va), size) != DRV_ERROR_NONE) return 6;
  std::vector<uint8_t> back(size);
  if (drvMemcpy(ptr(back.data()), size, ptr(other), size) != DRV_ERROR_NONE) return 7;
  if (back != bytes) return 8;
  uint64_t token = 0;
  drv_mem_handle_t* imp = nullptr;
  if (halMemExportToShareableHandle(h, MEM_HANDLE_TYPE_NONE, 0, &token) != DRV_ERROR_NONE) {
    return 9;
  }
  if (halMemImportFromShareableHandle(token, next, &imp) != DRV_ERROR_NONE) return 10;
  if (halMemRelease(imp) != DRV_ERROR_NONE) return 11;
  DVattribute a{};
  if (drvMemGetAttribute(ptr(va), &a) != DRV_ERROR_NONE || a.devId != device) return 12;
  if (halMemFree(other) != DRV_ERROR_NONE) return 13;
  if (halMemUnmap(va) != DRV_ERROR_NONE) return 14;
  if (halMemRelease(h) != DRV_ERROR_NONE) return 15;
  if (halMemAddressFree(va) != DRV_ERROR_NONE) return 16;
  return 0;
}

TEST(FakeHalThreads, ConcurrentRoundsOnSeveralDevices) {
  OpenDevices open({0, 1, 2, 3});
  ASSERT_TRUE(open.ok());
  constexpr int kThreads = 8, kRounds = 10;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failed] {
      for (int r = 0; r < kRounds; ++r) {
        const int step = round_trip(t % 4, (t + 1) % 4, static_cast<uint32_t>(t * 100 + r));
        if (step != 0 && failed.load() == 0) failed.store(step);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
}

}  // namespace
}  // namespace fakehal_test
