// aclvmmRegisterKernel / aclvmmUnregisterKernel (runtime-extra.md §9.8): the checks, a duplicate
// keeps the first entry, names compared byte for byte, the registry belongs to the process (any
// thread, before aclInit, after aclFinalize, surviving aclFinalize), and a kernel may use the
// registry while it runs.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "api/kernel_lib/kernel_test_util.h"

namespace aclvmm_test {
namespace {

using KernelRegistryTest = KtTest;

// §9.8: each misuse, in the order of the checks, with its exact code; a rejected call registers or
// removes nothing.
TEST_F(KernelRegistryTest, MisuseTableInCheckOrder) {
  KtRecorder other;
  struct Row {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  };
  const Row rows[] = {
      {"Register name NULL, func NULL", [] { return aclvmmRegisterKernel(nullptr, nullptr, nullptr); },
       kParam},
      {"Register name NULL", [&] { return aclvmmRegisterKernel(nullptr, kt_record_kernel, &other); },
       kParam},
      {"Register name empty", [&] { return aclvmmRegisterKernel("", kt_record_kernel, &other); }, kParam},
      {"Register name empty, func NULL", [] { return aclvmmRegisterKernel("", nullptr, nullptr); }, kParam},
      {"Register func NULL", [] { return aclvmmRegisterKernel("kt_reg_fresh", nullptr, nullptr); },
       kParam},
      // The ACL check comes before the duplicate check.
      {"Register func NULL under a taken name",
       [] { return aclvmmRegisterKernel("kt_record", nullptr, nullptr); }, kParam},
      {"Register a taken name", [&] { return aclvmmRegisterKernel("kt_record", kt_record_kernel, &other); },
       kKtAlreadyRegistered},
      {"Register a taken name with another function",
       [&] { return aclvmmRegisterKernel("kt_add", kt_record_kernel, &other); }, kKtAlreadyRegistered},
      {"Unregister NULL", [] { return aclvmmUnregisterKernel(nullptr); }, kParam},
      {"Unregister empty", [] { return aclvmmUnregisterKernel(""); }, kParam},
      {"Unregister a name never registered", [] { return aclvmmUnregisterKernel("kt_reg_unknown"); },
       kKtKernelNotFound},
      {"Unregister the name a rejected Register named",
       [] { return aclvmmUnregisterKernel("kt_reg_fresh"); }, kKtKernelNotFound},
      {"Unregister another case", [] { return aclvmmUnregisterKernel("KT_RECORD"); }, kKtKernelNotFound},
      {"Unregister with a trailing space", [] { return aclvmmUnregisterKernel("kt_record "); },
       kKtKernelNotFound},
      {"Unregister a prefix", [] { return aclvmmUnregisterKernel("kt_recor"); }, kKtKernelNotFound},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.call(), r.expected);
    if (r.expected != kOk) {
      EXPECT_NE(recent_msg(), "") << "a failure leaves a message";
    }
  }
  // Both fixture kernels are still the ones registered first: a launch runs them, and `other`
  // (the duplicates' userData) never ran.
  const aclrtFuncHandle rec = fn("kt_record");
  const aclrtFuncHandle add = fn("kt_add");
  ASSERT_NE(rec, nullptr);
  ASSERT_NE(add, nullptr);
  const uint64_t zero = 0;
  ASSERT_EQ(kt_launch(rec, 3, nullptr, kt_build_args(rec, {kt_bytes(zero)})), kOk);
  ASSERT_EQ(kt_launch(add, 1, nullptr, kt_build_args(add, {kt_bytes(zero)})), kOk);  // too short: no access
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(rec_.count(), 1u);
  EXPECT_EQ(rec_.last().user_data, &rec_);
  EXPECT_EQ(rec_.last().blocks, 3u);
  EXPECT_EQ(add_.calls.load(), 1);
  EXPECT_EQ(other.count(), 0u);
}

// §9.8: "name already registered → 100031, the existing entry stays": the first function and its
// userData run, not the second's.
TEST_F(KernelRegistryTest, DuplicateKeepsTheFirstFunctionAndUserData) {
  KtRecorder first, second;
  reg("kt_reg_dup", kt_record_kernel, &first);
  EXPECT_EQ(aclvmmRegisterKernel("kt_reg_dup", kt_record_kernel, &second), kKtAlreadyRegistered);
  EXPECT_NE(recent_msg().find("kt_reg_dup"), std::string::npos) << "the message names the kernel";
  EXPECT_EQ(aclvmmRegisterKernel("kt_reg_dup", kt_add_kernel, &add_), kKtAlreadyRegistered);
  const aclrtFuncHandle f = fn("kt_reg_dup");
  const uint32_t v = 0x1234;
  ASSERT_EQ(kt_launch(f, 5, nullptr, kt_build_args(f, {kt_bytes(v)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  ASSERT_EQ(first.count(), 1u);
  EXPECT_EQ(first.last().user_data, &first);
  EXPECT_EQ(first.last().args, kt_bytes(v));
  EXPECT_EQ(second.count(), 0u);
  EXPECT_EQ(add_.calls.load(), 0);
}

// §9.8 "Names are compared byte for byte": names that differ by case, a trailing byte, a prefix
// or a non-ASCII byte are different kernels.
TEST_F(KernelRegistryTest, NamesAreComparedByteForByte) {
  KtRecorder a, b, c, d;
  reg("kt_reg_name", kt_record_kernel, &a);
  reg("KT_REG_NAME", kt_record_kernel, &b);
  reg("kt_reg_name ", kt_record_kernel, &c);
  reg("kt_reg_name\xc3\xa9", kt_record_kernel, &d);
  for (const char* missing : {"kt_reg_nam", "Kt_reg_name", "kt_reg_name\xc3", " kt_reg_name"}) {
    SCOPED_TRACE(missing);
    aclrtFuncHandle f = nullptr;
    EXPECT_EQ(aclrtBinaryGetFunction(bin_, missing, &f), kRtParam);
    EXPECT_NE(recent_msg().find(kt_not_registered_message(missing)), std::string::npos);
  }
  KtRecorder* recorders[] = {&a, &b, &c, &d};
  const char* names[] = {"kt_reg_name", "KT_REG_NAME", "kt_reg_name ", "kt_reg_name\xc3\xa9"};
  for (int i = 0; i < 4; ++i) {
    const aclrtFuncHandle f = fn(names[i]);
    const uint32_t v = static_cast<uint32_t>(i);
    ASSERT_EQ(kt_launch(f, 1, nullptr, kt_build_args(f, {kt_bytes(v)})), kOk);
  }
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    ASSERT_EQ(recorders[i]->count(), 1u);
    EXPECT_EQ(recorders[i]->last().args, kt_bytes(static_cast<uint32_t>(i)));
  }
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_name"), kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_name"), kKtKernelNotFound);
  EXPECT_EQ(aclvmmUnregisterKernel("KT_REG_NAME"), kOk);  // the others were not touched
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_name "), kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_name\xc3\xa9"), kOk);
}

