// Managed memory under concurrency: CPU threads fault pages while streams migrate them, device
// operations from several threads, and allocation from several threads (emulation.md §6). The
// suite name contains "Concurrency" (the ThreadSanitizer stage selects it by that). A watchdog
// turns a deadlock into a failed run with a message instead of a hang.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr long long kPage = static_cast<long long>(k2M);

aclrtMemManagedLocation mloc(int type, int32_t id = 0) {
  aclrtMemManagedLocation l{};
  store_raw(l.type, type);
  l.id = id;
  return l;
}

struct Managed {
  long long host_faults, device_faults, to_device, to_host, evictions, prefetch;
};
Managed counters() {
  const Json j = stats();
  return {stat_int(j, "managed.host_faults"), stat_int(j, "managed.device_faults"),
          stat_int(j, "managed.bytes_to_device"), stat_int(j, "managed.bytes_to_host"),
          stat_int(j, "managed.evictions"), stat_int(j, "managed.prefetch_bytes")};
}

// Aborts the process with a message when the test body does not finish in time (a deadlock
// would otherwise hang the whole run).
class Watchdog {
 public:
  Watchdog(const char* what, int seconds)
      : thread_([this, what, seconds] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            fprintf(stderr, "WATCHDOG: %s did not finish within %d s (deadlock?)\n", what, seconds);
            fflush(stderr);
            abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The first few failures of worker threads (gtest assertions stay on the main thread).
class Failures {
 public:
  void add(const std::string& what) {
    count_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.size() < 10) first_.push_back(what);
  }
  int count() const { return count_.load(); }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (const auto& f : first_) s += f + "\n";
    return s;
  }

 private:
  std::atomic<int> count_{0};
  mutable std::mutex mu_;
  std::vector<std::string> first_;
};

class ManagedConcurrencyTest : public AclTest {
 protected:
  char* managed(uint64_t size) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMemAllocManaged(&p, size, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    return static_cast<char*>(p);
  }
  bool tracking() {
    const Json j = stats();
    const Json* v = j.path("managed.fault_tracking");
    return v && v->type == Json::kBool && v->b;
  }
};

// The records a CPU thread writes into its own pages: kRecords per 2 MiB page, 64 bytes each,
// with content determined by (thread, iteration, page, record).
constexpr size_t kRecordBytes = 64, kRecords = 8, kRecordStride = k2M / kRecords;
std::string record(int thread, long iteration, size_t page, size_t r) {
  std::string s(kRecordBytes, '\0');
  for (size_t k = 0; k < kRecordBytes; ++k) {
    s[k] = static_cast<char>((thread * 31 + iteration * 7 + page * 13 + r * 5 + k) & 0xff);
  }
  return s;
}

