// Concurrency: the VMM calls, copies and queries are safe from several threads at once, and the
// current device is per thread. Suite names contain "Concurrency" (the ThreadSanitizer stage
// selects them by that).
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {
namespace {

#define CHECK_CALL(failures, call, want)                                                      \
  do {                                                                                        \
    aclError got_ = (call);                                                                   \
    if (got_ != (want)) {                                                                     \
      (failures).add(std::string(#call) + " = " + std::to_string(got_) + ", want " + #want); \
    }                                                                                         \
  } while (0)

// Runs worker(0) ... worker(n - 1) on n threads and waits for all of them.
void run_threads(int n, const std::function<void(int)>& worker) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
}

class VmmConcurrencyTest : public AclTest {};

// 4 threads x 2000 iterations of the whole VMM life cycle on device 0; every byte and every
// query answer is checked, and all counts are back to zero at the end.
TEST_F(VmmConcurrencyTest, FullLifecycleOnFourThreads) {
  constexpr int kThreads = 4, kIterations = 2000;
  const Json base = stats();
  const long long used0 = device_used(base, 0);
  Failures failures;
  std::atomic<int> done{0};
  auto worker = [&failures, &done](int id) {
    CHECK_CALL(failures, aclrtSetDevice(0), ACL_SUCCESS);
    const aclrtPhysicalMemProp prop = device_prop();
    std::string out(4096, '\0');
    for (int i = 0; i < kIterations && failures.count() == 0; ++i) {
      const std::string data = pattern(4096, static_cast<unsigned>(id * 100000 + i));
      void* va = nullptr;
      aclrtDrvMemHandle h = nullptr;
      CHECK_CALL(failures, aclrtReserveMemAddress(&va, 4 * kMiB, 0, nullptr, 0), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtMallocPhysical(&h, k2M, &prop, 0), ACL_SUCCESS);
      if (!va || !h) break;
      void* where = at(va, (i % 2) * k2M);
      CHECK_CALL(failures, aclrtMapMem(where, k2M, 0, h, 0), ACL_SUCCESS);
      const size_t off = (static_cast<size_t>(i) * 4096) % (k2M - 4096);
      CHECK_CALL(failures, aclrtMemcpy(at(where, off), 4096, data.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtMemcpy(&out[0], 4096, at(where, off), 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
      if (out != data) failures.add("thread " + std::to_string(id) + " iteration " + std::to_string(i) + ": bytes differ");
      aclrtPtrAttributes a{};
      CHECK_CALL(failures, aclrtPointerGetAttributes(at(where, off), &a), ACL_SUCCESS);
      if (a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE || a.location.id != 0 || a.pageSize != k2M) {
        failures.add("pointer attributes: type " + std::to_string(a.location.type) + " id " +
                     std::to_string(a.location.id) + " page " + std::to_string(a.pageSize));
      }
      void* base = nullptr;
      size_t size = 0;
      CHECK_CALL(failures, aclrtMemGetAddressRange(at(where, off), &base, &size), ACL_SUCCESS);
      if (base != where || size != k2M) failures.add("address range differs from the mapping");
      CHECK_CALL(failures, aclrtUnmapMem(where), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtFreePhysical(h), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtReleaseMemAddress(va), ACL_SUCCESS);
      done.fetch_add(1);
    }
  };
  run_threads(kThreads, worker);
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_EQ(done.load(), kThreads * kIterations);
  const Json end = stats();
  EXPECT_EQ(stat_int(end, "live.physical_handles"), 0);
  EXPECT_EQ(stat_int(end, "live.reservations"), 0);
  EXPECT_EQ(stat_int(end, "live.mappings"), 0);
  EXPECT_EQ(device_used(end, 0), used0);
}

// A reader works on a stable mapping while three threads map and unmap elsewhere: every query
// and every copy on the stable mapping gives the right answer throughout.
TEST_F(VmmConcurrencyTest, StableMappingStaysCorrectWhileOthersChurn) {
  constexpr int kReaderIterations = 3000, kChurners = 3;
  aclrtDrvMemHandle stable_h = make_handle(k2M);
  void* stable = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(stable, k2M, 0, stable_h, 0), ACL_SUCCESS);
  const std::string data = pattern(k2M, 42);
  ASSERT_EQ(aclrtMemcpy(stable, k2M, data.data(), k2M, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  Failures failures;
  std::atomic<bool> done{false};
  std::atomic<long> churn_cycles{0};
  auto churner = [&](int id) {
    CHECK_CALL(failures, aclrtSetDevice(0), ACL_SUCCESS);
    const aclrtPhysicalMemProp prop = device_prop();
    const std::string mine = pattern(4096, 1000 + id);
    std::string out(4096, '\0');
    while (!done.load() && failures.count() == 0) {
      void* va = nullptr;
      aclrtDrvMemHandle h = nullptr;
      CHECK_CALL(failures, aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtMallocPhysical(&h, k2M, &prop, 0), ACL_SUCCESS);
      if (!va || !h) break;
      CHECK_CALL(failures, aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtMemcpy(va, 4096, mine.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtMemcpy(&out[0], 4096, va, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
      if (out != mine) failures.add("churner bytes differ");
      CHECK_CALL(failures, aclrtUnmapMem(va), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtFreePhysical(h), ACL_SUCCESS);
      CHECK_CALL(failures, aclrtReleaseMemAddress(va), ACL_SUCCESS);
      churn_cycles.fetch_add(1);
    }
  };
  std::atomic<int> reads{0};
  auto reader = [&] {
    CHECK_CALL(failures, aclrtSetDevice(0), ACL_SUCCESS);
    std::string out(8192, '\0');
    // At least kReaderIterations, and on until the churners have done 200 cycles meanwhile.
    for (int i = 0; (i < kReaderIterations || churn_cycles.load() < 200) && i < 1000000 &&
                    failures.count() == 0;
         ++i, reads.fetch_add(1)) {
      const size_t off = (static_cast<size_t>(i) * 7919) % (k2M - out.size());
      CHECK_CALL(failures, aclrtMemcpy(&out[0], out.size(), at(stable, off), out.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
      if (std::memcmp(out.data(), data.data() + off, out.size()) != 0) failures.add("stable bytes differ at " + std::to_string(off));
      aclrtPtrAttributes a{};
      CHECK_CALL(failures, aclrtPointerGetAttributes(at(stable, off), &a), ACL_SUCCESS);
      if (a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE || a.location.id != 0) failures.add("stable attributes wrong");
      void* base = nullptr;
      size_t size = 0;
      CHECK_CALL(failures, aclrtMemGetAddressRange(at(stable, off), &base, &size), ACL_SUCCESS);
      if (base != stable || size != k2M) failures.add("stable range wrong");
      aclrtDrvMemHandle r = nullptr;
      CHECK_CALL(failures, aclrtMemRetainAllocationHandle(stable, &r), ACL_SUCCESS);
      if (r != stable_h) failures.add("retained handle differs");
      CHECK_CALL(failures, aclrtFreePhysical(r), ACL_SUCCESS);
    }
    done.store(true);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kChurners; ++t) threads.emplace_back(churner, t);
  threads.emplace_back(reader);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_GE(reads.load(), kReaderIterations);
  EXPECT_GE(churn_cycles.load(), 200);
  std::string all(k2M, '\0');
  EXPECT_EQ(aclrtMemcpy(&all[0], k2M, stable, k2M, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_TRUE(all == data);
  EXPECT_EQ(aclrtUnmapMem(stable), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(stable_h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(stable), ACL_SUCCESS);
  const Json end = stats();
  EXPECT_EQ(stat_int(end, "live.physical_handles"), 0);
  EXPECT_EQ(stat_int(end, "live.reservations"), 0);
  EXPECT_EQ(stat_int(end, "live.mappings"), 0);
}

// The current device is thread-local: each thread switches between its own two devices and
// always reads back its own choice, and allocations land on it.
TEST_F(VmmConcurrencyTest, CurrentDeviceIsPerThread) {
  constexpr int kThreads = 4, kIterations = 1000;
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  ASSERT_GE(count, 8u);
  Failures failures;
  std::atomic<int> done{0};
  auto worker = [&failures, &done](int id) {
    const int devs[2] = {id, id + 4};
    for (int i = 0; i < kIterations && failures.count() == 0; ++i) {
      const int want = devs[i % 2];
      CHECK_CALL(failures, aclrtSetDevice(want), ACL_SUCCESS);
      int32_t got = -1;
      CHECK_CALL(failures, aclrtGetDevice(&got), ACL_SUCCESS);
      if (got != want) failures.add("thread " + std::to_string(id) + " set " + std::to_string(want) + " got " + std::to_string(got));
      if (i % 50 == 0) {
        void* p = nullptr;
        CHECK_CALL(failures, aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        aclrtPtrAttributes a{};
        CHECK_CALL(failures, aclrtPointerGetAttributes(p, &a), ACL_SUCCESS);
        if (static_cast<int>(a.location.id) != want) failures.add("allocation on device " + std::to_string(a.location.id) + ", want " + std::to_string(want));
        CHECK_CALL(failures, aclrtFree(p), ACL_SUCCESS);
      }
      done.fetch_add(1);
    }
  };
  run_threads(kThreads, worker);
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_EQ(done.load(), kThreads * kIterations);
  int32_t mine = -1;
  EXPECT_EQ(aclrtGetDevice(&mine), ACL_SUCCESS);
  EXPECT_EQ(mine, 0) << "other threads changed this thread's device";
  // A thread that never chose a device has none.
  aclError fresh = 0;
  std::thread([&fresh] {
    int32_t d = -1;
    fresh = aclrtGetDevice(&d);
  }).join();
  EXPECT_EQ(fresh, 107002);
  for (int d = 1; d < 8; ++d) EXPECT_EQ(aclrtResetDeviceForce(d), ACL_SUCCESS);
}

}  // namespace
}  // namespace aclvmm_test
