// Statistics and leak reporting (emulation.md §7 ACLVMM_STATS_FILE, §8 aclvmmStatsJson, §9 leaks;
// conventions.md §2.1 log line format).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

// In a forked child: drop whatever runtime the parent left so that the next aclInit re-reads
// the environment.
void reset_runtime_in_child() {
  (void)aclInit(nullptr);
  while (aclFinalize() == ACL_SUCCESS) {
  }
}

std::string temp_path(const char* tag) {
  std::string p = std::string("/tmp/aclvmm_") + tag + "_XXXXXX";
  int fd = mkstemp(&p[0]);
  if (fd >= 0) close(fd);
  unlink(p.c_str());
  return p;
}

class StatsJsonTest : public AclTest {};

TEST_F(StatsJsonTest, HasEveryRequiredKeyWithItsType) {
  const char* text = aclvmmStatsJson();
  ASSERT_NE(text, nullptr);
  Json j;
  ASSERT_TRUE(parse_json(text, &j)) << text;
  ASSERT_EQ(j.type, Json::kObject);
  const Json* soc = j.get("soc");
  ASSERT_TRUE(soc && soc->type == Json::kString) << text;
  EXPECT_EQ(soc->s, aclrtGetSocName());
  const Json* driver = j.get("driver");
  ASSERT_TRUE(driver && driver->type == Json::kString) << text;
  EXPECT_EQ(driver->s, "emu");
  const Json* devices = j.get("devices");
  ASSERT_TRUE(devices && devices->type == Json::kArray) << text;
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(devices->arr.size(), count);
  std::set<long long> ids;
  for (const Json& d : devices->arr) {
    for (const char* key : {"id", "memory_total", "memory_used"}) {
      const Json* v = d.get(key);
      EXPECT_TRUE(v && v->type == Json::kInt) << key;
    }
    if (d.get("id")) ids.insert(d.get("id")->i);
    EXPECT_EQ(stat_int(d, "memory_total"), 64ll << 30) << "Ascend910B1 has 64 GiB per device";
    EXPECT_GE(stat_int(d, "memory_used"), 0);
  }
  EXPECT_EQ(ids.size(), count);
  for (const char* key : {"physical_handles", "reservations", "mappings", "exports", "imports",
                          "managed_allocations"}) {
    EXPECT_EQ(stat_int(j, std::string("live.") + key), 0) << key;
  }
  const Json* tracking = j.path("managed.fault_tracking");
  EXPECT_TRUE(tracking && tracking->type == Json::kBool) << text;
  for (const char* key : {"host_faults", "device_faults", "bytes_to_device", "bytes_to_host",
                          "evictions", "prefetch_bytes"}) {
    EXPECT_GE(stat_int(j, std::string("managed.") + key), 0) << key;
  }
  EXPECT_GE(stat_int(j, "ipc.imports_denied"), 0);
}

TEST_F(StatsJsonTest, CountsFollowAllocationsMappingsAndFrees) {
  const Json base = stats();
  const long long used0 = device_used(base, 0), used1 = device_used(base, 1);
  size_t free_before = 0, total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total), ACL_SUCCESS);

  aclrtDrvMemHandle h = make_handle(3 * kMiB);  // rounded up to 4 MiB
  Json j = stats();
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 1);
  EXPECT_EQ(device_used(j, 0), used0 + (4 << 20));
  EXPECT_EQ(device_used(j, 1), used1);
  size_t free_after = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total), ACL_SUCCESS);
  EXPECT_EQ(free_before - free_after, 4 * kMiB);

  void* va = reserve(8 * kMiB);
  j = stats();
  EXPECT_EQ(stat_int(j, "live.reservations"), 1);
  EXPECT_EQ(stat_int(j, "live.mappings"), 0);
  EXPECT_EQ(device_used(j, 0), used0 + (4 << 20)) << "a reservation has no backing";

  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.mappings"), 1);
  ASSERT_EQ(aclrtMapMem(at(va, 4 * kMiB), 4 * kMiB, 0, h, 0), ACL_SUCCESS);  // same memory twice
  j = stats();
  EXPECT_EQ(stat_int(j, "live.mappings"), 2);
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 1);
  EXPECT_EQ(device_used(j, 0), used0 + (4 << 20)) << "a second mapping costs no memory";

  aclrtDrvMemHandle h1 = make_handle(k2M, 1);
  j = stats();
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 2);
  EXPECT_EQ(device_used(j, 1), used1 + (2 << 20));
  EXPECT_EQ(device_used(j, 0), used0 + (4 << 20));

  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnmapMem(at(va, 4 * kMiB)), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.mappings"), 0);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h1), ACL_SUCCESS);
  j = stats();
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 0);
  EXPECT_EQ(device_used(j, 0), used0);
  EXPECT_EQ(device_used(j, 1), used1);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.reservations"), 0);
}

TEST_F(StatsJsonTest, FreeWhileMappedKeepsMemoryUntilLastUnmap) {
  const long long used0 = device_used(stats(), 0);
  aclrtDrvMemHandle h = make_handle(k2M);
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);  // behavior.md §1: succeeds, memory stays
  EXPECT_EQ(device_used(stats(), 0), used0 + (2 << 20));
  EXPECT_EQ(stat_int(stats(), "live.mappings"), 1);
  ASSERT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);  // releases it
  Json j = stats();
  EXPECT_EQ(device_used(j, 0), used0);
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 0);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

