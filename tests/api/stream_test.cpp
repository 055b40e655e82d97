// Streams, stream-ordered copies and emulated kernels (behavior.md decisions table and §13;
// emulation.md §4, §8; include/aclvmm/aclvmm.h).
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// AllocTest plus VMM mappings and bare reservations, all released (and checked) at TearDown.
class StreamTest : public AllocTest {
 protected:
  void TearDown() override {
    for (auto& [va, h] : maps_) {
      EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
      EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
      EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    }
    for (void* va : unmapped_) EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    AllocTest::TearDown();
  }
  // One mapped handle of `size` (multiple of 2 MiB) in its own reservation.
  char* vmm(size_t size, uint32_t device = 0) {
    void* va = reserve(size);
    aclrtDrvMemHandle h = make_handle(size, device);
    EXPECT_EQ(aclrtMapMem(va, size, 0, h, 0), ACL_SUCCESS);
    maps_.emplace_back(va, h);
    return static_cast<char*>(va);
  }
  // A reservation with nothing mapped.
  char* unmapped(size_t size) {
    void* va = reserve(size);
    unmapped_.push_back(va);
    return static_cast<char*>(va);
  }
  aclrtStream stream() {
    aclrtStream s = nullptr;
    EXPECT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    EXPECT_NE(s, nullptr);
    return s;
  }

 private:
  std::vector<void*> unmapped_;
  std::vector<std::pair<void*, aclrtDrvMemHandle>> maps_;
};

// ---------------------------------------------------------------------------------------------
// Emulated kernels

struct XformArgs {
  const char* src = nullptr;
  char* dst = nullptr;
  size_t n = 0;
  int32_t device = -1;
  aclError read_rc = -1, write_rc = -1;
};

// dst[i] = src[i] ^ 0x5a + (i & 7), through the device view of memory.
void xform_kernel(aclvmmKernelContext* ctx, void* p) {
  auto* a = static_cast<XformArgs*>(p);
  a->device = aclvmmKernelDeviceId(ctx);
  std::string buf(a->n, '\0');
  a->read_rc = aclvmmKernelRead(ctx, &buf[0], a->src, a->n);
  for (size_t i = 0; i < a->n; ++i) buf[i] = static_cast<char>((buf[i] ^ 0x5a) + (i & 7));
  a->write_rc = aclvmmKernelWrite(ctx, a->dst, buf.data(), a->n);
}

std::string xform(const std::string& in) {
  std::string out = in;
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>((out[i] ^ 0x5a) + (i & 7));
  return out;
}

struct SleepWriteArgs {
  int ms = 0;
  char* dst = nullptr;
  char value = 0;
  size_t n = 0;
  std::atomic<int>* done = nullptr;
};

void sleep_write_kernel(aclvmmKernelContext* ctx, void* p) {
  auto* a = static_cast<SleepWriteArgs*>(p);
  sleep_ms(a->ms);
  if (a->dst) {
    std::string buf(a->n, a->value);
    aclvmmKernelWrite(ctx, a->dst, buf.data(), a->n);
  }
  if (a->done) a->done->fetch_add(1);
}

// ---------------------------------------------------------------------------------------------

