// Shared parts of the robustness tables (robustness_test.cpp, robustness_runtime_test.cpp):
// a world of live, stale and forged objects, the row type and the row runner.
//
// Requirement: no call crashes on null, forged or stale arguments; each returns the code of
// behavior.md and leaves no partial state (aclvmmStatsJson live counts and device memory use are
// unchanged after every row).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {

// The codes (kParam, kRtParam, ...) are those of test_util.h.
constexpr size_t kMax = SIZE_MAX;

struct Row {
  std::string api;   // the exported function under test
  std::string name;  // what is wrong with the input
  std::function<aclError()> call;
  aclError expected;
};

struct Forged {
  const char* label;
  void* value;
};

// Objects every row may use. Live objects first, stale ones after them, so that a stale address
// is not handed out again to a live object of the world.
struct World {
  aclrtContext primary = nullptr;
  aclrtDrvMemHandle h = nullptr;        // 2 MiB on device 0, mapped at [va, va+2M)
  aclrtDrvMemHandle h_spare = nullptr;  // 2 MiB on device 0, not mapped
  aclrtDrvMemHandle h_dev1 = nullptr;   // 2 MiB on device 1, not mapped
  void* va = nullptr;                   // 4 MiB reservation, first 2 MiB mapped
  void* va2 = nullptr;                  // 4 MiB reservation, nothing mapped
  void* dptr = nullptr;                 // aclrtMalloc 4096
  void* hptr = nullptr;                 // aclrtMallocHost 4096
  aclrtStream stream = nullptr;
  aclrtDrvMemHandle freed_h = nullptr;  // stale values
  aclrtStream dead_stream = nullptr;
  aclrtContext dead_ctx = nullptr;
  void* released_va = nullptr;
  void* freed_dptr = nullptr;
  void* freed_hptr = nullptr;
  void* unmapped_host = nullptr;  // a host address verified to be unmapped
  void* prot_none = nullptr;      // a mapped host page with no access
  std::vector<Forged> forged;     // forged handle / pointer values, incl. a stack object
};

// A host address with nothing mapped (msync answers ENOMEM for unmapped pages).
inline void* find_unmapped_host() {
  const uint64_t candidates[] = {0x7f0000000000ull, 0x7e0000000000ull, 0x600000000000ull,
                                 0x500000000000ull, 0x3f0000000000ull};
  for (uint64_t a : candidates) {
    void* p = reinterpret_cast<void*>(a);
    if (msync(p, 4096, MS_ASYNC) != 0 && errno == ENOMEM) return p;
  }
  return nullptr;
}

