// Concurrency of the handle reference counts and of the lock-free pointer queries (issue 7):
// map and unmap count references under the handle table's shared lock while aclrtFreePhysical
// runs on another thread, and aclrtPointerGetAttributes / aclrtMemGetAddressRange answer from the
// chunk index while the mappings they ask about come and go. Suite names contain "Concurrency"
// (the ThreadSanitizer stage selects them by that), so the loops shrink under sanitizers.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {
namespace {

const int kScale = kSanitized ? 10 : 1;

// A call on a worker thread that must succeed; a failure is collected (gtest asserts stay on the
// main thread).
#define CHECK_OK(failures, call)                                                            \
  do {                                                                                      \
    const aclError rc_ = (call);                                                            \
    if (rc_ != kOk) (failures).add(std::string(#call) + " = " + std::to_string(rc_));       \
  } while (0)

class VmmRefsConcurrency : public AclTest {};

// Several threads map and unmap the same handle, each at its own address, while another thread
// frees it once. The free succeeds; maps fail with 107000 only once the handle is gone, and once
// one map failed no later map succeeds (a count that reached 0 never comes back); every
// successful map's unmap succeeds; afterwards the handle is gone and the live handle and mapping
// counts are back to where they were. Rounds vary when the free lands.
TEST_F(VmmRefsConcurrency, MapUnmapTheSameHandleWhileItIsFreed) {
  constexpr int kMappers = 4;
  const int rounds = 12 / (kSanitized ? 3 : 1), iterations = 300 / kScale;
  const long long handles0 = live_count("physical_handles");
  const long long mappings0 = live_count("mappings");
  ASSERT_GE(handles0, 0);
  std::vector<void*> vas(kMappers + 1);
  for (void*& va : vas) ASSERT_NE(va = reserve(4 * kMiB), nullptr);
  Failures failures;
  for (int round = 0; round < rounds; ++round) {
    aclrtDrvMemHandle h = make_handle();
    ASSERT_NE(h, nullptr);
    std::atomic<bool> free_started{false}, gone{false};
    std::atomic<int> maps{0};
    const int free_after = (round * 37) % (iterations / 2 + 1);  // 0: before any map
    std::vector<std::thread> threads;
    for (int t = 0; t < kMappers; ++t) {
      threads.emplace_back([&, t] {
        CHECK_OK(failures, aclrtSetDevice(0));
        for (int i = 0; i < iterations; ++i) {
          void* where = at(vas[t], (i % 2) * k2M);
          const bool was_gone = gone.load();
          const aclError rc = aclrtMapMem(where, k2M, 0, h, 0);
          if (rc == kOk) {
            maps.fetch_add(1);
            if (was_gone) failures.add("a map succeeded after another map found the handle gone");
            const aclError un = aclrtUnmapMem(where);
            if (un != kOk) failures.add("unmap after a successful map: " + std::to_string(un));
          } else if (rc == kRtParam) {
            // The handle must have been freed (the free may still be returning).
            if (!free_started.load()) {
              failures.add("a map failed with 107000 before the handle was freed");
            }
            gone.store(true);
          } else {
            failures.add("aclrtMapMem returned " + std::to_string(rc));
          }
        }
      });
    }
    std::thread freer([&] {
      while (maps.load() < free_after && !gone.load()) std::this_thread::yield();
      free_started.store(true);
      const aclError rc = aclrtFreePhysical(h);
      if (rc != kOk) failures.add("aclrtFreePhysical returned " + std::to_string(rc));
    });
    for (auto& th : threads) th.join();
    freer.join();
    ASSERT_EQ(failures.count(), 0) << "round " << round << "\n" << failures.text();
    // Every mapping is gone, so the last unmap removed the handle: it cannot be mapped or freed.
    EXPECT_EQ(aclrtMapMem(vas[kMappers], k2M, 0, h, 0), kRtParam) << "round " << round;
    EXPECT_EQ(aclrtFreePhysical(h), kRtParam) << "round " << round;
    EXPECT_EQ(live_count("physical_handles"), handles0) << "round " << round;
    EXPECT_EQ(live_count("mappings"), mappings0) << "round " << round;
  }
  for (void* va : vas) EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// The same with a long-lived mapping of the handle held by the main thread across the free: the
// free only drops the application's reference, and the handle lives on until the last unmap.
TEST_F(VmmRefsConcurrency, FreedHandleLivesUntilItsLastUnmap) {
  const int iterations = 200 / kScale;
  const long long handles0 = live_count("physical_handles");
  void* held = reserve(k2M);
  std::vector<void*> vas(3);
  for (void*& va : vas) ASSERT_NE(va = reserve(k2M), nullptr);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(held, k2M, 0, h, 0), kOk);
  Failures failures;
  std::vector<std::thread> threads;
  std::atomic<bool> freed{false};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      CHECK_OK(failures, aclrtSetDevice(0));
      for (int i = 0; i < iterations; ++i) {
        // `held` keeps a reference: every map succeeds, before and after the free.
        const aclError rc = aclrtMapMem(vas[t], k2M, 0, h, 0);
        if (rc != kOk) {
          failures.add("map while another mapping holds the handle: " + std::to_string(rc));
          continue;
        }
        const aclError un = aclrtUnmapMem(vas[t]);
        if (un != kOk) failures.add("unmap: " + std::to_string(un));
        if (i == iterations / 3 && t == 0) {
          freed.store(true);
          const aclError fr = aclrtFreePhysical(h);
          if (fr != kOk) failures.add("aclrtFreePhysical: " + std::to_string(fr));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(freed.load());
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_EQ(live_count("physical_handles"), handles0 + 1) << "the held mapping keeps the handle";
  // A second free of an already released, still mapped handle is refused (behavior.md §1).
  EXPECT_EQ(aclrtFreePhysical(h), kRtParam);
  EXPECT_EQ(aclrtUnmapMem(held), kOk);
  EXPECT_EQ(live_count("physical_handles"), handles0);
  EXPECT_EQ(aclrtMapMem(held, k2M, 0, h, 0), kRtParam);
  for (void* va : vas) EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(held), kOk);
}

// Pointer queries race mappings that come and go in two layouts (2 MiB + 6 MiB, or one 8 MiB
// mapping) of device memory and a host mapping, next to a stable aclrtMalloc block. Every answer
// is one a layout allows or the documented "reserved but not mapped" error (107017 for attributes,
// 107000 for the range); no other code, and the stable block always answers.
TEST_F(VmmRefsConcurrency, PointerQueriesSeeOnlyWholeAnswersWhileMappingsChange) {
  const int iterations = 400 / kScale;
  const size_t host_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* dev = static_cast<char*>(reserve(8 * kMiB));
  char* hst = static_cast<char*>(reserve(4 * kMiB));
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 6 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  aclrtDrvMemHandle h2 = make_handle(k2M), h6 = make_handle(6 * kMiB), h8 = make_handle(8 * kMiB);
  aclrtPhysicalMemProp hp = host_prop();
  aclrtDrvMemHandle hh = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&hh, 4 * kMiB, &hp, 0), kOk);
  ASSERT_TRUE(dev && hst && h2 && h6 && h8);

  struct Probe {
    const char* name;
    char* p;
    bool host;
    std::vector<std::pair<char*, size_t>> ranges;  // the ranges a layout gives this address
    bool always;  // must always be answered (the malloc block)
  };
  char* b = static_cast<char*>(block);
  void* bbase = nullptr;
  size_t bsize = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(b, &bbase, &bsize), kOk);
  const std::vector<Probe> probes = {
      {"dev+0", dev, false, {{dev, 2 * kMiB}, {dev, 8 * kMiB}}, false},
      {"dev+1M", dev + kMiB, false, {{dev, 2 * kMiB}, {dev, 8 * kMiB}}, false},
      {"dev+2M", dev + 2 * kMiB, false, {{dev + 2 * kMiB, 6 * kMiB}, {dev, 8 * kMiB}}, false},
      {"dev+5M+3", dev + 5 * kMiB + 3, false, {{dev + 2 * kMiB, 6 * kMiB}, {dev, 8 * kMiB}}, false},
      {"dev+8M-1", dev + 8 * kMiB - 1, false, {{dev + 2 * kMiB, 6 * kMiB}, {dev, 8 * kMiB}}, false},
      {"host+0", hst, true, {{hst, 4 * kMiB}}, false},
      {"host+3M", hst + 3 * kMiB, true, {{hst, 4 * kMiB}}, false},
      {"block+0", b, false, {{static_cast<char*>(bbase), bsize}}, true},
      {"block+5M", b + 5 * kMiB, false, {{static_cast<char*>(bbase), bsize}}, true},
  };

  Failures failures;
  std::atomic<bool> stop{false};
  std::atomic<long> answered{0}, unmapped{0};
  auto query = [&] {
    CHECK_OK(failures, aclrtSetDevice(0));
    while (!stop.load()) {
      for (const Probe& pr : probes) {
        aclrtPtrAttributes a{};
        const aclError rc = aclrtPointerGetAttributes(pr.p, &a);
        if (rc == kOk) {
          const bool want_host = pr.host;
          const uint32_t type = load_raw(a.location.type);
          const bool ok = want_host ? (type == ACL_MEM_LOCATION_TYPE_HOST && a.location.id == 0 &&
                                       a.pageSize == host_page)
                                    : (type == ACL_MEM_LOCATION_TYPE_DEVICE && a.location.id == 0 &&
                                       a.pageSize == k2M);
          if (!ok) {
            failures.add(std::string(pr.name) + ": attributes type " + std::to_string(type) +
                         " id " + std::to_string(a.location.id) + " page " +
                         std::to_string(a.pageSize));
          }
          answered.fetch_add(1, std::memory_order_relaxed);
        } else if (rc == kBadHandle && !pr.always) {
          unmapped.fetch_add(1, std::memory_order_relaxed);
        } else {
          failures.add(std::string(pr.name) + ": aclrtPointerGetAttributes = " + std::to_string(rc));
        }
        void* base = nullptr;
        size_t size = 0;
        const aclError rr = aclrtMemGetAddressRange(pr.p, &base, &size);
        if (rr == kOk) {
          bool known = false;
          for (const auto& r : pr.ranges) known |= base == r.first && size == r.second;
          if (!known) {
            failures.add(std::string(pr.name) + ": range at offset " +
                         std::to_string(static_cast<char*>(base) - pr.p) + " size " +
                         std::to_string(size));
          }
        } else if (rr != kRtParam || pr.always) {
          failures.add(std::string(pr.name) + ": aclrtMemGetAddressRange = " + std::to_string(rr));
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int q = 0; q < 2; ++q) threads.emplace_back(query);
  // The mappers run until the queries have had their share of the changes (at least
  // `iterations` layouts and `queries` answers, at most a few seconds).
  const long queries = 20000 / kScale;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto mapper = [&](bool host_side) {
    CHECK_OK(failures, aclrtSetDevice(0));
    for (int i = 0; failures.count() == 0 &&
                    (i < iterations || answered.load() + unmapped.load() < queries) &&
                    std::chrono::steady_clock::now() < deadline;
         ++i) {
      if (host_side) {
        CHECK_OK(failures, aclrtMapMem(hst, 4 * kMiB, 0, hh, 0));
        CHECK_OK(failures, aclrtUnmapMem(hst));
      } else if (i % 2) {
        CHECK_OK(failures, aclrtMapMem(dev, k2M, 0, h2, 0));
        CHECK_OK(failures, aclrtMapMem(dev + k2M, 6 * kMiB, 0, h6, 0));
        CHECK_OK(failures, aclrtUnmapMem(dev + k2M));
        CHECK_OK(failures, aclrtUnmapMem(dev));
      } else {
        CHECK_OK(failures, aclrtMapMem(dev, 8 * kMiB, 0, h8, 0));
        CHECK_OK(failures, aclrtUnmapMem(dev));
      }
    }
  };
  std::thread device_mapper(mapper, false), host_mapper(mapper, true);
  device_mapper.join();
  host_mapper.join();
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_GT(answered.load(), 0);
  for (aclrtDrvMemHandle h : {h2, h6, h8, hh}) EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFree(block), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(dev), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(hst), kOk);
}

}  // namespace
}  // namespace aclvmm_test