// §9.8: unregistering frees the name (a second unregister is 100029, a new register succeeds).
TEST_F(KernelRegistryTest, UnregisterFreesTheName) {
  KtRecorder first, second;
  reg("kt_reg_again", kt_record_kernel, &first);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_again"), kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_again"), kKtKernelNotFound);
  aclrtFuncHandle f = nullptr;
  EXPECT_EQ(aclrtBinaryGetFunction(bin_, "kt_reg_again", &f), kRtParam);
  EXPECT_EQ(aclvmmRegisterKernel("kt_reg_again", kt_record_kernel, &second), kOk);
  f = fn("kt_reg_again");
  const uint32_t v = 7;
  ASSERT_EQ(kt_launch(f, 1, nullptr, kt_build_args(f, {kt_bytes(v)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(first.count(), 0u);
  EXPECT_EQ(second.count(), 1u);
}

// §9.8 "both calls work from any thread": a name registered on one thread is found on another,
// and of threads racing to register one name exactly one wins (the others get 100031).
TEST_F(KernelRegistryTest, AnyThreadAndOneWinnerPerName) {
  KtRecorder r[8];
  std::atomic<int> go{0};
  aclError codes[8];
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      while (go.load() == 0) std::this_thread::yield();
      codes[i] = aclvmmRegisterKernel("kt_reg_race", kt_record_kernel, &r[i]);
    });
  }
  go.store(1);
  for (auto& t : threads) t.join();
  int winner = -1, won = 0;
  for (int i = 0; i < 8; ++i) {
    if (codes[i] == kOk) {
      winner = i;
      ++won;
    } else {
      EXPECT_EQ(codes[i], kKtAlreadyRegistered) << "thread " << i;
    }
  }
  ASSERT_EQ(won, 1);
  const aclrtFuncHandle f = fn("kt_reg_race");
  const uint32_t v = 1;
  ASSERT_EQ(kt_launch(f, 1, nullptr, kt_build_args(f, {kt_bytes(v)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r[i].count(), i == winner ? 1u : 0u) << "thread " << i;
  // Unregistered on another thread: gone for this one.
  aclError rc = -1;
  std::thread([&] { rc = aclvmmUnregisterKernel("kt_reg_race"); }).join();
  EXPECT_EQ(rc, kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_reg_race"), kKtKernelNotFound);
}

// A named kernel that uses the registry while it runs (kernel_registry.h: it is called with no
// lock held): it registers a second kernel and unregisters itself. Run in a child under a deadline
// so that a deadlock fails the test instead of hanging the suite.
struct KtSelfRemoving {
  std::atomic<int> register_rc{-1}, unregister_rc{-1}, calls{0};
  KtRecorder inner;
};
void kt_self_removing_kernel(aclvmmKernelContext*, uint32_t, const void*, size_t, void* user) {
  auto* k = static_cast<KtSelfRemoving*>(user);
  k->calls.fetch_add(1);
  k->register_rc = aclvmmRegisterKernel("kt_reg_inner", kt_record_kernel, &k->inner);
  k->unregister_rc = aclvmmUnregisterKernel("kt_reg_self");
}

TEST(KernelRegistryProcess, AKernelMayRegisterAndUnregisterWhileItRuns) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [] {
    kt_drop_inherited_runtime();
    KtSelfRemoving k;
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_self", kt_self_removing_kernel, &k) == kOk, 1);
    KT_CHILD_CHECK(aclInit(nullptr) == kOk && aclrtSetDevice(0) == kOk, 2);
    const std::string path = temp_file("bin");
    aclrtBinHandle bin = nullptr;
    KT_CHILD_CHECK(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &bin) == kOk, 3);
    unlink(path.c_str());
    aclrtFuncHandle f = nullptr;
    KT_CHILD_CHECK(aclrtBinaryGetFunction(bin, "kt_reg_self", &f) == kOk, 4);
    aclrtArgsHandle a = nullptr;
    aclrtParamHandle p = nullptr;
    uint64_t v = 1;
    KT_CHILD_CHECK(aclrtKernelArgsInit(f, &a) == kOk, 5);
    KT_CHILD_CHECK(aclrtKernelArgsAppend(a, &v, sizeof v, &p) == kOk, 6);
    KT_CHILD_CHECK(aclrtKernelArgsFinalize(a) == kOk, 7);
    KT_CHILD_CHECK(kt_launch(f, 1, nullptr, a) == kOk, 8);
    KT_CHILD_CHECK(aclrtSynchronizeStream(nullptr) == kOk, 9);
    KT_CHILD_CHECK(k.calls.load() == 1, 10);
    KT_CHILD_CHECK(k.register_rc.load() == kOk, 11);
    KT_CHILD_CHECK(k.unregister_rc.load() == kOk, 12);
    // It is gone now; the one it registered is there.
    KT_CHILD_CHECK(kt_launch(f, 1, nullptr, a) == kBadHandle, 13);
    aclrtFuncHandle g = nullptr;
    KT_CHILD_CHECK(aclrtBinaryGetFunction(bin, "kt_reg_inner", &g) == kOk, 14);
    KT_CHILD_CHECK(aclrtKernelArgsInit(g, &a) == kOk && aclrtKernelArgsAppend(a, &v, sizeof v, &p) == kOk &&
                       aclrtKernelArgsFinalize(a) == kOk,
                   15);
    KT_CHILD_CHECK(kt_launch(g, 2, nullptr, a) == kOk, 16);
    KT_CHILD_CHECK(aclrtSynchronizeStream(nullptr) == kOk, 17);
    KT_CHILD_CHECK(k.inner.count() == 1 && k.inner.last().blocks == 2, 18);
    aclrtResetDeviceForce(0);
    KT_CHILD_CHECK(aclFinalize() == kOk, 19);
    return 0;
  }));
}

