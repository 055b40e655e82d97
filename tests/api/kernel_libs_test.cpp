// ACLVMM_KERNEL_LIBS (runtime-extra.md §9.8): shared libraries loaded when the runtime starts,
// whose constructors register kernels, so that an unmodified program finds them; a malformed list
// or a library that cannot be loaded fails the starting call with 100000 naming the variable (and
// the path); a constructor that calls back into the runtime while it starts is refused instead of
// deadlocking. A library stays loaded for the process's life, so every case runs in a child.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/kernel_lib/kernel_test_util.h"

#if !defined(ACLVMM_TEST_KERNEL_LIB) || !defined(ACLVMM_TEST_KERNEL_LIB_CALLER)
#error "tests/CMakeLists.txt passes the kernel libraries' paths"
#endif

namespace aclvmm_test {
namespace {

constexpr const char* kKtLib = ACLVMM_TEST_KERNEL_LIB;
constexpr const char* kKtCallerLib = ACLVMM_TEST_KERNEL_LIB_CALLER;
constexpr int kKtLibDeadlineMs = 20000;  // a start that deadlocks is killed then

// True when `path` is loaded in this process (dlopen RTLD_NOLOAD loads nothing).
bool kt_lib_loaded(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

// The address of `symbol` in the loaded library `path` (nullptr when either is missing).
template <typename T>
T* kt_lib_symbol(const char* path, const char* symbol) {
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* s = dlsym(h, symbol);
  dlclose(h);  // still loaded: the runtime's reference keeps it
  return static_cast<T*>(s);
}

// In a child with the current device set: loads a binary, finds `name`, launches it over three
// device buffers (z = x + y, `blocks` * 256 uint32 elements: test_lib_add) and checks the sums.
// 0 when all of it worked, else the step that failed.
int kt_run_lib_add(const char* name, uint32_t blocks) {
  const size_t n = size_t(blocks) * 256;
  const std::string path = temp_file("an unmodified program's kernel binary");
  aclrtBinHandle bin = nullptr;
  const aclError load = aclrtBinaryLoadFromFile(path.c_str(), nullptr, &bin);
  unlink(path.c_str());
  if (load != kOk) return 101;
  aclrtFuncHandle f = nullptr;
  if (aclrtBinaryGetFunction(bin, name, &f) != kOk) return 102;
  void *x = nullptr, *y = nullptr, *z = nullptr;
  if (aclrtMalloc(&x, n * 4, ACL_MEM_MALLOC_HUGE_FIRST) != kOk ||
      aclrtMalloc(&y, n * 4, ACL_MEM_MALLOC_HUGE_FIRST) != kOk ||
      aclrtMalloc(&z, n * 4, ACL_MEM_MALLOC_HUGE_FIRST) != kOk) {
    return 103;
  }
  const std::string xs = kt_u32s(n, 3, 2), ys = kt_u32s(n, 40, 5);
  if (put(x, xs) != kOk || put(y, ys) != kOk || aclrtMemset(z, n * 4, 0, n * 4) != kOk) return 104;
  aclrtArgsHandle a = nullptr;
  if (aclrtKernelArgsInit(f, &a) != kOk) return 105;
  for (void* p : {x, y, z}) {
    aclrtParamHandle ph = nullptr;
    if (aclrtKernelArgsAppend(a, &p, sizeof p, &ph) != kOk) return 106;
  }
  if (aclrtKernelArgsFinalize(a) != kOk) return 107;
  if (aclrtLaunchKernelWithConfig(f, blocks, nullptr, nullptr, a, nullptr) != kOk) return 108;
  if (aclrtSynchronizeStream(nullptr) != kOk) return 109;
  std::string out(n * 4, '\0');
  if (aclrtMemcpy(&out[0], out.size(), z, out.size(), ACL_MEMCPY_DEVICE_TO_HOST) != kOk) return 110;
  if (out != kt_u32s(n, 43, 7)) return 111;
  if (aclrtFree(x) != kOk || aclrtFree(y) != kOk || aclrtFree(z) != kOk) return 112;
  return aclrtBinaryUnLoad(bin) == kOk ? 0 : 113;
}

// With the variable set, an unmodified flow (aclInit, load any file, GetFunction "test_lib_add",
// launch) runs the library's kernel; the library is loaded at the start, not before, and only
// once across restarts.
TEST(KernelLibsTest, AnUnmodifiedFlowRunsTheLibrarysKernel) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kKtLibDeadlineMs, [] {
    kt_drop_inherited_runtime();
    setenv("ACLVMM_KERNEL_LIBS", kKtLib, 1);
    KT_CHILD_CHECK(!kt_lib_loaded(kKtLib), 1);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("test_lib_add") == kKtKernelNotFound, 2);
    KT_CHILD_CHECK(aclInit(nullptr) == kOk, 3);
    KT_CHILD_CHECK(kt_lib_loaded(kKtLib), 4);
    int* constructed = kt_lib_symbol<int>(kKtLib, "aclvmm_test_kernel_lib_constructed");
    int* registered = kt_lib_symbol<int>(kKtLib, "aclvmm_test_kernel_lib_register_rc");
    KT_CHILD_CHECK(constructed && *constructed == 1, 5);
    KT_CHILD_CHECK(registered && *registered == kOk, 6);
    KT_CHILD_CHECK(aclrtSetDevice(0) == kOk, 7);
    const int run = kt_run_lib_add("test_lib_add", 8);
    KT_CHILD_CHECK(run == 0, run);
    // A restart with the variable still set: not loaded (nor constructed) again, still works.
    aclrtResetDeviceForce(0);
    KT_CHILD_CHECK(aclFinalize() == kOk, 8);
    KT_CHILD_CHECK(aclInit(nullptr) == kOk, 9);
    KT_CHILD_CHECK(*constructed == 1, 10);
    KT_CHILD_CHECK(aclrtSetDevice(0) == kOk, 11);
    const int again = kt_run_lib_add("test_lib_add", 2);
    KT_CHILD_CHECK(again == 0, again);
    // The kernel is an ordinary registration: it can be unregistered like any other.
    KT_CHILD_CHECK(aclvmmRegisterKernel("test_lib_add", kt_record_kernel, nullptr) == kKtAlreadyRegistered, 12);
    aclrtResetDeviceForce(0);
    KT_CHILD_CHECK(aclFinalize() == kOk, 13);
    return 0;
  }));
}

