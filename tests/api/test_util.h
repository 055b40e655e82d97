// Shared helpers of the API and integration tests. Each helper is defined once here so that files
// written in parallel agree on codes, copies, fixtures and child-process handling.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "acl/acl.h"
#include "aclvmm/aclvmm.h"
#include "unit/testing/fork_settle.h"
#include "unit/testing/fault_signals.h"

namespace aclvmm_test {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kGiB = size_t(1) << 30;
constexpr size_t k2M = 2 * kMiB;

// The codes the tests expect (behavior.md §0), named once for every file.
constexpr aclError kOk = ACL_SUCCESS;
constexpr aclError kParam = 100000;             // ACL_ERROR_INVALID_PARAM (ACL layer)
constexpr aclError kRtParam = 107000;           // ACL_ERROR_RT_PARAM_INVALID
constexpr aclError kBadDevice = 107001;         // ACL_ERROR_RT_INVALID_DEVICEID
constexpr aclError kNoContext = 107002;         // ACL_ERROR_RT_CONTEXT_NULL
constexpr aclError kBadHandle = 107017;         // ACL_ERROR_RT_INVALID_HANDLE
constexpr aclError kNotSupported = 207000;      // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
constexpr aclError kNoMemory = 207001;          // ACL_ERROR_RT_MEMORY_ALLOCATION
constexpr aclError kLinkNotSupported = 207021;  // ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED
constexpr aclError kDrv = 507899;               // ACL_ERROR_RT_DRV_INTERNAL_ERROR

inline void* at(void* base, size_t off) { return static_cast<char*>(base) + off; }
inline uint64_t u64(const void* p) { return reinterpret_cast<uintptr_t>(p); }
inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// C callers may put any int into an enum field of an ABI struct. In C++ an int outside the enum's
// range must not be cast to the enum (UB that UBSan reports when the value is loaded), so such
// values are copied in as bytes, and fields that may hold them are read back as bytes.
template <typename E>
void store_raw(E& field, int value) {
  static_assert(std::is_enum<E>::value && sizeof(E) == sizeof(int), "an int-sized enum field");
  std::memcpy(&field, &value, sizeof value);
}
template <typename E>
uint32_t load_raw(const E& field) {
  static_assert(std::is_enum<E>::value && sizeof(E) == sizeof(uint32_t), "an int-sized enum field");
  uint32_t v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

inline aclrtPhysicalMemProp device_prop(uint32_t device = 0, aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  aclrtPhysicalMemProp p{};
  p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  p.memAttr = attr;
  p.location.id = device;
  p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  p.reserve = 0;
  return p;
}
inline aclrtPhysicalMemProp host_prop(aclrtMemAttr attr = ACL_MEM_HUGE) {
  aclrtPhysicalMemProp p = device_prop(0, attr);
  p.location.type = ACL_MEM_LOCATION_TYPE_HOST;
  return p;
}
// `p` with memAttr / location set to any int (see store_raw).
inline aclrtPhysicalMemProp with_attr(aclrtPhysicalMemProp p, int attr) {
  store_raw(p.memAttr, attr);
  return p;
}
inline aclrtPhysicalMemProp with_location(aclrtPhysicalMemProp p, int type, uint32_t id = 0) {
  store_raw(p.location.type, type);
  p.location.id = id;
  return p;
}

// Memory locations and access descriptors of aclrtMemSetAccess / aclrtMemGetAccess; types and
// flags are ints because the misuse tables pass values outside the enums.
constexpr int kNone = ACL_RT_MEM_ACCESS_FLAGS_NONE;
constexpr int kRead = ACL_RT_MEM_ACCESS_FLAGS_READ;
constexpr int kRW = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
inline aclrtMemLocation loc(int type, uint32_t id) {
  aclrtMemLocation l{};
  l.id = id;
  store_raw(l.type, type);
  return l;
}
inline aclrtMemLocation dev(uint32_t id) { return loc(ACL_MEM_LOCATION_TYPE_DEVICE, id); }
inline aclrtMemLocation host() { return loc(ACL_MEM_LOCATION_TYPE_HOST, 0); }
inline aclrtMemAccessDesc desc(int flags, aclrtMemLocation l) {
  aclrtMemAccessDesc d{};
  store_raw(d.flags, flags);
  d.location = l;
  return d;
}
// aclrtMemSetAccess with one descriptor.
inline aclError set1(void* va, size_t size, int flags, aclrtMemLocation l) {
  aclrtMemAccessDesc d = desc(flags, l);
  return aclrtMemSetAccess(va, size, &d, 1);
}
// The flags aclrtMemGetAccess reports (or -1 with a test failure when the call fails).
inline int access_of(void* va, aclrtMemLocation l) {
  uint64_t flags = 0xdeadbeef;
  const aclError rc = aclrtMemGetAccess(va, &l, &flags);
  EXPECT_EQ(rc, kOk) << "aclrtMemGetAccess failed";
  return rc == kOk ? static_cast<int>(flags) : -1;
}

// A physical handle of `size` bytes (fails the test otherwise), and a reservation of `size`.
inline aclrtDrvMemHandle make_handle(size_t size = k2M, uint32_t device = 0,
                                     aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  aclrtPhysicalMemProp p = device_prop(device, attr);
  aclrtDrvMemHandle h = nullptr;
  EXPECT_EQ(aclrtMallocPhysical(&h, size, &p, 0), kOk);
  return h;
}
inline void* reserve(size_t size) {
  void* va = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&va, size, 0, nullptr, 0), kOk);
  return va;
}

