// Managed memory under concurrency: CPU threads fault pages while streams migrate them, device
// operations from several threads, and allocation from several threads (emulation.md §6). The
// suite name contains "Concurrency" (the ThreadSanitizer stage selects it by that). A watchdog
// turns a deadlock into a failed run with a message instead of a hang.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "api/managed_util.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {
namespace {

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

// memcmp-based (intercepted, fast under ThreadSanitizer, unlike a byte loop).
bool filled(const void* p, size_t n, char v) {
  const std::string ref(n, v);
  return std::memcmp(p, ref.data(), n) == 0;
}

class ManagedConcurrencyTest : public ManagedTest {};

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
  REQUIRE_MANAGED_TRACKING();
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  Watchdog dog("CpuThreadsKeepTheirBytesWhilePrefetchesMoveThePages", 120);
  const ManagedCounters start = managed_counters();
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
    if (aclrtMemManagedPrefetchAsync(p, kSize, kDev0, 0, s) != kOk) ++rc_fail;
    if (aclrtSynchronizeStream(s) != kOk) ++rc_fail;
    if (aclrtMemManagedPrefetchAsync(p, kSize, kHost, 0, s) != kOk) ++rc_fail;
    if (aclrtSynchronizeStream(s) != kOk) ++rc_fail;
  }
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(rc_fail, 0);
  EXPECT_EQ(failures.count(), 0) << failures.text();
  const ManagedCounters d = managed_counters();
  const long long moves = kRounds * static_cast<long long>(kSize / k2M);
  EXPECT_EQ(d.to_device - start.to_device, moves * kManagedPage) << "every round moves all pages in";
  EXPECT_EQ(d.to_host - start.to_host, moves * kManagedPage) << "and all of them out";
  EXPECT_EQ(d.prefetch - start.prefetch + (d.host_faults - start.host_faults) * kManagedPage,
            2 * moves * kManagedPage)
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
  constexpr size_t kSlice = 64 * 1024, kSlices = k2M / kSlice;  // device ops walk their page
  char* p = managed(8 * kMiB);  // page 0: device 0, page 1: device 1, pages 2-3: CPU threads
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  Watchdog dog("DeviceAndCpuThreadsOnDisjointPages", 120);
  const ManagedCounters start = managed_counters();
  Failures failures;
  std::vector<std::thread> threads;
  for (int device = 0; device < 2; ++device) {
    threads.emplace_back([&, device] {
      if (aclrtSetDevice(device) != kOk) return failures.add("aclrtSetDevice");
      std::string buf(kSlice, '\0');
      for (int i = 0; i < kIterations; ++i) {
        const int v = (i * 3 + device) & 0xff;
        char* slice = p + device * k2M + (i % kSlices) * kSlice;
        if (aclrtMemset(slice, kSlice, v, kSlice) != kOk) return failures.add("memset");
        if (aclrtMemcpy(&buf[0], kSlice, slice, kSlice, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return failures.add("D2H");
        if (!filled(buf.data(), kSlice, static_cast<char>(v))) return failures.add("device " + std::to_string(device) + " bytes");
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
  const ManagedCounters d = managed_counters();
  EXPECT_EQ(d.device_faults - start.device_faults, 2) << "each device page faults in once";
  EXPECT_EQ(d.host_faults - start.host_faults, 0) << "the CPU pages never left";
  const size_t last = ((kIterations - 1) % kSlices) * kSlice;
  for (int device = 0; device < 2; ++device) {
    EXPECT_TRUE(filled(p + device * k2M + last, kSlice, static_cast<char>(((kIterations - 1) * 3 + device) & 0xff)))
        << "the last slice of device " << device;
  }
  EXPECT_EQ(aclrtFree(p), kOk);
}

// One page ping-pongs between a CPU thread and a device thread taking turns: each turn is one
// migration, so 100 rounds are exactly 100 device faults and 100 host faults, byte-exact.
TEST_F(ManagedConcurrencyTest, PagePingPongsBetweenACpuThreadAndADeviceThread) {
  constexpr int kRounds = 100;
  char* p = managed(k2M);
  ASSERT_NE(p, nullptr);
  REQUIRE_MANAGED_TRACKING();
  Watchdog dog("PagePingPongsBetweenACpuThreadAndADeviceThread", 120);
  const ManagedCounters start = managed_counters();
  const std::string pats[2] = {pattern(k2M, 1), pattern(k2M, 2)};  // alternate between rounds
  std::atomic<int> turn{0};  // even: the CPU's turn, odd: the device's
  Failures failures;
  std::thread device([&] {
    if (aclrtSetDevice(0) != kOk) return failures.add("aclrtSetDevice");
    std::string buf(k2M, '\0');
    for (int r = 0; r < kRounds; ++r) {
      while (turn.load() != 2 * r + 1) std::this_thread::yield();
      if (aclrtMemcpy(&buf[0], k2M, p, k2M, ACL_MEMCPY_DEVICE_TO_HOST) != kOk) failures.add("D2H");
      if (buf != pats[r % 2]) failures.add("the device read the wrong bytes in round " + std::to_string(r));
      if (aclrtMemset(p, k2M, r & 0xff, k2M) != kOk) failures.add("memset");
      turn.store(2 * r + 2);
    }
  });
  for (int r = 0; r < kRounds; ++r) {
    while (turn.load() != 2 * r) std::this_thread::yield();
    if (r > 0 && !filled(p, k2M, static_cast<char>((r - 1) & 0xff))) {
      failures.add("the CPU read the wrong bytes in round " + std::to_string(r));
    }
    std::memcpy(p, pats[r % 2].data(), k2M);
    turn.store(2 * r + 1);
  }
  device.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_TRUE(filled(p, k2M, static_cast<char>((kRounds - 1) & 0xff)));
  const ManagedCounters d = managed_counters();
  EXPECT_EQ(d.device_faults - start.device_faults, kRounds);
  EXPECT_EQ(d.host_faults - start.host_faults, kRounds);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// An emulated kernel that waits for its gate (at most 10 s), then writes `n` bytes to `dst`
// (nothing when dst is NULL).
struct Gate {
  std::atomic<bool> started{false};
  std::atomic<bool> open{false};
  char* dst = nullptr;
  size_t n = 0;
};
void gated_kernel(aclvmmKernelContext* ctx, void* raw) {
  auto* g = static_cast<Gate*>(raw);
  g->started.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!g->open.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!g->dst) return;
  const std::string bytes(g->n, 'k');
  (void)aclvmmKernelWrite(ctx, g->dst, bytes.data(), bytes.size());
}
// Waits (at most 5 s) until the kernel runs: a task still queued would just be dropped.
bool wait_started(const Gate& g) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!g.started.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return g.started.load();
}
void open_later(Gate* g, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  g->open.store(true);
}

// aclFinalize / aclrtResetDeviceForce while managed pages are migrating — by a stream task (a
// kernel writing managed memory, a large prefetch) or by the CPU fault thread: the migration
// finishes or is abandoned, and the call returns (no deadlock). Each case runs in a child with a
// time limit, so that a deadlock fails the test instead of hanging the run.
TEST_F(ManagedConcurrencyTest, FinalizeAndResetWhilePagesMigrate) {
  enum What { kKernelFinalize, kPrefetchFinalize, kKernelReset, kCpuFaultFinalize };
  const struct {
    What what;
    const char* name;
  } cases[] = {
      {kKernelFinalize, "aclFinalize while a kernel writes managed memory"},
      {kPrefetchFinalize, "aclFinalize while a 1 GiB prefetch runs"},
      {kKernelReset, "aclrtResetDeviceForce while a kernel writes managed memory"},
      {kCpuFaultFinalize, "aclFinalize while a CPU thread faults a page back"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const What what = c.what;
    const ChildResult r = run_in_child([what] {
      alarm(10);
      (void)aclInit(nullptr);
      while (aclFinalize() == kOk) {
      }
      CHILD_CHECK(aclInit(nullptr) == kOk, 1);
      CHILD_CHECK(aclrtSetDevice(0) == kOk, 2);
      void* vp = nullptr;
      const size_t size = what == kPrefetchFinalize ? kGiB : k2M;
      CHILD_CHECK(aclrtMemAllocManaged(&vp, size, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 3);
      char* p = static_cast<char*>(vp);
      aclrtStream s = nullptr;
      CHILD_CHECK(aclrtCreateStream(&s) == kOk, 4);
      static Gate gate;
      std::vector<std::thread> helpers;
      std::atomic<int> cpu_read{-1};
      switch (what) {
        case kKernelFinalize:
        case kKernelReset:
          // The kernel is running (waiting at its gate) when the call starts.
          gate.dst = p;
          gate.n = 16;
          CHILD_CHECK(aclvmmLaunchKernel(s, gated_kernel, &gate) == kOk, 5);
          CHILD_CHECK(wait_started(gate), 12);
          helpers.emplace_back(open_later, &gate, 300);
          break;
        case kPrefetchFinalize:
          CHILD_CHECK(aclrtMemManagedPrefetchAsync(p, size, kDev0, 0, s) == kOk, 6);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the prefetch start
          break;
        case kCpuFaultFinalize:
          // The page is on the device; aclFinalize waits for a kernel that only waits at its gate
          // while a CPU thread touches the page.
          CHILD_CHECK(aclrtMemset(p, k2M, 0x2a, k2M) == kOk, 7);
          CHILD_CHECK(aclvmmLaunchKernel(s, gated_kernel, &gate) == kOk, 8);
          CHILD_CHECK(wait_started(gate), 13);
          helpers.emplace_back([p, &cpu_read] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            cpu_read.store(p[100]);
          });
          helpers.emplace_back(open_later, &gate, 300);
          break;
      }
      if (what == kKernelReset) CHILD_CHECK(aclrtResetDeviceForce(0) == kOk, 9);
      CHILD_CHECK(aclFinalize() == kOk, 10);
      for (auto& h : helpers) h.join();
      if (what == kCpuFaultFinalize) CHILD_CHECK(cpu_read.load() == 0x2a, 11);
      return 0;
    });
    EXPECT_EQ(r.signal, 0) << (r.signal == SIGALRM ? "the call did not return within 10 s (deadlock)"
                                                    : "crashed");
    EXPECT_EQ(r.exit_code, 0) << "see the child's message on stderr";
  }
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