TEST_F(StreamTest, InvalidArguments) {
  char* d = dev(4096);
  char host[64] = {0};
  aclrtStream destroyed = stream();
  ASSERT_EQ(aclrtDestroyStream(destroyed), ACL_SUCCESS);
  int forged_storage = 0;
  aclrtStream forged = &forged_storage;
  aclrtStream s = stream();
  auto noop = +[](aclvmmKernelContext*, void*) {};
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  } cases[] = {
      // §13: stream calls with NULL → 100000; async copies share aclrtMemcpy's ACL checks
      {"CreateStream(NULL)", [] { return aclrtCreateStream(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"DestroyStream(NULL)", [] { return aclrtDestroyStream(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"DestroyStreamForce(NULL)", [] { return aclrtDestroyStreamForce(nullptr); }, ACL_ERROR_INVALID_PARAM},
      {"MemcpyAsync dst NULL", [&] { return aclrtMemcpyAsync(nullptr, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, s); }, ACL_ERROR_INVALID_PARAM},
      {"MemcpyAsync src NULL", [&] { return aclrtMemcpyAsync(d, 64, nullptr, 64, ACL_MEMCPY_HOST_TO_DEVICE, s); }, ACL_ERROR_INVALID_PARAM},
      {"MemcpyAsync kind 6", [&] { return aclrtMemcpyAsync(d, 64, d + 64, 64, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, s); }, ACL_ERROR_INVALID_PARAM},
      {"MemcpyAsync kind 7", [&] { return aclrtMemcpyAsync(d, 64, d + 64, 64, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE, s); }, ACL_ERROR_INVALID_PARAM},
      {"MemcpyAsync kind 99", [&] { return aclrtMemcpyAsync(d, 64, host, 64, static_cast<aclrtMemcpyKind>(99), s); }, ACL_ERROR_INVALID_PARAM},
      {"MemsetAsync NULL", [&] { return aclrtMemsetAsync(nullptr, 64, 0, 64, s); }, ACL_ERROR_INVALID_PARAM},
      {"LaunchKernel(NULL func)", [&] { return aclvmmLaunchKernel(s, nullptr, nullptr); }, ACL_ERROR_INVALID_PARAM},
      // decisions table: destMax < count → 107000
      {"MemcpyAsync destMax < count", [&] { return aclrtMemcpyAsync(d, 32, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, s); }, ACL_ERROR_RT_PARAM_INVALID},
      // a stream that is not live → runtime RT_ERROR_INVALID_VALUE → 107000 (§0)
      {"Synchronize(destroyed)", [&] { return aclrtSynchronizeStream(destroyed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Destroy(destroyed)", [&] { return aclrtDestroyStream(destroyed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"DestroyForce(destroyed)", [&] { return aclrtDestroyStreamForce(destroyed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"MemcpyAsync(destroyed)", [&] { return aclrtMemcpyAsync(d, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, destroyed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"MemsetAsync(destroyed)", [&] { return aclrtMemsetAsync(d, 64, 0, 64, destroyed); }, ACL_ERROR_RT_PARAM_INVALID},
      {"LaunchKernel(destroyed)", [&] { return aclvmmLaunchKernel(destroyed, noop, nullptr); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Synchronize(forged)", [&] { return aclrtSynchronizeStream(forged); }, ACL_ERROR_RT_PARAM_INVALID},
      {"Destroy(forged)", [&] { return aclrtDestroyStream(forged); }, ACL_ERROR_RT_PARAM_INVALID},
      {"MemcpyAsync(forged)", [&] { return aclrtMemcpyAsync(d, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, forged); }, ACL_ERROR_RT_PARAM_INVALID},
      {"MemsetAsync(forged)", [&] { return aclrtMemsetAsync(d, 64, 0, 64, forged); }, ACL_ERROR_RT_PARAM_INVALID},
      {"LaunchKernel(forged)", [&] { return aclvmmLaunchKernel(forged, noop, nullptr); }, ACL_ERROR_RT_PARAM_INVALID},
      // §13: count 0 → 0 with no other check
      {"MemcpyAsync count 0", [&] { return aclrtMemcpyAsync(nullptr, 0, nullptr, 0, static_cast<aclrtMemcpyKind>(99), forged); }, ACL_SUCCESS},
      {"MemsetAsync count 0", [&] { return aclrtMemsetAsync(nullptr, 0, 0, 0, forged); }, ACL_SUCCESS},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // nothing bad was queued
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(StreamTest, WorkRunsInSubmissionOrder) {
  constexpr size_t n = 64 * 1024;
  char* a = dev(n);
  char* b = vmm(k2M);
  char* c = dev(n);
  aclrtStream s = stream();
  // The simple chain: memset 1, copy, memset 2, copy.
  ASSERT_EQ(aclrtMemsetAsync(a, n, 1, n, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(a, n, 2, n, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(c, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(get(b, n), std::string(n, '\x01'));
  EXPECT_EQ(get(c, n), std::string(n, '\x02'));
  EXPECT_EQ(get(a, n), std::string(n, '\x02'));

  // A longer pseudo-random chain over A (malloc), B (VMM) and pinned host memory, checked against
  // a host model.
  std::string ma(n, '\0'), mb(n, '\0');
  ASSERT_EQ(aclrtMemset(a, n, 0, n), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(b, n, 0, n), ACL_SUCCESS);
  char* src = pinned(n);
  const std::string pat = pattern(n, 42);
  std::memcpy(src, pat.data(), n);
  char* out = pinned(n);
  uint64_t rng = 12345;
  auto next = [&](uint64_t mod) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (rng >> 33) % mod;
  };
  for (int op = 0; op < 300; ++op) {
    const size_t off = next(n), len = 1 + next(n - off);
    const size_t off2 = next(n - len + 1);
    switch (next(5)) {
      case 0: {
        const int v = static_cast<int>(next(256));
        ASSERT_EQ(aclrtMemsetAsync(a + off, n - off, v, len, s), ACL_SUCCESS);
        ma.replace(off, len, std::string(len, static_cast<char>(v)));
        break;
      }
      case 1:
        ASSERT_EQ(aclrtMemcpyAsync(b + off2, n - off2, a + off, len, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
        mb.replace(off2, len, ma.substr(off, len));
        break;
      case 2:
        ASSERT_EQ(aclrtMemcpyAsync(a + off2, n - off2, b + off, len, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
        ma.replace(off2, len, mb.substr(off, len));
        break;
      case 3:
        ASSERT_EQ(aclrtMemcpyAsync(a + off, n - off, src + off2, len, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
        ma.replace(off, len, pat.substr(off2, len));
        break;
      default: {
        const int v = static_cast<int>(next(256));
        ASSERT_EQ(aclrtMemsetAsync(b + off, n - off, v, len, s), ACL_SUCCESS);
        mb.replace(off, len, std::string(len, static_cast<char>(v)));
        break;
      }
    }
  }
  ASSERT_EQ(aclrtMemcpyAsync(out, n, b, n, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_TRUE(std::string(out, n) == mb);
  EXPECT_TRUE(get(a, n) == ma);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// Decisions table: for async calls the 507899 of an unmapped range is reported by the next
// synchronisation of that stream.
TEST_F(StreamTest, AsyncFaultIsReportedByTheNextSync) {
  char* hole = unmapped(k2M);
  char* d = dev(4096);
  char* host = pinned(4096);
  aclrtStream s = stream();
  struct Case {
    const char* name;
    aclrtStream stream;
    std::function<aclError(aclrtStream)> enqueue;
  } cases[] = {
      {"D2H from unmapped", s, [&](aclrtStream st) { return aclrtMemcpyAsync(host, 64, hole, 64, ACL_MEMCPY_DEVICE_TO_HOST, st); }},
      {"D2D into unmapped", s, [&](aclrtStream st) { return aclrtMemcpyAsync(hole, 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, st); }},
      {"memset unmapped", s, [&](aclrtStream st) { return aclrtMemsetAsync(hole + 100, 64, 1, 64, st); }},
      {"default stream D2H from unmapped", nullptr, [&](aclrtStream st) { return aclrtMemcpyAsync(host, 64, hole, 64, ACL_MEMCPY_DEVICE_TO_HOST, st); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.enqueue(c.stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(c.stream), kDrv);
    const char* msg = aclGetRecentErrMsg();
    ASSERT_NE(msg, nullptr);
    EXPECT_NE(std::string(msg).find("507899"), std::string::npos) << msg;
    EXPECT_EQ(aclrtSynchronizeStream(c.stream), ACL_SUCCESS);  // reported once
    // The stream keeps working.
    EXPECT_EQ(aclrtMemsetAsync(d, 4096, 0x3d, 64, c.stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpyAsync(host, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST, c.stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(c.stream), ACL_SUCCESS);
    EXPECT_EQ(std::string(host, 64), std::string(64, '\x3d'));
    std::memset(host, 0, 64);
  }
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// §13: a NULL stream is the current context's default stream.
TEST_F(StreamTest, NullIsTheDefaultStream) {
  const size_t n = 3 * kMiB;
  char* d = dev(n);
  char* host = pinned(n);
  const std::string pat = pattern(n, 7);
  std::memcpy(host, pat.data(), n);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(d, n, host, n, ACL_MEMCPY_HOST_TO_DEVICE, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(d, n, 0xee, 10, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(host, n, d, n, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  std::string expect = pat;
  expect.replace(0, 10, std::string(10, '\xee'));
  EXPECT_TRUE(std::string(host, n) == expect);
}

TEST_F(StreamTest, DestroyWaitsForQueuedWork) {
  char* d = dev(4096);
  ASSERT_EQ(aclrtMemset(d, 4096, 0, 4096), ACL_SUCCESS);
  aclrtStream s = stream();
  std::atomic<int> done{0};
  SleepWriteArgs args{100, d, '\x44', 4096, &done};
  ASSERT_EQ(aclvmmLaunchKernel(s, sleep_write_kernel, &args), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(d, 4096, 0x45, 16, s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(done.load(), 1);
  std::string expect(4096, '\x44');
  expect.replace(0, 16, std::string(16, '\x45'));
  EXPECT_EQ(get(d, 4096), expect);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID);
}

TEST_F(StreamTest, DestroyForceDropsPendingWork) {
  char* d = dev(4096);
  ASSERT_EQ(aclrtMemset(d, 4096, 0, 4096), ACL_SUCCESS);
  aclrtStream s = stream();
  std::atomic<int> first{0}, second{0};
  SleepWriteArgs slow{200, nullptr, 0, 0, &first};
  SleepWriteArgs after{0, d, '\x99', 64, &second};
  ASSERT_EQ(aclvmmLaunchKernel(s, sleep_write_kernel, &slow), ACL_SUCCESS);
  ASSERT_EQ(aclvmmLaunchKernel(s, sleep_write_kernel, &after), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(d + 64, 4032, 0x98, 64, s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStreamForce(s), ACL_SUCCESS);
  sleep_ms(50);
  EXPECT_EQ(second.load(), 0);  // never started: discarded
  EXPECT_EQ(get(d, 4096), std::string(4096, '\0'));
  EXPECT_EQ(aclrtDestroyStreamForce(s), ACL_ERROR_RT_PARAM_INVALID);
}

TEST_F(StreamTest, SynchronizeDeviceWaitsForEveryStream) {
  constexpr int kStreams = 3;
  char* d = dev(kStreams * 4096);
  char* copy = vmm(k2M);
  ASSERT_EQ(aclrtMemset(d, kStreams * 4096, 0, kStreams * 4096), ACL_SUCCESS);
  std::atomic<int> done{0};
  std::vector<SleepWriteArgs> args(kStreams);
  std::vector<aclrtStream> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(stream());
    args[i] = SleepWriteArgs{40 * (i + 1), d + i * 4096, static_cast<char>('a' + i), 4096, &done};
    ASSERT_EQ(aclvmmLaunchKernel(streams[i], sleep_write_kernel, &args[i]), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(copy + i * 4096, 4096, d + i * 4096, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE, streams[i]),
              ACL_SUCCESS);
  }
  SleepWriteArgs on_default{60, nullptr, 0, 0, &done};
  ASSERT_EQ(aclvmmLaunchKernel(nullptr, sleep_write_kernel, &on_default), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(done.load(), kStreams + 1);
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(get(copy + i * 4096, 4096), std::string(4096, static_cast<char>('a' + i)));
  }
  for (aclrtStream s : streams) EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// emulation.md §4 / aclvmm.h: a host function runs as a device task with a device view of memory.
TEST_F(StreamTest, KernelTransformsDeviceMemory) {
  ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
  const size_t n = 3 * kMiB + 100;
  char* in = vmm(4 * kMiB, 2);
  char* out = dev(n);
  const std::string pat = pattern(n, 11);
  ASSERT_EQ(aclrtMemcpy(in, n, pat.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  aclrtStream s = stream();
  XformArgs args;
  args.src = in;
  args.dst = out;
  args.n = n;
  ASSERT_EQ(aclvmmLaunchKernel(s, xform_kernel, &args), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(args.device, 2);
  EXPECT_EQ(args.read_rc, ACL_SUCCESS);
  EXPECT_EQ(args.write_rc, ACL_SUCCESS);
  EXPECT_TRUE(get(out, n) == xform(pat));
  // Kernels are ordered with copies on the same stream.
  XformArgs back;
  back.src = out;
  back.dst = in;
  back.n = 4096;
  ASSERT_EQ(aclrtMemsetAsync(out, n, 0x10, 4096, s), ACL_SUCCESS);
  ASSERT_EQ(aclvmmLaunchKernel(s, xform_kernel, &back), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(get(in, 4096), xform(std::string(4096, '\x10')));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(2), ACL_SUCCESS);
}

TEST_F(StreamTest, KernelFaultIsReportedByTheNextSync) {
  char* hole = unmapped(k2M);
  char* good = dev(4096);
  ASSERT_EQ(aclrtMemset(good, 4096, 0x01, 4096), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  char* other = vmm(k2M, 1);  // device 1 memory, not accessible to device 0
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream s = stream();
  struct Case {
    const char* name;
    const char* src;
    char* dst;
    aclError read_rc, write_rc;
  } cases[] = {
      {"read unmapped", hole, good, kDrv, kDrv},  // later accesses keep failing (aclvmm.h)
      {"write unmapped", good, hole + 4096, ACL_SUCCESS, kDrv},
      {"read another device's memory", other, good, kDrv, kDrv},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    XformArgs args;
    args.src = c.src;
    args.dst = c.dst;
    args.n = 4096;
    ASSERT_EQ(aclvmmLaunchKernel(s, xform_kernel, &args), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(s), kDrv);
    EXPECT_EQ(args.read_rc, c.read_rc);
    EXPECT_EQ(args.write_rc, c.write_rc);
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(get(good, 4096), std::string(4096, '\x01'));  // the failed kernels wrote nothing
  }
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------

using StreamConcurrency = StreamTest;

TEST_F(StreamConcurrency, NoContextOnNewThread) {
  char* d = dev(4096);
  std::thread([&] {
    aclrtStream s = nullptr;
    char host[64];
    EXPECT_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);  // §13: needs a context
    EXPECT_EQ(aclrtMemcpyAsync(host, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtMemsetAsync(d, 64, 0, 64, nullptr), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclvmmLaunchKernel(nullptr, sleep_write_kernel, nullptr), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_ERROR_RT_CONTEXT_NULL);
  }).join();
}

TEST_F(StreamConcurrency, FourThreadsWithTheirOwnStreams) {
  constexpr int kThreads = 4;
  constexpr size_t n = 512 * 1024;
  char* vm = vmm(kThreads * k2M);  // one mapping shared by all, disjoint slices
  std::vector<char*> devs, srcs, outs;
  for (int t = 0; t < kThreads; ++t) {
    devs.push_back(dev(n));
    srcs.push_back(pinned(n));
    outs.push_back(pinned(n));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
      aclrtStream s = nullptr;
      ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
      char* slice = vm + t * k2M;
      for (int round = 0; round < 10; ++round) {
        const std::string pat = pattern(n, 1000 * t + round);
        std::memcpy(srcs[t], pat.data(), n);
        EXPECT_EQ(aclrtMemcpyAsync(devs[t], n, srcs[t], n, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
        EXPECT_EQ(aclrtMemsetAsync(devs[t] + round, n - round, 0xc0 + t, 100, s), ACL_SUCCESS);
        EXPECT_EQ(aclrtMemcpyAsync(slice, n, devs[t], n, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
        EXPECT_EQ(aclrtMemcpyAsync(outs[t], n, slice, n, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
        EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        std::string expect = pat;
        expect.replace(round, 100, std::string(100, static_cast<char>(0xc0 + t)));
        EXPECT_TRUE(std::string(outs[t], n) == expect) << "thread " << t << " round " << round;
      }
      EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
      EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