// The start that loads the libraries need not be aclInit: the first call of a program that never
// calls aclInit starts the runtime too. Two libraries, both loaded.
TEST(KernelLibsTest, AnImplicitStartLoadsEveryLibraryOfTheList) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kKtLibDeadlineMs, [] {
    kt_drop_inherited_runtime();
    unsetenv("ACLVMM_TEST_LIB_CALL");
    const std::string both = std::string(kKtLib) + ":" + kKtCallerLib;
    setenv("ACLVMM_KERNEL_LIBS", both.c_str(), 1);
    KT_CHILD_CHECK(aclrtSetDevice(0) == kOk, 1);
    KT_CHILD_CHECK(kt_lib_loaded(kKtLib) && kt_lib_loaded(kKtCallerLib), 2);
    const int run = kt_run_lib_add("test_lib_add", 1);
    KT_CHILD_CHECK(run == 0, run);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("test_lib_caller") == kOk, 3);  // the second one's kernel
    return 0;
  }));
}

// §9.8 "LD_PRELOAD of such a library works too": the test binary runs itself again with the
// library preloaded (and ACLVMM_KERNEL_LIBS unset); there the constructor registered the kernel
// before main, and the unmodified flow runs it. (Not under a sanitizer, whose runtime must come
// first in the preload list.)
TEST(KernelLibsTest, APreloadedLibraryRegistersItsKernelsBeforeMain) {
  if (getenv("ACLVMM_TEST_KT_PRELOAD_CHILD") != nullptr) {  // the preloaded run
    EXPECT_EQ(aclvmmRegisterKernel("test_lib_add", kt_record_kernel, nullptr), kKtAlreadyRegistered);
    kt_drop_inherited_runtime();
    ASSERT_EQ(aclInit(nullptr), kOk);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
    EXPECT_EQ(kt_run_lib_add("test_lib_add", 3), 0);
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    return;
  }
  if (kSanitized) GTEST_SKIP() << "a sanitizer's runtime must be the first preloaded library";
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = '\0';
  const TimedChildResult r = run_in_child_for(kKtLibDeadlineMs, [&] {
    unsetenv("ACLVMM_KERNEL_LIBS");
    setenv("ACLVMM_TEST_KT_PRELOAD_CHILD", "1", 1);
    setenv("LD_PRELOAD", kKtLib, 1);
    execl(self, self, "--gtest_filter=KernelLibsTest.APreloadedLibraryRegistersItsKernelsBeforeMain",
          static_cast<char*>(nullptr));
    return 99;  // exec failed
  });
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 0) << "see the preloaded run's output above";
}