// Free and total bytes as aclrtGetMemInfo reports them for `attr` (free = ~0 on error).
struct MemInfo {
  size_t free = ~size_t(0);
  size_t total = 0;
};
inline MemInfo mem_info(aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  MemInfo m;
  EXPECT_EQ(aclrtGetMemInfo(attr, &m.free, &m.total), kOk);
  return m;
}
inline size_t hbm_free() { return mem_info(ACL_HBM_MEM).free; }

// aclGetRecentErrMsg as a string ("" when there is none); reading it clears it.
inline std::string recent_msg() {
  const char* m = aclGetRecentErrMsg();
  return m ? std::string(m) : std::string();
}

// Host -> device copy of `bytes`, returning aclrtMemcpy's code; h2d fails the test on error.
inline aclError put(void* dst, const std::string& bytes, aclrtMemcpyKind kind = ACL_MEMCPY_HOST_TO_DEVICE) {
  return aclrtMemcpy(dst, bytes.size(), bytes.data(), bytes.size(), kind);
}
inline void h2d(void* dst, const std::string& bytes, aclrtMemcpyKind kind = ACL_MEMCPY_HOST_TO_DEVICE) {
  EXPECT_EQ(put(dst, bytes, kind), kOk);
}
// Device -> host copy of `n` bytes. A failure fails the test, unless `rc` takes the code.
inline std::string get(const void* src, size_t n, aclError* rc = nullptr,
                       aclrtMemcpyKind kind = ACL_MEMCPY_DEVICE_TO_HOST) {
  std::string out(n, '\0');
  const aclError r = aclrtMemcpy(&out[0], n, src, n, kind);
  if (rc) {
    *rc = r;
  } else {
    EXPECT_EQ(r, kOk);
  }
  return out;
}

inline std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  return s;
}
inline bool all_bytes(const std::string& s, char v) {
  for (char c : s) {
    if (c != v) return false;
  }
  return true;
}

// aclInit + aclrtSetDevice(0) before each test, and aclFinalize after it, so every test starts
// from a fresh runtime (aclFinalize releases whatever a test leaked).
class AclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclInit(nullptr), kOk);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
    (void)aclGetRecentErrMsg();
  }
  void TearDown() override {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
  }
};

// AclTest plus one 2 MiB device-0 handle mapped at the 2 MiB reservation va_.
class MappedTest : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    va_ = reserve(k2M);
    h_ = make_handle();
    ASSERT_EQ(aclrtMapMem(va_, k2M, 0, h_, 0), kOk);
  }
  void TearDown() override {
    aclrtUnmapMem(va_);
    aclrtFreePhysical(h_);
    aclrtReleaseMemAddress(va_);
    AclTest::TearDown();
  }
  void* va_ = nullptr;
  aclrtDrvMemHandle h_ = nullptr;
};

// AclTest whose aclrtMalloc / aclrtMallocHost blocks are freed (and checked) at TearDown.
class AllocTest : public AclTest {
 protected:
  void TearDown() override {
    for (void* p : mallocs_) EXPECT_EQ(aclrtFree(p), kOk);
    for (void* p : hosts_) EXPECT_EQ(aclrtFreeHost(p), kOk);
    AclTest::TearDown();
  }
  char* dev(size_t size) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    if (p) mallocs_.push_back(p);
    return static_cast<char*>(p);
  }
  char* pinned(size_t size) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMallocHost(&p, size), kOk);
    if (p) hosts_.push_back(p);
    return static_cast<char*>(p);
  }

 private:
  std::vector<void*> mallocs_, hosts_;
};

// Forked children. The child must not return into gtest: run_in_child _exits with fn's result.
struct ChildResult {
  int signal = 0;  // the terminating signal, 0 if the child exited
  int exit_code = -1;
};
inline ChildResult wait_child(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  ChildResult r;
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}
// A child's body: an exception escaping it is reported as exit code 125, never run back into
// gtest (which would go on running the other tests inside the child).
constexpr int kChildThrew = 125;
inline int child_body(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (...) {
    return kChildThrew;
  }
}
inline ChildResult run_in_child(const std::function<int()>& fn) {
  fflush(nullptr);
  settle_threads_before_fork();
  pid_t pid = fork();
  if (pid == 0) _exit(child_body(fn));
  return wait_child(pid);
}

// In a child about to touch memory that may fault (unit/testing/fault_signals.h).
using aclvmm::testing::reset_fault_signals_for_child;
// Runs a CPU access in a child: .signal is SIGSEGV when it faulted, else .exit_code is touch's.
inline ChildResult run_cpu_access(const std::function<int()>& touch) {
  return run_in_child([&] {
    reset_fault_signals_for_child();
    return touch();
  });
}

// The child exited with code 0 (an optional second argument explains other codes) / faulted.
#define EXPECT_CHILD_OK(...) ACLVMM_EXPECT_CHILD_OK_(__VA_ARGS__, "", "")
#define ACLVMM_EXPECT_CHILD_OK_(result, why, ...)            \
  do {                                                      \
    const ::aclvmm_test::ChildResult child_ = (result);     \
    EXPECT_EQ(child_.signal, 0);                            \
    EXPECT_EQ(child_.exit_code, 0) << (why);                \
  } while (0)
#define EXPECT_CHILD_FAULT(result) EXPECT_EQ((result).signal, SIGSEGV)

}  // namespace aclvmm_test