// §9.8 "The registry belongs to the process, not to the runtime": registering before aclInit
// starts no runtime (the configuration is still read at aclInit), the kernel is found after
// aclInit, both calls work after aclFinalize, and registrations survive aclFinalize. In a child,
// so that the runtime is really stopped before the first call.
TEST(KernelRegistryProcess, WorksBeforeInitAndAfterFinalizeAndSurvivesFinalize) {
  EXPECT_CHILD_DONE_OK(run_in_child_for(kForkDeadlineMs, [] {
    kt_drop_inherited_runtime();
    unsetenv("ACLVMM_DEVICE_COUNT");
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    KtRecorder early, late;
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_early", kt_record_kernel, &early) == kOk, 1);
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_early", kt_record_kernel, &late) == kKtAlreadyRegistered, 2);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("kt_reg_never") == kKtKernelNotFound, 3);
    // Had registering started the runtime, it would have read the configuration already.
    setenv("ACLVMM_DEVICE_COUNT", "3", 1);
    KT_CHILD_CHECK(aclInit(nullptr) == kOk, 4);
    uint32_t count = 0;
    KT_CHILD_CHECK(aclrtGetDeviceCount(&count) == kOk && count == 3, 5);
    unsetenv("ACLVMM_DEVICE_COUNT");
    KT_CHILD_CHECK(aclrtSetDevice(0) == kOk, 6);
    const std::string path = temp_file("bin");
    auto launch_on_new_binary = [&](const char* name, uint32_t blocks) -> int {
      aclrtBinHandle bin = nullptr;
      if (aclrtBinaryLoadFromFile(path.c_str(), nullptr, &bin) != kOk) return 1;
      aclrtFuncHandle f = nullptr;
      if (aclrtBinaryGetFunction(bin, name, &f) != kOk) return 2;
      aclrtArgsHandle a = nullptr;
      aclrtParamHandle p = nullptr;
      uint32_t v = blocks;
      if (aclrtKernelArgsInit(f, &a) != kOk || aclrtKernelArgsAppend(a, &v, sizeof v, &p) != kOk ||
          aclrtKernelArgsFinalize(a) != kOk) {
        return 3;
      }
      if (kt_launch(f, blocks, nullptr, a) != kOk) return 4;
      if (aclrtSynchronizeStream(nullptr) != kOk) return 5;
      return aclrtBinaryUnLoad(bin) == kOk ? 0 : 6;
    };
    KT_CHILD_CHECK(launch_on_new_binary("kt_reg_early", 4) == 0, 7);
    KT_CHILD_CHECK(early.count() == 1 && early.last().blocks == 4, 8);
    aclrtResetDeviceForce(0);
    KT_CHILD_CHECK(aclFinalize() == kOk, 9);
    // After aclFinalize: both calls work, and the early registration is still there.
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_late", kt_record_kernel, &early) == kOk, 10);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("kt_reg_late") == kOk, 11);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("kt_reg_late") == kKtKernelNotFound, 12);
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_late", kt_record_kernel, &late) == kOk, 13);
    KT_CHILD_CHECK(aclvmmRegisterKernel("kt_reg_early", kt_record_kernel, &late) == kKtAlreadyRegistered, 14);
    KT_CHILD_CHECK(aclvmmRegisterKernel(nullptr, kt_record_kernel, &late) == kParam, 15);
    KT_CHILD_CHECK(aclvmmUnregisterKernel("") == kParam, 16);
    KT_CHILD_CHECK(aclFinalize() == ACL_ERROR_REPEAT_FINALIZE, 17);  // still stopped
    KT_CHILD_CHECK(aclInit(nullptr) == kOk && aclrtSetDevice(0) == kOk, 18);
    KT_CHILD_CHECK(launch_on_new_binary("kt_reg_early", 2) == 0, 19);
    KT_CHILD_CHECK(launch_on_new_binary("kt_reg_late", 6) == 0, 20);
    KT_CHILD_CHECK(early.count() == 2 && early.last().blocks == 2, 21);
    KT_CHILD_CHECK(late.count() == 1 && late.last().blocks == 6, 22);
    unlink(path.c_str());
    aclrtResetDeviceForce(0);
    KT_CHILD_CHECK(aclFinalize() == kOk, 23);
    return 0;
  }));
}

}  // namespace
}  // namespace aclvmm_test