class RobustnessBase : public AclTest {
 public:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(aclrtGetCurrentContext(&w.primary), ACL_SUCCESS);
    w.h = make_handle(k2M);
    w.h_spare = make_handle(k2M);
    w.h_dev1 = make_handle(k2M, 1);
    w.va = reserve(4 * kMiB);
    w.va2 = reserve(4 * kMiB);
    ASSERT_EQ(aclrtMapMem(w.va, k2M, 0, w.h, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&w.dptr, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&w.hptr, 4096), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&w.stream), ACL_SUCCESS);
    // Stale values.
    w.freed_h = make_handle(k2M);
    ASSERT_EQ(aclrtFreePhysical(w.freed_h), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&w.dead_stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(w.dead_stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateContext(&w.dead_ctx, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyContext(w.dead_ctx), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetCurrentContext(w.primary), ACL_SUCCESS);
    w.released_va = reserve(4 * kMiB);
    ASSERT_EQ(aclrtReleaseMemAddress(w.released_va), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&w.freed_dptr, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(w.freed_dptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&w.freed_hptr, 4096), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreeHost(w.freed_hptr), ACL_SUCCESS);
    w.unmapped_host = find_unmapped_host();
    ASSERT_NE(w.unmapped_host, nullptr);
    w.prot_none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(w.prot_none, MAP_FAILED);
    w.forged = {{"0x1234", reinterpret_cast<void*>(0x1234)},
                {"0xdeadbeef00", reinterpret_cast<void*>(0xdeadbeef00ull)},
                {"~0", reinterpret_cast<void*>(~0ull)},
                {"stack object", &on_stack_}};
    (void)aclGetRecentErrMsg();
  }
  void TearDown() override {
    if (w.va) (void)aclrtUnmapMem(w.va);
    for (aclrtDrvMemHandle h : {w.h, w.h_spare, w.h_dev1}) {
      if (h) (void)aclrtFreePhysical(h);
    }
    for (void* v : {w.va, w.va2}) {
      if (v) (void)aclrtReleaseMemAddress(v);
    }
    if (w.dptr) (void)aclrtFree(w.dptr);
    if (w.hptr) (void)aclrtFreeHost(w.hptr);
    if (w.stream) (void)aclrtDestroyStream(w.stream);
    if (w.prot_none && w.prot_none != MAP_FAILED) munmap(w.prot_none, 4096);
    AclTest::TearDown();
  }

  // Runs fn with no current context on this thread, then restores the primary context.
  aclError without_context(const std::function<aclError()>& fn) {
    aclrtContext c = nullptr;
    EXPECT_EQ(aclrtCreateContext(&c, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);  // it was current: now there is none
    aclError e = fn();
    EXPECT_EQ(aclrtSetCurrentContext(w.primary), ACL_SUCCESS);
    return e;
  }

  // One row per forged value of a handle/pointer argument.
  void add_forged(std::vector<Row>& rows, const std::string& api, const std::string& what,
                  aclError expected, const std::function<aclError(void*)>& call) {
    for (const Forged& f : w.forged) {
      void* v = f.value;
      rows.push_back({api, what + " forged " + f.label, [call, v] { return call(v); }, expected});
    }
  }

  // One row per host address the CPU cannot touch (memcpy / memset must answer 507899 instead
  // of crashing): forged values without the stack object, an unmapped page, a PROT_NONE page.
  void add_bad_host(std::vector<Row>& rows, const std::string& api, const std::string& what,
                    aclError expected, const std::function<aclError(void*)>& call) {
    const Forged bad[] = {{"0x10", reinterpret_cast<void*>(0x10)},
                          {"0x1234", reinterpret_cast<void*>(0x1234)},
                          {"0xdeadbeef00", reinterpret_cast<void*>(0xdeadbeef00ull)},
                          {"~0-7", reinterpret_cast<void*>(~0ull - 7)},
                          {"unmapped page", w.unmapped_host},
                          {"PROT_NONE page", w.prot_none}};
    for (const Forged& f : bad) {
      void* v = f.value;
      rows.push_back({api, what + " " + f.label, [call, v] { return call(v); }, expected});
    }
  }

  static void run_rows(const std::vector<Row>& rows) {
    // The figure docs/reliability.md quotes (conformance rows run).
    std::printf("[ rows     ] %zu conformance rows\n", rows.size());
    for (const Row& r : rows) {
      SCOPED_TRACE(r.api + ": " + r.name);
      const LiveCounts before = live_counts();
      ASSERT_EQ(before.count("live.physical_handles"), 1u) << "statistics unreadable";
      (void)aclGetRecentErrMsg();
      const aclError got = r.call();
      EXPECT_EQ(got, r.expected);
      if (got != ACL_SUCCESS && got > 0) {
        EXPECT_NE(aclGetRecentErrMsg(), nullptr) << "a failure must leave a message";
      }
      const LiveCounts after = live_counts();
      EXPECT_EQ(before, after) << "before: " << describe(before) << "\nafter:  " << describe(after);
    }
  }

  World w;
  int on_stack_ = 0;  // replaced by a real stack object in each test body (see stack_forged)

  // Points the "stack object" forged value at an object in the caller's frame.
  void stack_forged(void* p) {
    for (Forged& f : w.forged) {
      if (std::strcmp(f.label, "stack object") == 0) f.value = p;
    }
  }
};

// Row builders (one per file) and the names they cover.
std::vector<Row> vmm_rows(RobustnessBase& t);
std::vector<Row> runtime_rows(RobustnessBase& t);

}  // namespace aclvmm_test