// 4 CPU threads read and write their own pages of a 32 MiB allocation while a stream prefetches
// the whole range to device 0 and back, 50 times. Every thread checks its previous records
// before writing new ones (nothing lost or torn), and at the end the last records are intact
// from the CPU and from device 0. Counts: each round moves all 16 pages to the device and back
// exactly once (by prefetch or by a CPU fault).
TEST_F(ManagedConcurrencyTest, CpuThreadsKeepTheirBytesWhilePrefetchesMoveThePages) {
  constexpr int kThreads = 4, kRounds = 50;
  constexpr size_t kSize = 32 * kMiB, kPagesPerThread = kSize / k2M / kThreads;
  char* p = managed(kSize);
  ASSERT_NE(p, nullptr);
  if (!tracking()) GTEST_SKIP() << "no CPU fault tracking here (ManagedMigrationTest asserts it)";
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  Watchdog dog("CpuThreadsKeepTheirBytesWhilePrefetchesMoveThePages", 120);
  const Managed start = counters();
  std::atomic<bool> stop{false};
  std::vector<long> last(kThreads, -1);
  Failures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      long i = 0;
      for (; !stop.load() || i < 3; ++i) {
        for (size_t pg = 0; pg < kPagesPerThread; ++pg) {
          const size_t page = t * kPagesPerThread + pg;
          for (size_t r = 0; r < kRecords; ++r) {
            char* at_rec = p + page * k2M + r * kRecordStride;
            if (i > 0 && std::memcmp(at_rec, record(t, i - 1, page, r).data(), kRecordBytes) != 0) {
              failures.add("thread " + std::to_string(t) + " iteration " + std::to_string(i) +
                           ": page " + std::to_string(page) + " record " + std::to_string(r) +
                           " lost its bytes");
            }
            const std::string rec = record(t, i, page, r);
            std::memcpy(at_rec, rec.data(), kRecordBytes);
          }
        }
      }
      last[t] = i - 1;
    });
  }
  int rc_fail = 0;
  for (int round = 0; round < kRounds; ++round) {
    if (aclrtMemManagedPrefetchAsync(p, kSize, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 0), 0, s) != kOk) ++rc_fail;
    if (aclrtSynchronizeStream(s) != kOk) ++rc_fail;
    if (aclrtMemManagedPrefetchAsync(p, kSize, mloc(ACL_MEM_LOCATIONTYPE_HOST), 0, s) != kOk) ++rc_fail;
    if (aclrtSynchronizeStream(s) != kOk) ++rc_fail;
  }
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(rc_fail, 0);
  EXPECT_EQ(failures.count(), 0) << failures.text();
  const Managed d = counters();
  const long long moves = kRounds * static_cast<long long>(kSize / k2M);
  EXPECT_EQ(d.to_device - start.to_device, moves * kPage) << "every round moves all pages in";
  EXPECT_EQ(d.to_host - start.to_host, moves * kPage) << "and all of them out";
  EXPECT_EQ(d.prefetch - start.prefetch + (d.host_faults - start.host_faults) * kPage, 2 * moves * kPage)
      << "a page goes back by prefetch or by a CPU fault, never both";
  EXPECT_EQ(d.device_faults - start.device_faults, 0);
  // The threads write all the time, so some of their accesses must have met device-resident
  // pages (else the test exercised nothing).
  EXPECT_GT(d.host_faults - start.host_faults, 0);
  // The last records, from the CPU and from device 0.
  const std::string device_view = get(p, kSize);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_GE(last[t], 2);
    for (size_t pg = 0; pg < kPagesPerThread; ++pg) {
      const size_t page = t * kPagesPerThread + pg;
      for (size_t r = 0; r < kRecords; ++r) {
        const size_t off = page * k2M + r * kRecordStride;
        const std::string want = record(t, last[t], page, r);
        EXPECT_EQ(device_view.substr(off, kRecordBytes), want) << "device view, thread " << t;
        EXPECT_EQ(std::string(p + off, kRecordBytes), want) << "CPU view, thread " << t;
      }
    }
  }
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Two device threads (devices 0 and 1) and two CPU threads work on their own pages of one
// allocation at the same time: the device pages fault in once each and stay; the CPU pages never
// leave the host.
TEST_F(ManagedConcurrencyTest, DeviceAndCpuThreadsOnDisjointPages) {
  constexpr int kIterations = 200;
  char* p = managed(8 * kMiB);  // page 0: device 0, page 1: device 1, pages 2-3: CPU threads
  ASSERT_NE(p, nullptr);
  if (!tracking()) GTEST_SKIP() << "no CPU fault tracking here";
  Watchdog dog("DeviceAndCpuThreadsOnDisjointPages", 120);
  const Managed start = counters();
  Failures failures;
  std::vector<std::thread> threads;
  for (int device = 0; device < 2; ++device) {
    threads.emplace_back([&, device] {
      if (aclrtSetDevice(device) != kOk) return failures.add("aclrtSetDevice");
      char* page = p + device * k2M;
      std::string buf(k2M, '\0');
      for (int i = 0; i < kIterations; ++i) {
        const int v = (i * 3 + device) & 0xff;
        if (aclrtMemset(page, k2M, v, k2M) != kOk) return failures.add("memset");
        if (aclrtMemcpy(&buf[0], k2M, page, k2M, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return failures.add("D2H");
        if (!all_bytes(buf, static_cast<char>(v))) return failures.add("device " + std::to_string(device) + " bytes");
      }
    });
  }
  for (int cpu = 0; cpu < 2; ++cpu) {
    threads.emplace_back([&, cpu] {
      char* page = p + (2 + cpu) * k2M;
      for (int i = 0; i < kIterations * 4; ++i) {
        const std::string pat = pattern(4096, i + 10 * cpu);
        const size_t off = (i * 4096) % k2M;
        std::memcpy(page + off, pat.data(), pat.size());
        if (std::memcmp(page + off, pat.data(), pat.size()) != 0) return failures.add("cpu bytes");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  const Managed d = counters();
  EXPECT_EQ(d.device_faults - start.device_faults, 2) << "each device page faults in once";
  EXPECT_EQ(d.host_faults - start.host_faults, 0) << "the CPU pages never left";
  EXPECT_EQ(std::string(p, 1), std::string(1, static_cast<char>(((kIterations - 1) * 3) & 0xff)));
  EXPECT_EQ(std::string(p + k2M, 1), std::string(1, static_cast<char>(((kIterations - 1) * 3 + 1) & 0xff)));
  EXPECT_EQ(aclrtFree(p), kOk);
}

// One page ping-pongs between a CPU thread and a device thread taking turns: each turn is one
// migration, so 100 rounds are exactly 100 device faults and 100 host faults, byte-exact.
TEST_F(ManagedConcurrencyTest, PagePingPongsBetweenACpuThreadAndADeviceThread) {
  constexpr int kRounds = 100;
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  if (!tracking()) GTEST_SKIP() << "no CPU fault tracking here";
  Watchdog dog("PagePingPongsBetweenACpuThreadAndADeviceThread", 120);
  const Managed start = counters();
  std::atomic<int> turn{0};  // even: the CPU's turn, odd: the device's
  Failures failures;
  std::thread device([&] {
    if (aclrtSetDevice(0) != kOk) return failures.add("aclrtSetDevice");
    std::string buf(k2M, '\0');
    for (int r = 0; r < kRounds; ++r) {
      while (turn.load() != 2 * r + 1) std::this_thread::yield();
      if (aclrtMemcpy(&buf[0], k2M, p, k2M, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) failures.add("D2H");
      if (buf != pattern(k2M, r)) failures.add("the device read the wrong bytes in round " + std::to_string(r));
      if (aclrtMemset(p, k2M, r & 0xff, k2M) != kOk) failures.add("memset");
      turn.store(2 * r + 2);
    }
  });
  for (int r = 0; r < kRounds; ++r) {
    while (turn.load() != 2 * r) std::this_thread::yield();
    if (r > 0 && !all_bytes(std::string(p, k2M), static_cast<char>((r - 1) & 0xff))) {
      failures.add("the CPU read the wrong bytes in round " + std::to_string(r));
    }
    const std::string pat = pattern(k2M, r);
    std::memcpy(p, pat.data(), pat.size());
    turn.store(2 * r + 1);
  }
  device.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_TRUE(all_bytes(std::string(p, k2M), static_cast<char>((kRounds - 1) & 0xff)));
  const Managed d = counters();
  EXPECT_EQ(d.device_faults - start.device_faults, kRounds);
  EXPECT_EQ(d.host_faults - start.host_faults, kRounds);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// Allocation, use and free from 4 threads at once; the live count returns to 0.
TEST_F(ManagedConcurrencyTest, AllocateTouchAndFreeFromFourThreads) {
  constexpr int kThreads = 4, kIterations = 40;
  Watchdog dog("AllocateTouchAndFreeFromFourThreads", 120);
  Failures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (aclrtSetDevice(t % 2) != kOk) return failures.add("aclrtSetDevice");
      for (int i = 0; i < kIterations; ++i) {
        void* v = nullptr;
        const size_t size = (1 + (i + t) % 3) * k2M;
        if (aclrtMemAllocManaged(&v, size, ACL_RT_MEM_ATTACH_GLOBAL) != kOk) return failures.add("alloc");
        char* q = static_cast<char*>(v);
        const char value = static_cast<char>(t * 50 + i);
        if (aclrtMemset(q, size, value, size) != kOk) failures.add("memset");
        if (q[size - 1] != value || q[0] != value) failures.add("CPU read after the device memset");
        q[1] = static_cast<char>(value + 1);
        if (get(q, 2) != std::string{value, static_cast<char>(value + 1)}) failures.add("D2H after a CPU write");
        if (aclrtFree(q) != kOk) failures.add("free");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_EQ(live_count("managed_allocations"), 0);
  EXPECT_EQ(device_used(stats(), 0), 0);
  EXPECT_EQ(device_used(stats(), 1), 0);
}

}  // namespace
}  // namespace aclvmm_test
