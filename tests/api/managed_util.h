// Helpers of the managed-memory tests: locations, the "managed" statistics and their changes,
// a fixture that allocates managed memory, and checks inside forked children.
#pragma once

#include <cstdio>
#include <string>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {

constexpr long long kManagedPage = static_cast<long long>(k2M);

inline aclrtMemManagedLocation mloc(int type, int32_t id = 0) {
  aclrtMemManagedLocation l{};
  store_raw(l.type, type);
  l.id = id;
  return l;
}
inline const aclrtMemManagedLocation kDev0 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 0);
inline const aclrtMemManagedLocation kDev1 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 1);
inline const aclrtMemManagedLocation kHost = mloc(ACL_MEM_LOCATIONTYPE_HOST, 0);

inline bool stat_bool(const char* path) {
  const Json j = stats();
  const Json* v = j.path(path);
  return v && v->type == Json::kBool && v->b;
}
// CPU faults on managed memory can be tracked here (userfaultfd).
inline bool fault_tracking() { return stat_bool("managed.fault_tracking"); }
// CPU writes to read-only copies can be tracked here (userfaultfd write-protection on shmem).
inline bool cpu_write_tracking() { return stat_bool("managed.cpu_write_tracking"); }

// The "managed" counters of aclvmmStatsJson; byte counters in bytes.
struct ManagedCounters {
  long long host_faults = 0, device_faults = 0, to_device = 0, to_host = 0, evictions = 0,
            prefetch = 0, invalidations = 0;
};
inline ManagedCounters managed_counters() {
  const Json j = stats();
  ManagedCounters m;
  m.host_faults = stat_int(j, "managed.host_faults");
  m.device_faults = stat_int(j, "managed.device_faults");
  m.to_device = stat_int(j, "managed.bytes_to_device");
  m.to_host = stat_int(j, "managed.bytes_to_host");
  m.evictions = stat_int(j, "managed.evictions");
  m.prefetch = stat_int(j, "managed.prefetch_bytes");
  m.invalidations = stat_int(j, "managed.read_copy_invalidations");
  return m;
}

// The change of the counters since the last check, in pages for the byte counters. Counters a
// check does not name must not have changed.
class ManagedDelta {
 public:
  ManagedDelta() : start_(managed_counters()) {}
  struct Expect {
    long long host_faults = 0, device_faults = 0, to_device = 0, to_host = 0, evictions = 0,
              prefetch = 0, invalidations = 0;
  };
  void expect(const Expect& e, const char* what) {
    const ManagedCounters now = managed_counters();
    EXPECT_EQ(now.host_faults - start_.host_faults, e.host_faults) << what;
    EXPECT_EQ(now.device_faults - start_.device_faults, e.device_faults) << what;
    EXPECT_EQ(now.to_device - start_.to_device, e.to_device * kManagedPage) << what;
    EXPECT_EQ(now.to_host - start_.to_host, e.to_host * kManagedPage) << what;
    EXPECT_EQ(now.evictions - start_.evictions, e.evictions) << what;
    EXPECT_EQ(now.prefetch - start_.prefetch, e.prefetch * kManagedPage) << what;
    EXPECT_EQ(now.invalidations - start_.invalidations, e.invalidations) << what;
    start_ = now;
  }
  // The common case: faults and migrations only.
  void expect(long long host_faults, long long device_faults, long long to_device,
              long long to_host, const char* what) {
    Expect e;
    e.host_faults = host_faults;
    e.device_faults = device_faults;
    e.to_device = to_device;
    e.to_host = to_host;
    expect(e, what);
  }

 private:
  ManagedCounters start_;
};

class ManagedTest : public AclTest {
 protected:
  char* managed(uint64_t size) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMemAllocManaged(&p, size, ACL_RT_MEM_ATTACH_GLOBAL), kOk) << size;
    return static_cast<char*>(p);
  }
  bool tracking() { return fault_tracking(); }

  // The addresses a misuse table feeds a managed call besides a live allocation: a range of the
  // window that was freed, plain host memory, and an aclrtMalloc block. release() frees them.
  struct NotManaged {
    static constexpr size_t kPlainSize = 64;
    void* freed = nullptr;
    char* plain = nullptr;
    void* dev = nullptr;
  };
  NotManaged not_managed() {
    NotManaged n;
    EXPECT_EQ(aclrtMemAllocManaged(&n.freed, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
    EXPECT_EQ(aclrtFree(n.freed), kOk);
    n.plain = plain_;
    EXPECT_EQ(aclrtMalloc(&n.dev, k2M, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    return n;
  }
  static void release(const NotManaged& n) { EXPECT_EQ(aclrtFree(n.dev), kOk); }

 private:
  char plain_[NotManaged::kPlainSize] = {};

 protected:
  aclError advise(const void* p, uint64_t size, aclrtMemManagedAdviseType a,
                  aclrtMemManagedLocation l) {
    return aclrtMemManagedAdvise(p, size, a, l);
  }
};

// Tests that need fault tracking skip on machines without it; ManagedMigrationTest asserts
// that this machine has it.
#define REQUIRE_MANAGED_TRACKING()                                         \
  do {                                                                     \
    if (!fault_tracking()) GTEST_SKIP() << "no CPU fault tracking here";   \
  } while (0)

// In a forked child (run_in_child): a failed check prints itself and becomes the exit code.
#define CHILD_CHECK(cond, code)                                                          \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "child check %d failed: %s (line %d)\n", code, #cond, __LINE__); \
      return code;                                                                       \
    }                                                                                    \
  } while (0)

}  // namespace aclvmm_test