TEST_F(StatsJsonTest, OneGigabytePagesAreChargedWhole) {
  const long long used0 = device_used(stats(), 0);
  aclrtPhysicalMemProp p = device_prop(0, ACL_HBM_MEM_HUGE1G);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, 3 * kMiB, &p, 0), ACL_SUCCESS);
  EXPECT_EQ(device_used(stats(), 0), used0 + (1ll << 30));
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(device_used(stats(), 0), used0);
}

TEST_F(StatsJsonTest, PlainDeviceAllocationsAreCharged) {
  const long long used0 = device_used(stats(), 0);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, kMiB, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const long long used = device_used(stats(), 0);
  EXPECT_GE(used - used0, static_cast<long long>(kMiB));
  EXPECT_LE(used - used0, static_cast<long long>(k2M));
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(device_used(stats(), 0), used0);
}

// ACLVMM_STATS_FILE: the statistics JSON is written at process exit, here without aclFinalize.
TEST(StatsFileTest, WrittenAtExitWithTheLiveCounts) {
  const std::string path = temp_path("stats");
  ChildResult r = run_in_child([&path]() -> int {
    reset_runtime_in_child();
    setenv("ACLVMM_STATS_FILE", path.c_str(), 1);
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 10;
    aclrtPhysicalMemProp p = device_prop();
    aclrtDrvMemHandle h = nullptr, h2 = nullptr;
    void* va = nullptr;
    if (aclrtMallocPhysical(&h, 4 * kMiB, &p, 0) || aclrtMallocPhysical(&h2, k2M, &p, 0)) return 11;
    if (aclrtReserveMemAddress(&va, 8 * kMiB, 0, nullptr, 0)) return 12;
    if (aclrtMapMem(va, 4 * kMiB, 0, h, 0)) return 13;
    exit(0);  // no aclFinalize
  });
  EXPECT_EQ(r.signal, 0);
  ASSERT_EQ(r.exit_code, 0);
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no statistics file at " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path.c_str());
  Json j;
  ASSERT_TRUE(parse_json(ss.str(), &j)) << ss.str();
  EXPECT_EQ(stat_int(j, "live.physical_handles"), 2) << ss.str();
  EXPECT_EQ(stat_int(j, "live.reservations"), 1) << ss.str();
  EXPECT_EQ(stat_int(j, "live.mappings"), 1) << ss.str();
  EXPECT_EQ(device_used(j, 0), 6ll << 20) << ss.str();
  ASSERT_NE(j.get("soc"), nullptr);
  EXPECT_EQ(j.get("soc")->s, "Ascend910B1");
}

struct Captured {
  ChildResult result;
  std::string out;
  pid_t pid = 0;
};

// Like run_in_child, with the child's stdout captured through a pipe.
Captured run_capturing_stdout(const std::function<int()>& fn) {
  Captured c;
  int fds[2];
  if (pipe(fds) != 0) return c;
  fflush(nullptr);
  settle_threads_before_fork();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    int code = fn();
    fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) c.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  c.pid = pid;
  c.result = wait_child(pid);
  return c;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// §9: aclFinalize releases and reports, once, at warning level, every leaked object with its
// kind, size and creating API; the lines have the CANN plog format (conventions.md §2.1).
TEST(LeakReportTest, FinalizeReportsEachLeakOnceInCannFormat) {
  Captured c = run_capturing_stdout([]() -> int {
    reset_runtime_in_child();
    setenv("ASCEND_LOG_PRINT_TO_STDOUT", "1", 1);
    setenv("ASCEND_GLOBAL_LOG_LEVEL", "2", 1);
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 10;
    aclrtPhysicalMemProp p = device_prop();
    aclrtDrvMemHandle h = nullptr;
    void* va = nullptr;
    if (aclrtMallocPhysical(&h, 4 * kMiB, &p, 0)) return 11;         // handle: 4194304 bytes
    if (aclrtReserveMemAddress(&va, 16 * kMiB, 0, nullptr, 0)) return 12;  // 16777216 bytes
    if (aclrtMapMem(va, k2M, 0, h, 0)) return 13;                     // mapping: 2097152 bytes
    if (aclFinalize() != ACL_SUCCESS) return 14;
    fflush(stdout);
    return 0;
  });
  EXPECT_EQ(c.result.signal, 0);
  ASSERT_EQ(c.result.exit_code, 0) << c.out;
  const std::regex format(
      R"(^\[(WARNING|ERROR|INFO|DEBUG)\] [A-Z]+\((\d+),[^)]*\):\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3} \[[^:\]]+:\d+\]\d+ \S+:)");
  const std::vector<std::string> lines = lines_of(c.out);
  ASSERT_FALSE(lines.empty()) << "nothing was printed to stdout";
  for (const std::string& line : lines) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(line, m, format)) << line;
    if (m.size() > 2) {
      EXPECT_EQ(m[2].str(), std::to_string(c.pid)) << line;
    }
  }
  struct Leak {
    const char* kind;
    const char* size;
    const char* api;
  };
  const Leak leaks[] = {{"handle", "4194304", "aclrtMallocPhysical"},
                        {"reservation", "16777216", "aclrtReserveMemAddress"},
                        {"mapping", "2097152", "aclrtMapMem"}};
  for (const Leak& l : leaks) {
    int found = 0;
    for (const std::string& line : lines) {
      if (line.rfind("[WARNING]", 0) == 0 && line.find(l.kind) != std::string::npos &&
          line.find(l.size) != std::string::npos && line.find(l.api) != std::string::npos) {
        ++found;
      }
    }
    EXPECT_EQ(found, 1) << "WARNING line naming " << l.kind << ", " << l.size << " bytes and " << l.api
                        << "\nstdout:\n" << c.out;
  }
}

}  // namespace
}  // namespace aclvmm_test
