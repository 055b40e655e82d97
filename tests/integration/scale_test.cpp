// Scale: a million mappings of one handle, the resident cost of eight emulated devices, and
// ten thousand reservation cycles.
#include <fcntl.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>

#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;
using Clock = std::chrono::steady_clock;
using Scale = AclTest;

long read_long(const char* path) {
  std::ifstream in(path);
  long v = -1;
  in >> v;
  return v;
}

size_t maps_lines() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST_F(Scale, OneHandleAtAMillionAddresses) {
  const auto t0 = Clock::now();
  constexpr size_t kMaps = 1000000;
  const long max_map_count = read_long("/proc/sys/vm/max_map_count");
  ASSERT_GT(max_map_count, 0);
  const size_t lines_before = maps_lines();

  void* rsv = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&rsv, kMaps * k2M, 0, nullptr, 0), ACL_SUCCESS);
  aclrtDrvMemHandle h = make_handle();
  for (size_t i = 0; i < kMaps; ++i) {
    aclError rc = aclrtMapMem(at(rsv, i * k2M), k2M, 0, h, 0);
    if (rc != ACL_SUCCESS) {
      FAIL() << "aclrtMapMem #" << i << " returned " << rc;
    }
  }
  const double t_map = seconds_since(t0);
  EXPECT_EQ(live_count("mappings"), static_cast<long>(kMaps));
  EXPECT_EQ(live_count("physical_handles"), 1);
  // Device mappings cost no kernel VMAs: the process stays far below vm.max_map_count.
  const size_t lines = maps_lines();
  EXPECT_LT(lines, lines_before + 1000);
  EXPECT_LT(lines, static_cast<size_t>(max_map_count) / 4);

  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<size_t> pick(0, kMaps - 1), inner(0, k2M - 1);
  size_t bad = 0;
  for (int q = 0; q < 10000; ++q) {
    aclrtPtrAttributes a{};
    const void* p = at(rsv, pick(rng) * k2M + inner(rng));
    if (aclrtPointerGetAttributes(p, &a) != ACL_SUCCESS || a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE ||
        a.location.id != 0 || a.pageSize != k2M) {
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u);
  // All mappings share the same bytes: write through one, read through another.
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE(round);
    const size_t i = pick(rng), j = pick(rng), off = inner(rng) & ~size_t(4095) & (k2M - 65536);
    const std::string bytes = pattern(65536, 50 + round);
    h2d(at(rsv, i * k2M + off), bytes);
    EXPECT_EQ(get(at(rsv, j * k2M + off), bytes.size()), bytes);
  }
  // A copy spanning many consecutive mappings sees the same 2 MiB repeated.
  const std::string page = get(at(rsv, 7 * k2M), k2M);
  const std::string run = get(at(rsv, 100 * k2M), 4 * k2M);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(run.compare(k * k2M, k2M, page), 0) << k;

  const auto t1 = Clock::now();
  size_t unmap_failures = 0;
  for (size_t i = kMaps; i-- > 0;) unmap_failures += aclrtUnmapMem(at(rsv, i * k2M)) != ACL_SUCCESS;
  EXPECT_EQ(unmap_failures, 0u);
  const double t_unmap = seconds_since(t1);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(rsv), ACL_SUCCESS);
  EXPECT_EQ(live_count("mappings"), 0);
  EXPECT_EQ(live_count("physical_handles"), 0);
  EXPECT_EQ(live_count("reservations"), 0);
  EXPECT_EQ(read_long("/proc/sys/vm/max_map_count"), max_map_count);  // untouched
  const double total = seconds_since(t0);
  RecordProperty("map_seconds", std::to_string(t_map));
  RecordProperty("unmap_seconds", std::to_string(t_unmap));
  RecordProperty("total_seconds", std::to_string(total));
  std::printf("[ scale    ] 1e6 maps %.2f s, unmaps %.2f s, total %.2f s, /proc/self/maps %zu lines\n",
              t_map, t_unmap, total, lines);
  EXPECT_LT(total, 90.0);
}

// Runs in a fresh exec of this binary (no runtime state inherited): VmRSS before aclInit and after
// aclInit + aclrtSetDevice on all eight devices + one 2 MiB physical allocation per device.
void rss_child_body(int fd) {
  uint64_t out[3] = {rss_status(), 0, 0};
  aclError first = aclInit(nullptr);
  for (int32_t d = 0; d < 8 && first == ACL_SUCCESS; ++d) {
    first = aclrtSetDevice(d);
    if (first != ACL_SUCCESS) break;
    aclrtPhysicalMemProp p = device_prop(static_cast<uint32_t>(d));
    aclrtDrvMemHandle h = nullptr;
    first = aclrtMallocPhysical(&h, k2M, &p, 0);
  }
  uint32_t count = 0;
  if (first == ACL_SUCCESS) first = aclrtGetDeviceCount(&count);
  out[1] = rss_status();
  out[2] = first == ACL_SUCCESS && count == 8 ? 0 : (first ? first : 1);
  ssize_t w = write(fd, out, sizeof out);
  _exit(w == sizeof out ? 0 : 3);
}

