// Synchronous aclrtMemcpy / aclrtMemset (behavior.md decisions table and §13; emulation.md §4;
// clients.md A17).
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/test_util.h"

using namespace aclvmm_test;

namespace {

// AllocTest plus VMM ranges, all released (and checked) at TearDown.
class MemcpyTest : public AllocTest {
 protected:
  void TearDown() override {
    for (auto& r : ranges_) {
      for (size_t i = 0; i < r.handles.size(); ++i) {
        if (r.mapped[i]) {
          EXPECT_EQ(aclrtUnmapMem(static_cast<char*>(r.va) + i * k2M), ACL_SUCCESS);
        }
        EXPECT_EQ(aclrtFreePhysical(r.handles[i]), ACL_SUCCESS);
      }
      EXPECT_EQ(aclrtReleaseMemAddress(r.va), ACL_SUCCESS);
    }
    AllocTest::TearDown();
  }

  // A reservation of `chunks` 2 MiB chunks on `device`; chunk i is mapped (its own handle) when
  // map_mask bit i is set.
  char* vmm(size_t chunks, uint32_t map_mask = ~0u, uint32_t device = 0) {
    Range r;
    r.va = reserve(chunks * k2M);
    for (size_t i = 0; i < chunks; ++i) {
      r.handles.push_back(make_handle(k2M, device));
      const bool map = (map_mask >> i) & 1;
      if (map) {
        EXPECT_EQ(aclrtMapMem(static_cast<char*>(r.va) + i * k2M, k2M, 0, r.handles[i], 0), ACL_SUCCESS);
      }
      r.mapped.push_back(map);
    }
    ranges_.push_back(r);
    return static_cast<char*>(r.va);
  }

 private:
  struct Range {
    void* va = nullptr;
    std::vector<aclrtDrvMemHandle> handles;
    std::vector<bool> mapped;
  };
  std::vector<Range> ranges_;
};

// §13: count 0 returns 0 immediately, before any other check.
TEST_F(MemcpyTest, ZeroCountSucceedsWithoutChecks) {
  char* d = dev(64);
  struct Case {
    const char* name;
    std::function<aclError()> call;
  } cases[] = {
      {"memcpy NULL,NULL", [] { return aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE); }},
      {"memcpy kind 99", [] { return aclrtMemcpy(nullptr, 0, nullptr, 0, static_cast<aclrtMemcpyKind>(99)); }},
      {"memcpy kind 6", [&] { return aclrtMemcpy(d, 0, d, 0, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE); }},
      {"memcpy unmapped", [] { return aclrtMemcpy(reinterpret_cast<void*>(0x10), 0, nullptr, 0, ACL_MEMCPY_DEFAULT); }},
      {"memset NULL", [] { return aclrtMemset(nullptr, 0, 1, 0); }},
      {"memset maxCount 0", [&] { return aclrtMemset(d, 0, 1, 0); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), ACL_SUCCESS);
  }
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST_F(MemcpyTest, InvalidArguments) {
  char* d = dev(4096);
  char host[4096] = {0};
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  } cases[] = {
      // §13: NULL dst/src → 100000; only kinds 0..5 are translated, others → 100000
      {"dst NULL", [&] { return aclrtMemcpy(nullptr, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE); }, ACL_ERROR_INVALID_PARAM},
      {"src NULL", [&] { return aclrtMemcpy(d, 64, nullptr, 64, ACL_MEMCPY_HOST_TO_DEVICE); }, ACL_ERROR_INVALID_PARAM},
      {"kind 6", [&] { return aclrtMemcpy(d, 64, d + 64, 64, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE); }, ACL_ERROR_INVALID_PARAM},
      {"kind 7", [&] { return aclrtMemcpy(d, 64, d + 64, 64, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE); }, ACL_ERROR_INVALID_PARAM},
      {"kind 99", [&] { return aclrtMemcpy(d, 64, host, 64, static_cast<aclrtMemcpyKind>(99)); }, ACL_ERROR_INVALID_PARAM},
      {"kind -1", [&] { return aclrtMemcpy(d, 64, host, 64, static_cast<aclrtMemcpyKind>(-1)); }, ACL_ERROR_INVALID_PARAM},
      // ACL-layer checks come before the runtime's destMax check (§0 layer order)
      {"kind 99 and destMax < count", [&] { return aclrtMemcpy(d, 8, host, 64, static_cast<aclrtMemcpyKind>(99)); }, ACL_ERROR_INVALID_PARAM},
      // decisions table: destMax < count → 107000
      {"destMax < count", [&] { return aclrtMemcpy(d, 63, host, 64, ACL_MEMCPY_HOST_TO_DEVICE); }, ACL_ERROR_RT_PARAM_INVALID},
      {"destMax 0", [&] { return aclrtMemcpy(host, 0, d, 1, ACL_MEMCPY_DEVICE_TO_HOST); }, ACL_ERROR_RT_PARAM_INVALID},
      // §13: memset NULL → 100000
      {"memset NULL", [] { return aclrtMemset(nullptr, 64, 0, 64); }, ACL_ERROR_INVALID_PARAM},
      // spec silent; the runtime rejects maxCount < count like destMax < count (107000)
      {"memset maxCount < count", [&] { return aclrtMemset(d, 32, 0, 64); }, ACL_ERROR_RT_PARAM_INVALID},
  };
  h2d(d, std::string(4096, '\x5a'));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  EXPECT_EQ(get(d, 4096), std::string(4096, '\x5a'));  // no rejected call wrote anything
}

