// Failure injection into the kernel calls (runtime-extra.md §11: "aclvmmInjectFault and
// ACLVMM_FAULTS apply to every name of symbols-extra.txt; a failing call changes nothing"): for
// each of the seven calls, the armed call returns the injected code with a message, and what it
// would have changed is as before; the next call succeeds.
#include <functional>
#include <string>

#include "api/kernel_lib/kernel_test_util.h"

namespace aclvmm_test {
namespace {

using KernelInjectionTest = KtTest;
constexpr aclError kKtInjected = 207001;

TEST_F(KernelInjectionTest, AnInjectedFailureChangesNothing) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtStream s = stream();
  int sentinel = 0;
  aclrtBinHandle loaded = nullptr;
  aclrtArgsHandle args = nullptr;
  size_t calls_before = 0;
  struct Row {
    const char* api;
    std::function<void()> setup;                 // before the call is armed
    std::function<aclError()> call;              // the armed call (made again afterwards)
    std::function<void()> check_unchanged;       // after the failed call
  };
  const Row rows[] = {
      {"aclrtBinaryLoadFromFile", [] {},
       [&] {
         aclrtBinHandle h = &sentinel;
         const aclError rc = aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &h);
         if (rc == kOk) {
           EXPECT_EQ(aclrtBinaryUnLoad(h), kOk);
         } else {
           EXPECT_EQ(h, static_cast<void*>(&sentinel));
         }
         return rc;
       },
       [&] { EXPECT_EQ(live_count("binaries"), 1); }},
      // On device 1, where bin_ is not loaded yet: a failed lookup must not load it there.
      {"aclrtBinaryGetFunction", [&] { args = kt_build_args(f, {"x"}); },
       [&] {
         aclrtFuncHandle out = &sentinel;
         EXPECT_EQ(aclrtSetDevice(1), kOk);
         const aclError rc = aclrtBinaryGetFunction(bin_, "kt_record", &out);
         if (rc != kOk) {
           EXPECT_EQ(out, static_cast<void*>(&sentinel));
           EXPECT_EQ(kt_launch(f, 1, nullptr, args), kBadHandle) << "loaded on device 1";
         }
         EXPECT_EQ(aclrtSetDevice(0), kOk);
         return rc;
       },
       [] {}},
      {"aclrtBinaryUnLoad",
       [&] {
         if (loaded == nullptr) {
           EXPECT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &loaded), kOk);
         }
       },
       [&] {
         const aclError rc = aclrtBinaryUnLoad(loaded);
         if (rc == kOk) loaded = nullptr;
         return rc;
       },
       [&] {
         EXPECT_EQ(live_count("binaries"), 2) << "still loaded";
         aclrtFuncHandle g = nullptr;
         EXPECT_EQ(aclrtBinaryGetFunction(loaded, "kt_record", &g), kOk);
       }},
      {"aclrtKernelArgsInit", [&] { args = kt_build_args(f, {"previous"}); },
       [&] {
         aclrtArgsHandle a = &sentinel;
         const aclError rc = aclrtKernelArgsInit(f, &a);
         if (rc != kOk) {
           EXPECT_EQ(a, static_cast<void*>(&sentinel));
         }
         return rc;
       },
       [&] {
         // The thread's finalized buffer is untouched: it still launches with its bytes.
         EXPECT_EQ(kt_launch(f, 1, s, args), kOk);
         EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
         EXPECT_EQ(rec_.last().args, "previous");
       }},
      {"aclrtKernelArgsAppend", [&] { args = kt_build_args(f, {"kept"}, false); },
       [&] {
         char extra[3] = {'a', 'b', 'c'};
         aclrtParamHandle p = &sentinel;
         const aclError rc = aclrtKernelArgsAppend(args, extra, sizeof extra, &p);
         if (rc != kOk) {
           EXPECT_EQ(p, static_cast<void*>(&sentinel));
         }
         return rc;
       },
       [&] {
         EXPECT_EQ(aclrtKernelArgsFinalize(args), kOk);
         EXPECT_EQ(kt_launch(f, 1, s, args), kOk);
         EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
         EXPECT_EQ(rec_.last().args, "kept") << "nothing appended";
       }},
      {"aclrtKernelArgsFinalize", [&] { args = kt_build_args(f, {"fin"}, false); },
       [&] { return aclrtKernelArgsFinalize(args); },
       [&] {
         EXPECT_EQ(kt_launch(f, 1, s, args), kRtParam) << "not finalized";
         char c = 'c';
         aclrtParamHandle p = nullptr;
         EXPECT_EQ(aclrtKernelArgsAppend(args, &c, 1, &p), kOk) << "not finalized";
       }},
      {"aclrtLaunchKernelWithConfig",
       [&] {
         args = kt_build_args(f, {"launch"});
         EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
         calls_before = rec_.count();
       },
       [&] { return kt_launch(f, 1, s, args); },
       [&] {
         EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
         EXPECT_EQ(rec_.count(), calls_before) << "nothing queued";
       }},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.api);
    r.setup();
    ASSERT_EQ(aclvmmInjectFault(r.api, 1, kKtInjected), kOk);
    EXPECT_EQ(r.call(), kKtInjected);
    const std::string msg = recent_msg();
    EXPECT_NE(msg.find(r.api), std::string::npos) << msg;
    EXPECT_NE(msg.find("injected"), std::string::npos) << msg;
    EXPECT_EQ(aclvmmFaultRemaining(r.api), 0u);
    r.check_unchanged();
    r.setup();
    EXPECT_EQ(r.call(), kOk) << "fired once only";
  }
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
}

}  // namespace
}  // namespace aclvmm_test
