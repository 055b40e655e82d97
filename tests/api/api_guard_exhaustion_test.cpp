// Real exhaustion instead of injected exceptions (src/api/api_guard.h): inputs that make the
// library allocate by an untrusted count, a process whose memory is used up so that not even the
// error message can be stored, and a user that may create no more threads. Each case runs in a
// child (the test process never starts the runtime) and must come back with a code and a message,
// never abort.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

#include "api/api_guard_util.h"
#include "api/thread_test_util.h"

namespace aclvmm_test {
namespace {

constexpr int kDeadlineMs = 60000;

// aclInit + device 0 + a 2 MiB mapping at *va; false on any failure.
bool mapped_2m(void** va) {
  if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return false;
  aclrtDrvMemHandle h = nullptr;
  aclrtPhysicalMemProp p = device_prop();
  if (aclrtMallocPhysical(&h, k2M, &p, 0) != kOk) return false;
  if (aclrtReserveMemAddress(va, k2M, 0, nullptr, 0) != kOk) return false;
  return aclrtMapMem(*va, k2M, 0, h, 0) == kOk;
}

// aclrtMemSetAccess validates descriptors one by one: a huge `count` with a bad second descriptor
// answers exactly as count 2 does (107000 naming desc[1]). It used to reserve `count` entries
// first: std::length_error or std::bad_alloc through the C API, an abort.
TEST(ApiGuardExhaustionTest, SetAccessWithAHugeCountAnswersLikeAShortOne) {
  const size_t kCounts[] = {2, 3, size_t(1) << 24, size_t(1) << 40, SIZE_MAX / 16, SIZE_MAX / 2,
                            SIZE_MAX};
  struct BadSecond {
    const char* what;
    aclrtMemAccessDesc second;
  };
  const BadSecond kBad[] = {
      {"flags 7", desc(7, dev(0))},
      {"location type 99", desc(kRW, loc(99, 0))},
      {"device 64", desc(kRW, dev(64))},
  };
  int rows = 0;
  for (const BadSecond& bad : kBad) {
    for (size_t count : kCounts) {
      const CallOutcome o = call_in_child(kDeadlineMs, [&] {
        void* va = nullptr;
        if (!mapped_2m(&va)) return -1LL;
        aclrtMemAccessDesc d[2] = {desc(kRW, dev(0)), bad.second};
        return static_cast<long long>(aclrtMemSetAccess(va, k2M, d, count));
      });
      EXPECT_RETURNS_CODE(o, kRtParam);
      EXPECT_NE(o.message.find("aclrtMemSetAccess: desc[1]"), std::string::npos)
          << bad.what << ", count " << count << ": " << describe(o);
      ++rows;
    }
  }
  printf("aclrtMemSetAccess: %d (descriptor, count) rows\n", rows);
}

// The process's address space is used up (RLIMIT_AS at what it has, then every byte malloc can
// still give is taken): a failing call must still return a code, and aclGetRecentErrMsg must
// still say something: the fixed "out of memory while recording the error" when nothing else fits.
TEST(ApiGuardExhaustionTest, FailingCallWithoutMemoryStillReturnsACodeAndAMessage) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve address space of their own (RLIMIT_AS)";
  const CallOutcome o = call_in_child(kDeadlineMs, [] {
    if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return -1LL;
    void* bogus = reinterpret_cast<void*>(0x1000);
    if (aclrtFree(bogus) == kOk) return -2LL;  // fails normally, with memory
    (void)aclGetRecentErrMsg();
    // No more address space: every mmap and brk beyond the present fails.
    rlimit rl{};
    getrlimit(RLIMIT_AS, &rl);
    FILE* f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) return -3LL;
    fclose(f);
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    if (!limit_resource(RLIMIT_AS, now)) return -4LL;
    // Take whatever the heap still has, down to 16-byte pieces, chained through themselves.
    void* hoard = nullptr;
    for (size_t piece = size_t(1) << 20; piece >= 16; piece /= 2) {
      while (void* p = malloc(piece)) {
        *static_cast<void**>(p) = hoard;
        hoard = p;
      }
    }
    const long long code = aclrtFree(bogus);
    static char text[512];
    const char* m = aclGetRecentErrMsg();
    snprintf(text, sizeof text, "%s", m ? m : "");
    while (hoard) {
      void* next = *static_cast<void**>(hoard);
      free(hoard);
      hoard = next;
    }
    // Back in the normal world: report through the usual channel.
    if (text[0] == '\0') return -5LL;
    fprintf(stderr, "without memory: %lld, \"%s\"\n", code, text);
    return code == kRtParam || code == kNoMemory ? 0LL : code;
  });
  EXPECT_RETURNS_CODE(o, 0);
}

// A user that may create no more threads (RLIMIT_NPROC; root ignores it, so the child becomes
// nobody): creating a stream, queueing work on it (its worker thread), exporting memory (the share
// listener) and allocating managed memory (the fault thread) each come back with a code. Which
// code, and the rollback, belong to those calls' own owners; here only the return is asserted.
TEST(ApiGuardExhaustionTest, NoThreadsLeftForAnotherUserReturnsCodes) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  const CallOutcome o = call_in_child(kDeadlineMs, [] {
    if (!become_other_user()) return -1LL;
    if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return -2LL;
    aclrtDrvMemHandle h = nullptr;
    aclrtPhysicalMemProp p = device_prop();
    if (aclrtMallocPhysical(&h, k2M, &p, 0) != kOk) return -3LL;
    void* dev = nullptr;
    if (aclrtMalloc(&dev, k2M, ACL_MEM_MALLOC_HUGE_FIRST) != kOk) return -4LL;
    if (!limit_resource(RLIMIT_NPROC, 1)) return -5LL;
    int returned = 0;
    aclrtStream s = nullptr;
    const aclError created = aclrtCreateStream(&s);
    fprintf(stderr, "aclrtCreateStream: %d\n", created);
    ++returned;
    if (created == kOk) {
      fprintf(stderr, "aclrtMemsetAsync: %d\n", aclrtMemsetAsync(dev, k2M, 1, k2M, s));
      ++returned;
    }
    uint64_t share = 0;
    fprintf(stderr, "aclrtMemExportToShareableHandle: %d\n",
            aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &share));
    ++returned;
    void* managed = nullptr;
    fprintf(stderr, "aclrtMemAllocManaged: %d\n",
            aclrtMemAllocManaged(&managed, k2M, ACL_RT_MEM_ATTACH_GLOBAL));
    ++returned;
    // _exit by call_in_child: the teardown of a stream without its worker is not this test's.
    return static_cast<long long>(created == kOk ? returned - 4 : returned - 3);
  });
  EXPECT_RETURNS_CODE(o, 0);
}

}  // namespace
}  // namespace aclvmm_test