// A17: vllm-ascend passes a destMax far larger than the real destination.
TEST_F(MemcpyTest, DestMaxLargerThanRealWorks) {
  const size_t n = 1 * kMiB + 3;
  char* d = dev(n);
  const std::string pat = pattern(n, 1);
  EXPECT_EQ(aclrtMemcpy(d, 2 * n, pat.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  std::string back(n, '\0');
  EXPECT_EQ(aclrtMemcpy(&back[0], SIZE_MAX, d, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, pat);
  EXPECT_EQ(aclrtMemset(d, SIZE_MAX, 0x21, 100), ACL_SUCCESS);
  EXPECT_EQ(get(d, 100), std::string(100, '\x21'));
}

TEST_F(MemcpyTest, RoundTripsOnMallocMemory) {
  const size_t n = 3 * kMiB + 13;
  char* a = dev(n);
  char* b = dev(n);
  const std::string pat = pattern(n, 2);
  h2d(a, pat);
  EXPECT_EQ(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(get(b, n), pat);
  EXPECT_EQ(get(a, n), pat);
  // Sub-ranges at odd offsets.
  EXPECT_EQ(aclrtMemcpy(b + 7, n - 7, a + 1000001, 12345, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  std::string expect = pat;
  expect.replace(7, 12345, pat.substr(1000001, 12345));
  EXPECT_EQ(get(b, n), expect);
  // Host to host through aclrtMallocHost memory.
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, n), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(pinned, n, pat.data(), n, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(pinned, pat.data(), n), 0);
  EXPECT_EQ(aclrtMemcpy(a, n, pinned, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(get(a, n), pat);
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
}

TEST_F(MemcpyTest, RoundTripsOnVmmMemory) {
  char* v = vmm(2);   // two handles back to back
  char* w = vmm(2);
  char* m = dev(4 * kMiB);
  const size_t n = 4 * kMiB;
  const std::string pat = pattern(n, 3);
  h2d(v, pat);  // spans both mappings
  EXPECT_EQ(get(v, n), pat);
  EXPECT_EQ(get(v + k2M, k2M), pat.substr(k2M));  // second mapping alone
  // A short copy across the mapping boundary.
  const std::string small = pattern(200, 9);
  h2d(v + k2M - 100, small);
  std::string expect = pat;
  expect.replace(k2M - 100, 200, small);
  EXPECT_EQ(get(v, n), expect);
  // Device to device: VMM → aclrtMalloc → another VMM range.
  EXPECT_EQ(aclrtMemcpy(m, n, v, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(w, n, m, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(get(w, n), expect);
  // Memset across the boundary.
  EXPECT_EQ(aclrtMemset(w + k2M - 10, 20, 0x77, 20), ACL_SUCCESS);
  expect.replace(k2M - 10, 20, std::string(20, '\x77'));
  EXPECT_EQ(get(w, n), expect);
}

// emulation.md §4: devices reach memory through the device MMU, page by page, so a copy runs on
// from one reservation into the one mapped right after it, as on the hardware; the core does not
// stop it at the reservation's end (found by tests/fuzz, crashes/copy-runs-into-next-block).
TEST_F(MemcpyTest, CopiesRunOnIntoTheAdjacentReservation) {
  void* both = reserve(2 * k2M);
  ASSERT_EQ(aclrtReleaseMemAddress(both), ACL_SUCCESS);
  void* first = nullptr;
  void* second = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&first, k2M, 0, both, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtReserveMemAddress(&second, k2M, 0, static_cast<char*>(both) + k2M, 0), ACL_SUCCESS);
  ASSERT_EQ(second, static_cast<char*>(first) + k2M);
  aclrtDrvMemHandle h[2] = {make_handle(), make_handle()};
  ASSERT_EQ(aclrtMapMem(first, k2M, 0, h[0], 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMapMem(second, k2M, 0, h[1], 0), ACL_SUCCESS);
  const std::string pat = pattern(4096, 5);
  char* boundary = static_cast<char*>(second) - 2048;
  h2d(boundary, pat);
  EXPECT_EQ(get(boundary, 4096), pat);
  EXPECT_EQ(get(second, 2048), pat.substr(2048));  // the second reservation's own bytes
  EXPECT_EQ(aclrtMemset(boundary, 4096, 0x3c, 4096), ACL_SUCCESS);
  EXPECT_EQ(get(boundary, 4096), std::string(4096, '\x3c'));
  // Unmapped, the second reservation stops the copy (507899) and the first keeps its bytes.
  ASSERT_EQ(aclrtUnmapMem(second), ACL_SUCCESS);
  std::string host(4096, '\x01');
  EXPECT_EQ(aclrtMemcpy(boundary, 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), kDrv);
  EXPECT_EQ(get(boundary, 2048), std::string(2048, '\x3c'));
  EXPECT_EQ(aclrtUnmapMem(first), ACL_SUCCESS);
  for (aclrtDrvMemHandle x : h) EXPECT_EQ(aclrtFreePhysical(x), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(first), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(second), ACL_SUCCESS);
}

// Decisions table: kinds 0..5 are accepted whatever the pointers are; the real direction comes
// from the addresses.
TEST_F(MemcpyTest, AnyKindFromZeroToFiveWorks) {
  char* d = dev(8192);
  char* v = vmm(1);
  for (int k = 0; k <= 5; ++k) {
    SCOPED_TRACE(k);
    const auto kind = static_cast<aclrtMemcpyKind>(k);
    const std::string pat = pattern(8192, 10 + k);
    h2d(d, pat, kind);                                                   // host → device
    EXPECT_EQ(aclrtMemcpy(v, 8192, d, 8192, kind), ACL_SUCCESS);         // device → device
    EXPECT_EQ(get(v, 8192, nullptr, kind), pat);                                  // device → host
    std::string h(8192, '\0');
    EXPECT_EQ(aclrtMemcpy(&h[0], 8192, pat.data(), 8192, kind), ACL_SUCCESS);  // host → host
    EXPECT_EQ(h, pat);
  }
}

// A17: sample 12 memsets a host stack object.
TEST_F(MemcpyTest, MemsetOnHostMemory) {
  struct {
    uint64_t a[5];
    char tail[3];
  } obj;
  std::memset(&obj, 0, sizeof obj);
  EXPECT_EQ(aclrtMemset(&obj, sizeof obj, 0xab, sizeof obj), ACL_SUCCESS);
  const std::string bytes(reinterpret_cast<const char*>(&obj), sizeof obj);
  EXPECT_EQ(bytes, std::string(sizeof obj, '\xab'));
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 4096), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(pinned, 4096, 0x3c, 4000), ACL_SUCCESS);
  EXPECT_EQ(std::string(static_cast<char*>(pinned), 4000), std::string(4000, '\x3c'));
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
}

TEST_F(MemcpyTest, MemsetWritesTheLowByte) {
  char* d = dev(3 * kMiB);
  char* v = vmm(2);
  struct Case {
    int32_t value;
    char byte;
  } cases[] = {{0x1234, '\x34'}, {-1, '\xff'}, {0x100, '\0'}, {0x7f, '\x7f'}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(aclrtMemset(d, 3 * kMiB, c.value, 3 * kMiB), ACL_SUCCESS);
    EXPECT_EQ(get(d, 3 * kMiB), std::string(3 * kMiB, c.byte));
    EXPECT_EQ(aclrtMemset(v, 4 * kMiB, c.value, 4 * kMiB), ACL_SUCCESS);
    EXPECT_EQ(get(v, 4 * kMiB), std::string(4 * kMiB, c.byte));
  }
}

// Decisions table: a device range that is not fully mapped, or that the executing device may
// not access → 507899.
TEST_F(MemcpyTest, RangeNotFullyMapped) {
  char* half = vmm(2, 0x1);      // first chunk mapped, second not
  char* hole = vmm(3, 0x5);      // chunks 0 and 2 mapped, 1 not
  char* none = vmm(1, 0x0);      // reserved, never mapped
  char* m = dev(kMiB);
  void* released = reserve(k2M);
  ASSERT_EQ(aclrtReleaseMemAddress(released), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  char* other = vmm(1, 0x1, 1);  // device 1 memory; device 0 has no access
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  std::string host(8 * kMiB, '\x01');
  h2d(half, std::string(k2M, '\x66'));
  struct Case {
    const char* name;
    std::function<aclError()> call;
  } cases[] = {
      {"H2D over the unmapped half", [&] { return aclrtMemcpy(half, 4 * kMiB, host.data(), 4 * kMiB, ACL_MEMCPY_HOST_TO_DEVICE); }},
      {"D2H from the unmapped half", [&] { return aclrtMemcpy(&host[0], 16, half + k2M, 16, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"D2H across a hole", [&] { return aclrtMemcpy(&host[0], 6 * kMiB, hole, 6 * kMiB, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"D2D into a hole", [&] { return aclrtMemcpy(hole + k2M - 8, 16, m, 16, ACL_MEMCPY_DEVICE_TO_DEVICE); }},
      {"memset over the unmapped half", [&] { return aclrtMemset(half + k2M - 1, 2, 0, 2); }},
      {"D2H from a never-mapped reservation", [&] { return aclrtMemcpy(&host[0], 64, none, 64, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"memset a never-mapped reservation", [&] { return aclrtMemset(none, 64, 0, 64); }},
      {"D2H from a released reservation", [&] { return aclrtMemcpy(&host[0], 64, released, 64, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"D2H past the end of aclrtMalloc", [&] { return aclrtMemcpy(&host[0], 8 * kMiB, m, 8 * kMiB, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"D2H from another device's mapping", [&] { return aclrtMemcpy(&host[0], 64, other, 64, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"memset another device's mapping", [&] { return aclrtMemset(other, 64, 0, 64); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), kDrv);
    const char* msg = aclGetRecentErrMsg();
    ASSERT_NE(msg, nullptr);
    EXPECT_NE(std::string(msg).find("507899"), std::string::npos) << msg;
  }
  EXPECT_EQ(get(half, 16), std::string(16, '\x66'));  // the mapped part still works
}

TEST_F(MemcpyTest, UnmappedAfterUnmap) {
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);
  h2d(va, std::string(100, '\x09'));
  ASSERT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  char buf[100];
  EXPECT_EQ(aclrtMemcpy(buf, 100, va, 100, ACL_MEMCPY_DEVICE_TO_HOST), kDrv);
  EXPECT_EQ(aclrtMemset(va, 100, 0, 100), kDrv);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

// emulation.md §1.5: a bad host pointer gives an error code, never a crash. Run in a child so a
// crash is reported rather than killing the test binary.
TEST_F(MemcpyTest, BadHostPointerIsAnErrorNotACrash) {
  char* d = dev(4096);
  void* bad = reinterpret_cast<void*>(0x10);
  struct Case {
    const char* name;
    std::function<aclError()> call;
  } cases[] = {
      {"H2D from 0x10", [&] { return aclrtMemcpy(d, 64, bad, 64, ACL_MEMCPY_HOST_TO_DEVICE); }},
      {"D2H into 0x10", [&] { return aclrtMemcpy(bad, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST); }},
      {"H2H from 0x10", [&] { char b[64]; return aclrtMemcpy(b, 64, bad, 64, ACL_MEMCPY_HOST_TO_HOST); }},
      {"memset 0x10", [&] { return aclrtMemset(bad, 64, 0, 64); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_CHILD_OK(run_in_child([&] { return c.call() != ACL_SUCCESS ? 0 : 1; }),
                    "the call returned ACL_SUCCESS");
  }
}

// ---------------------------------------------------------------------------------------------

using MemcpyConcurrency = MemcpyTest;

// §13: device memory needs a current context (107002) on the calling thread.
TEST_F(MemcpyConcurrency, NoContextOnNewThread) {
  char* d = dev(4096);
  char* v = vmm(1);
  std::thread([&] {
    char host[64] = {0};
    EXPECT_EQ(aclrtMemcpy(host, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtMemcpy(v, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtMemcpy(v, 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtMemset(v, 64, 1, 64), ACL_ERROR_RT_CONTEXT_NULL);
  }).join();
}

TEST_F(MemcpyConcurrency, ParallelCopiesIntoOneRange) {
  constexpr int kThreads = 4;
  char* v = vmm(kThreads);  // one 2 MiB slice per thread, each its own mapping
  char* m = dev(kThreads * k2M);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
      for (int round = 0; round < 8; ++round) {
        const std::string pat = pattern(k2M, 100 * t + round);
        char* slice = v + t * k2M;
        char* mslice = m + t * k2M;
        EXPECT_EQ(aclrtMemcpy(slice, k2M, pat.data(), k2M, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
        EXPECT_EQ(aclrtMemcpy(mslice, k2M, slice, k2M, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
        std::string back(k2M, '\0');
        EXPECT_EQ(aclrtMemcpy(&back[0], k2M, mslice, k2M, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        EXPECT_TRUE(back == pat) << "thread " << t << " round " << round;
      }
      EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(get(v + t * k2M, k2M) == pattern(k2M, 100 * t + 7)) << t;
}

}  // namespace