TEST(ScaleStartup, EightEmulatedDevicesCostAFewMiB) {
  if (const char* fd = getenv("ACLVMM_ITEST_RSS_FD")) rss_child_body(atoi(fd));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 1);
    setenv("ACLVMM_ITEST_RSS_FD", std::to_string(fds[1]).c_str(), 1);
    unsetenv("ACLVMM_DEVICE_COUNT");
    unsetenv("ACLVMM_DEVICE_MEMORY");
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    execl("/proc/self/exe", "aclvmm_integration_tests",
          "--gtest_filter=ScaleStartup.EightEmulatedDevicesCostAFewMiB", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  uint64_t out[3] = {0, 0, 99};
  ssize_t got = read(fds[0], out, sizeof out);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof out));
  EXPECT_EQ(out[2], 0u) << "first failing call returned " << out[2];
  ASSERT_GT(out[0], 0u);
  const uint64_t growth = out[1] > out[0] ? out[1] - out[0] : 0;
  RecordProperty("rss_growth_bytes", std::to_string(growth));
  std::printf("[ scale    ] 8 devices x 64 GiB: VmRSS %llu -> %llu KiB (+%llu KiB)\n",
              static_cast<unsigned long long>(out[0] >> 10), static_cast<unsigned long long>(out[1] >> 10),
              static_cast<unsigned long long>(growth >> 10));
  EXPECT_LT(growth, 16 * kMiB);
}

// Largest reservation the device window grants now (GiB resolution).
size_t largest_reservation(void** base) {
  size_t lo = 0, hi = 16 * 1024;  // in GiB
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    void* va = nullptr;
    if (aclrtReserveMemAddress(&va, mid * kGiB, 0, nullptr, 0) == ACL_SUCCESS) {
      EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
      lo = mid;
      *base = va;
    } else {
      hi = mid - 1;
    }
  }
  return lo * kGiB;
}

TEST_F(Scale, TenThousandReservationCyclesDoNotLeakAddressSpace) {
  void* first_base = nullptr;
  const size_t largest = largest_reservation(&first_base);
  ASSERT_GE(largest, 1024 * kGiB);  // the general device window is 5.25 TiB (emulation.md §3)

  // 10,000 cycles of 1 GiB: a leak of one heap per cycle would exhaust the window halfway.
  std::set<uint64_t> bases;
  for (int i = 0; i < 10000; ++i) {
    void* va = nullptr;
    aclError rc = aclrtReserveMemAddress(&va, kGiB, 0, nullptr, i & 1);
    if (rc != ACL_SUCCESS) FAIL() << "reservation #" << i << " returned " << rc;
    bases.insert(u64(va));
    if (aclrtReleaseMemAddress(va) != ACL_SUCCESS) FAIL() << "release #" << i;
  }
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, kGiB, 0, nullptr, 0), ACL_SUCCESS);  // the 10,001st
  bases.insert(u64(va));
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_LE(bases.size(), 2u) << "released ranges are handed out again";

  // Mixed sizes with up to 64 live, released in random order: afterwards the window is whole.
  std::mt19937_64 rng(7);
  const size_t sizes[] = {512, k2M, 6 * kMiB, 100 * kMiB, 513 * kMiB, kGiB, 3 * kGiB + k2M};
  std::vector<void*> live;
  for (int i = 0; i < 10000; ++i) {
    if (live.size() == 64 || (!live.empty() && rng() % 3 == 0)) {
      size_t k = rng() % live.size();
      ASSERT_EQ(aclrtReleaseMemAddress(live[k]), ACL_SUCCESS);
      live[k] = live.back();
      live.pop_back();
    }
    void* p = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&p, sizes[rng() % 7], 0, nullptr, 0), ACL_SUCCESS) << i;
    live.push_back(p);
  }
  EXPECT_EQ(live_count("reservations"), static_cast<long>(live.size()));
  for (void* p : live) EXPECT_EQ(aclrtReleaseMemAddress(p), ACL_SUCCESS);
  EXPECT_EQ(live_count("reservations"), 0);
  void* whole = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&whole, largest, 0, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(whole, first_base);
  EXPECT_EQ(aclrtReleaseMemAddress(whole), ACL_SUCCESS);
}

}  // namespace