// §9.8 "An empty item is malformed": the starting call (aclInit, or an implicit start) fails with
// 100000 and a message naming ACLVMM_KERNEL_LIBS, nothing is loaded, the runtime stays stopped,
// and it starts normally once the variable is fixed.
TEST(KernelLibsTest, AnEmptyItemFailsTheStart) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kKtLibDeadlineMs, [] {
    kt_drop_inherited_runtime();
    const std::string lib = kKtLib;
    const std::string rows[] = {lib + "::" + lib, ":" + lib, lib + ":", ":", "::", lib + ":" + lib + ":"};
    int code = 10;
    for (const std::string& value : rows) {
      setenv("ACLVMM_KERNEL_LIBS", value.c_str(), 1);
      KT_CHILD_CHECK(aclInit(nullptr) == kParam, code + 1);
      const std::string msg = recent_msg();
      if (msg.find("ACLVMM_KERNEL_LIBS") == std::string::npos) {
        std::fprintf(stderr, "%s: %s\n", value.c_str(), msg.c_str());
        return code + 2;
      }
      KT_CHILD_CHECK(aclFinalize() == ACL_ERROR_REPEAT_FINALIZE, code + 3);
      uint32_t n = 0;
      KT_CHILD_CHECK(aclrtGetDeviceCount(&n) == kParam, code + 4);  // implicit start
      KT_CHILD_CHECK(recent_msg().find("ACLVMM_KERNEL_LIBS") != std::string::npos, code + 5);
      KT_CHILD_CHECK(!kt_lib_loaded(kKtLib), code + 6);
      code += 10;
    }
    unsetenv("ACLVMM_KERNEL_LIBS");
    KT_CHILD_CHECK(aclInit(nullptr) == kOk, 1);
    KT_CHILD_CHECK(aclFinalize() == kOk, 2);
    return 0;
  }));
}

// §9.8 "A path that cannot be loaded makes the starting call fail with 100000 and a message naming
// the variable, the path and dlerror()": a missing file, a file that is no library, a directory,
// and a bad second item behind a good one.
TEST(KernelLibsTest, AnUnloadableLibraryFailsTheStartNamingThePath) {
  const std::string text = temp_file("not a shared library");
  struct Row {
    std::string value;  // ACLVMM_KERNEL_LIBS
    std::string bad;    // the item that cannot be loaded
  };
  const std::vector<Row> rows = {
      {"/nonexistent/kt_missing_lib.so", "/nonexistent/kt_missing_lib.so"},
      {text, text},
      {"/tmp", "/tmp"},
      {std::string(kKtLib) + ":/nonexistent/kt_second.so", "/nonexistent/kt_second.so"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.value);
    EXPECT_CHILD_DONE_OK(run_in_child_for(kKtLibDeadlineMs, [&] {
      kt_drop_inherited_runtime();
      setenv("ACLVMM_KERNEL_LIBS", r.value.c_str(), 1);
      KT_CHILD_CHECK(aclInit(nullptr) == kParam, 1);
      const std::string msg = recent_msg();
      // What dlopen says about that path here (it loads nothing).
      KT_CHILD_CHECK(dlopen(r.bad.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr, 2);
      const char* why = dlerror();
      const std::string dl = why ? why : "";
      if (msg.find("ACLVMM_KERNEL_LIBS") == std::string::npos ||
          msg.find("\"" + r.bad + "\"") == std::string::npos || dl.empty() ||
          msg.find(dl) == std::string::npos) {
        std::fprintf(stderr, "message: %s\ndlerror: %s\n", msg.c_str(), dl.c_str());
        return 3;
      }
      KT_CHILD_CHECK(aclFinalize() == ACL_ERROR_REPEAT_FINALIZE, 4);
      uint32_t n = 0;
      KT_CHILD_CHECK(aclrtGetDeviceCount(&n) == kParam, 5);  // an implicit start fails alike
      unsetenv("ACLVMM_KERNEL_LIBS");
      KT_CHILD_CHECK(aclInit(nullptr) == kOk, 6);
      KT_CHILD_CHECK(aclFinalize() == kOk, 7);
      return 0;
    }));
  }
  unlink(text.c_str());
}

// A library constructor that makes another ACL call while the runtime starts gets 100000 at once
// instead of deadlocking on the start it is part of; the start itself succeeds and the runtime
// works afterwards. Each call in its own child (a constructor runs once per process), started by
// aclInit and by an implicit start.
TEST(KernelLibsTest, AConstructorCallingTheRuntimeDuringTheStartIsRefused) {
  const char* calls[] = {"aclrtGetDeviceCount", "aclrtSetDevice", "aclrtMalloc", "aclrtBinaryLoadFromFile",
                         "aclrtGetSocName",     "aclInit",        "aclFinalize"};
  for (const char* call : calls) {
    for (bool explicit_init : {true, false}) {
      SCOPED_TRACE(std::string(call) + (explicit_init ? " (aclInit starts)" : " (implicit start)"));
      const TimedChildResult r = run_in_child_for(kKtLibDeadlineMs / 2, [&] {
        kt_drop_inherited_runtime();
        setenv("ACLVMM_KERNEL_LIBS", kKtCallerLib, 1);
        setenv("ACLVMM_TEST_LIB_CALL", call, 1);
        uint32_t n = 0;
        if (explicit_init) {
          KT_CHILD_CHECK(aclInit(nullptr) == kOk, 1);
        } else {
          KT_CHILD_CHECK(aclrtGetDeviceCount(&n) == kOk, 1);
        }
        int* made = kt_lib_symbol<int>(kKtCallerLib, "aclvmm_test_lib_call_made");
        int* rc = kt_lib_symbol<int>(kKtCallerLib, "aclvmm_test_lib_call_rc");
        const char* msg = kt_lib_symbol<char>(kKtCallerLib, "aclvmm_test_lib_call_msg");
        KT_CHILD_CHECK(made && rc && msg, 2);
        KT_CHILD_CHECK(*made == 1, 3);
        if (*rc != kParam) {
          std::fprintf(stderr, "%s in the constructor: %d (%s)\n", call, *rc, msg);
          return 4;
        }
        KT_CHILD_CHECK(std::string(msg) != "", 5);
        // The runtime that started works (and was not finalized by the refused aclFinalize).
        KT_CHILD_CHECK(aclrtGetDeviceCount(&n) == kOk && n > 0, 6);
        KT_CHILD_CHECK(aclrtSetDevice(0) == kOk, 7);
        void* p = nullptr;
        KT_CHILD_CHECK(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST) == kOk, 8);
        KT_CHILD_CHECK(aclrtFree(p) == kOk, 9);
        aclrtResetDeviceForce(0);
        if (explicit_init) KT_CHILD_CHECK(aclFinalize() == kOk, 10);
        return 0;
      });
      EXPECT_FALSE(r.hung) << "the start deadlocked on the constructor's call";
      EXPECT_EQ(r.signal, 0);
      EXPECT_EQ(r.exit_code, 0);
    }
  }
}

}  // namespace
}  // namespace aclvmm_test
