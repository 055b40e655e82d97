// aclrtBinaryLoadFromFile, aclrtBinaryGetFunction, aclrtBinaryUnLoad (runtime-extra.md §9.1, §9.2,
// §9.7) and the binaries' statistics and leak report (§11).
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "api/kernel_lib/kernel_test_util.h"

namespace aclvmm_test {
namespace {

using KernelLoadTest = KtTest;
using KernelLoadStatsTest = AclTest;

// A load option with any int as its type (store_raw) and the value's first word.
aclrtBinaryLoadOption kt_option(int type, uint32_t value) {
  aclrtBinaryLoadOption o;
  std::memset(&o, 0, sizeof o);
  store_raw(o.type, type);
  o.value.rsv[0] = value;
  return o;
}

// Loads, and unloads again when the call (unexpectedly or not) succeeded; the handle must stay
// untouched when it fails.
aclError kt_try_load(const char* path, aclrtBinaryLoadOptions* options) {
  int sentinel = 0;
  aclrtBinHandle h = &sentinel;
  const aclError rc = aclrtBinaryLoadFromFile(path, options, &h);
  if (rc == kOk) {
    EXPECT_NE(h, nullptr);
    EXPECT_NE(h, static_cast<void*>(&sentinel));
    EXPECT_EQ(aclrtBinaryUnLoad(h), kOk);
  } else {
    EXPECT_EQ(h, static_cast<void*>(&sentinel)) << "a failed load wrote the handle";
  }
  return rc;
}

// `target` relative to the working directory ("../../tmp/x" from /a/b).
std::string kt_relative_to_cwd(const std::string& target) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return target;
  std::string rel;
  for (const char* p = cwd; *p; ++p) {
    if (*p == '/' && p[1] != '\0') rel += "../";
  }
  if (rel.empty() && std::string(cwd) != "/") rel = "../";
  return rel + (target[0] == '/' ? target.substr(1) : target);
}

// §9.1: every misuse in the order of the checks with its exact code; nothing is loaded by a
// failed call. Rows that break two rules show which check comes first.
TEST_F(KernelLoadTest, LoadMisuseTableInCheckOrder) {
  const char* good = path_.c_str();
  const std::string dir = "/tmp";
  const std::string missing = path_ + ".missing";
  const std::string dangling = path_ + ".dangling";
  ASSERT_EQ(symlink(missing.c_str(), dangling.c_str()), 0);
  const std::string through_file = path_ + "/below";
  aclrtBinaryLoadOption lazy1 = kt_option(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 1);
  aclrtBinaryLoadOption bad[] = {
      kt_option(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 2),
      kt_option(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 0xffffffffu),
      kt_option(ACL_RT_BINARY_LOAD_OPT_MAGIC, ACL_RT_BINARY_MAGIC_ELF_AICORE),
      kt_option(ACL_RT_BINARY_LOAD_OPT_MAGIC, 0),
      kt_option(ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, 2),
      kt_option(ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, static_cast<uint32_t>(-1)),
      kt_option(0, 0),
      kt_option(4, 0),
      kt_option(-1, 0),
  };
  const char* bad_names[] = {"LAZY_LOAD 2", "LAZY_LOAD 0xffffffff", "MAGIC AICORE", "MAGIC 0",
                             "CPU_KERNEL_MODE 2", "CPU_KERNEL_MODE -1", "type 0", "type 4",
                             "type -1"};
  aclrtBinHandle h = nullptr;
  aclrtBinaryLoadOptions null_options{nullptr, 0};
  aclrtBinaryLoadOptions null_options3{nullptr, 3};
  struct Row {
    std::string name;
    std::function<aclError()> call;
    aclError expected;
  };
  std::vector<Row> rows = {
      {"path NULL, handle NULL", [] { return aclrtBinaryLoadFromFile(nullptr, nullptr, nullptr); }, kParam},
      {"path NULL", [&] { return aclrtBinaryLoadFromFile(nullptr, nullptr, &h); }, kParam},
      {"handle NULL", [&] { return aclrtBinaryLoadFromFile(good, nullptr, nullptr); }, kParam},
      {"path NULL, options->options NULL",
       [&] { return aclrtBinaryLoadFromFile(nullptr, &null_options, &h); }, kParam},
      {"handle NULL, path missing", [&] { return aclrtBinaryLoadFromFile(missing.c_str(), nullptr, nullptr); },
       kParam},
      {"options->options NULL, numOpt 0", [&] { return kt_try_load(good, &null_options); }, kRtParam},
      {"options->options NULL, numOpt 3", [&] { return kt_try_load(good, &null_options3); }, kRtParam},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    rows.push_back({std::string("option ") + bad_names[i],
                    [&, i] {
                      aclrtBinaryLoadOptions o{&bad[i], 1};
                      return kt_try_load(good, &o);
                    },
                    kRtParam});
    rows.push_back({std::string("a valid option, then ") + bad_names[i],
                    [&, i] {
                      aclrtBinaryLoadOption two[] = {lazy1, bad[i]};
                      aclrtBinaryLoadOptions o{two, 2};
                      return kt_try_load(good, &o);
                    },
                    kRtParam});
  }
  rows.push_back({"option MAGIC with handle NULL (ACL check first)",
                  [&] {
                    aclrtBinaryLoadOptions o{&bad[2], 1};
                    return aclrtBinaryLoadFromFile(good, &o, nullptr);
                  },
                  kParam});
  rows.push_back({"nonexistent path", [&] { return kt_try_load(missing.c_str(), nullptr); }, kRtParam});
  rows.push_back({"empty path", [&] { return kt_try_load("", nullptr); }, kRtParam});
  rows.push_back({"a directory", [&] { return kt_try_load(dir.c_str(), nullptr); }, kRtParam});
  rows.push_back({"a directory with a trailing slash", [&] { return kt_try_load("/tmp/", nullptr); }, kRtParam});
  rows.push_back({"a dangling symlink", [&] { return kt_try_load(dangling.c_str(), nullptr); }, kRtParam});
  rows.push_back({"a path through a file", [&] { return kt_try_load(through_file.c_str(), nullptr); },
                  kRtParam});
  rows.push_back({"a character device", [&] { return kt_try_load("/dev/null", nullptr); }, kRtParam});

  const long long before = live_count("binaries");
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.call(), r.expected);
    if (r.expected != kOk) {
      EXPECT_NE(recent_msg(), "");
    }
  }
  EXPECT_EQ(live_count("binaries"), before) << "a failed load counts no binary";
  unlink(dangling.c_str());
}

// §9.1 check 3: valid options (values 0/1 of LAZY_LOAD and CPU_KERNEL_MODE, several at once, an
// array with numOpt 0) are accepted and change nothing: the handle works like any other.
TEST_F(KernelLoadTest, ValidOptionsAreAccepted) {
  aclrtBinaryLoadOption all[] = {
      kt_option(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 0), kt_option(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 1),
      kt_option(ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, 0),
      kt_option(ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, 1)};
  struct Row {
    const char* name;
    aclrtBinaryLoadOptions options;
  } rows[] = {
      {"an array, numOpt 0", {all, 0}},
      {"LAZY_LOAD 0", {&all[0], 1}},
      {"LAZY_LOAD 1", {&all[1], 1}},
      {"CPU_KERNEL_MODE 0", {&all[2], 1}},
      {"CPU_KERNEL_MODE 1", {&all[3], 1}},
      {"all four", {all, 4}},
  };
  for (Row& r : rows) {
    SCOPED_TRACE(r.name);
    aclrtBinHandle h = nullptr;
    ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), &r.options, &h), kOk);
    ASSERT_NE(h, nullptr);
    const aclrtFuncHandle f = fn("kt_record", h);
    const uint16_t v = 0x5a5a;
    ASSERT_EQ(kt_launch(f, 1, nullptr, kt_build_args(f, {kt_bytes(v)})), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
    EXPECT_EQ(rec_.last().args, kt_bytes(v));
    EXPECT_EQ(aclrtBinaryUnLoad(h), kOk);
  }
  EXPECT_EQ(rec_.count(), sizeof rows / sizeof rows[0]);
}

// §9.1 checks 4-5: the content is never interpreted (an empty file, random bytes, an ELF header
// that is not a kernel), relative paths work, and no context is needed.
TEST_F(KernelLoadTest, AnyContentRelativePathsAndNoContextLoad) {
  std::string noise = pattern(300000, 9);
  const std::string files[] = {temp_file(""), temp_file(noise), temp_file("\x7f" "ELF\x02\x01\x01")};
  for (const std::string& p : files) {
    SCOPED_TRACE(p);
    EXPECT_EQ(kt_try_load(p.c_str(), nullptr), kOk);
    const std::string rel = kt_relative_to_cwd(p);
    ASSERT_NE(rel[0], '/') << rel;
    EXPECT_EQ(kt_try_load(rel.c_str(), nullptr), kOk) << rel;
    std::string dotted = "./" + rel;
    EXPECT_EQ(kt_try_load(dotted.c_str(), nullptr), kOk) << dotted;
  }
  // A thread with no context loads too, and its binary is usable where there is one.
  aclrtBinHandle h = nullptr;
  EXPECT_EQ(kt_on_fresh_thread([&] { return aclrtBinaryLoadFromFile(files[0].c_str(), nullptr, &h); }), kOk);
  ASSERT_NE(h, nullptr);
  aclrtFuncHandle f = fn("kt_record", h);
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(aclrtBinaryUnLoad(h), kOk);
  for (const std::string& p : files) unlink(p.c_str());
}

// §9.1 "Loading the same file twice gives two independent handles": different handles, different
// function handles for one name, and unloading one leaves the other working.
TEST_F(KernelLoadTest, SameFileTwiceGivesTwoIndependentHandles) {
  aclrtBinHandle h2 = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &h2), kOk);
  EXPECT_NE(h2, bin_);
  const aclrtFuncHandle f1 = fn("kt_record");
  const aclrtFuncHandle f2 = fn("kt_record", h2);
  ASSERT_NE(f1, nullptr);
  ASSERT_NE(f2, nullptr);
  EXPECT_NE(f1, f2) << "a function handle names (binary, kernel name)";
  const uint32_t one = 1, two = 2;
  ASSERT_EQ(kt_launch(f1, 1, nullptr, kt_build_args(f1, {kt_bytes(one)})), kOk);
  ASSERT_EQ(kt_launch(f2, 2, nullptr, kt_build_args(f2, {kt_bytes(two)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  ASSERT_EQ(rec_.count(), 2u);
  EXPECT_EQ(rec_.calls()[0].args, kt_bytes(one));
  EXPECT_EQ(rec_.calls()[1].args, kt_bytes(two));
  // Unloading the first leaves the second (and its function) alone.
  ASSERT_EQ(aclrtBinaryUnLoad(bin_), kOk);
  bin_ = nullptr;
  aclrtArgsHandle a = nullptr;
  EXPECT_EQ(aclrtKernelArgsInit(f1, &a), kBadHandle);
  EXPECT_EQ(kt_launch(f2, 3, nullptr, kt_build_args(f2, {kt_bytes(one)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(rec_.count(), 3u);
  EXPECT_EQ(fn("kt_record", h2), f2);
  EXPECT_EQ(aclrtBinaryUnLoad(h2), kOk);
}

// §9.2: every misuse in the order of the checks with its exact code (the function handle stays
// untouched); the unregistered name has the prescribed message.
TEST_F(KernelLoadTest, GetFunctionMisuseTableInCheckOrder) {
  aclrtBinHandle unloaded = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &unloaded), kOk);
  ASSERT_EQ(aclrtBinaryUnLoad(unloaded), kOk);
  const aclrtStream s = stream();
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtArgsHandle args = kt_build_args(f, {"12345678"});
  int forged_storage = 0;
  void* const forged = &forged_storage;
  int sentinel = 0;
  aclrtFuncHandle out = &sentinel;
  struct Row {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
    bool fresh_thread;  // called on a thread with no context
    std::string message;  // contained in aclGetRecentErrMsg when not empty
  };
  const std::string unregistered = kt_not_registered_message("kt_load_nobody");
  const Row rows[] = {
      {"all NULL", [] { return aclrtBinaryGetFunction(nullptr, nullptr, nullptr); }, kParam, false, ""},
      {"binHandle NULL", [&] { return aclrtBinaryGetFunction(nullptr, "kt_record", &out); }, kParam, false, ""},
      {"kernelName NULL", [&] { return aclrtBinaryGetFunction(bin_, nullptr, &out); }, kParam, false, ""},
      {"funcHandle NULL", [&] { return aclrtBinaryGetFunction(bin_, "kt_record", nullptr); }, kParam, false, ""},
      {"kernelName NULL on a forged binary", [&] { return aclrtBinaryGetFunction(forged, nullptr, &out); },
       kParam, false, ""},
      {"funcHandle NULL on an unloaded binary",
       [&] { return aclrtBinaryGetFunction(unloaded, "kt_record", nullptr); }, kParam, false, ""},
      {"forged binary", [&] { return aclrtBinaryGetFunction(forged, "kt_record", &out); }, kBadHandle, false, ""},
      {"unloaded binary", [&] { return aclrtBinaryGetFunction(unloaded, "kt_record", &out); }, kBadHandle,
       false, ""},
      {"a stream as binary", [&] { return aclrtBinaryGetFunction(s, "kt_record", &out); }, kBadHandle, false, ""},
      {"a function as binary", [&] { return aclrtBinaryGetFunction(f, "kt_record", &out); }, kBadHandle, false,
       ""},
      {"a parameter buffer as binary", [&] { return aclrtBinaryGetFunction(args, "kt_record", &out); },
       kBadHandle, false, ""},
      {"unloaded binary, unregistered name",
       [&] { return aclrtBinaryGetFunction(unloaded, "kt_load_nobody", &out); }, kBadHandle, false, ""},
      {"unloaded binary, no context", [&] { return aclrtBinaryGetFunction(unloaded, "kt_record", &out); },
       kBadHandle, true, ""},
      {"no context", [&] { return aclrtBinaryGetFunction(bin_, "kt_record", &out); }, kRtParam, true, ""},
      {"no context, unregistered name", [&] { return aclrtBinaryGetFunction(bin_, "kt_load_nobody", &out); },
       kRtParam, true, ""},
      {"unregistered name", [&] { return aclrtBinaryGetFunction(bin_, "kt_load_nobody", &out); }, kRtParam,
       false, unregistered},
      {"empty name", [&] { return aclrtBinaryGetFunction(bin_, "", &out); }, kRtParam, false,
       kt_not_registered_message("")},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    std::string msg;
    if (r.fresh_thread) {
      EXPECT_EQ(kt_on_fresh_thread(r.call, &msg), r.expected);
    } else {
      EXPECT_EQ(r.call(), r.expected);
      msg = recent_msg();
    }
    EXPECT_NE(msg, "");
    if (!r.message.empty()) {
      EXPECT_NE(msg.find(r.message), std::string::npos) << msg;
    }
    EXPECT_EQ(out, static_cast<void*>(&sentinel)) << "a failed call wrote the function handle";
  }
}

// §9.2: the same name gives the same handle value again; another name another handle.
TEST_F(KernelLoadTest, SameNameGivesTheSameHandle) {
  const aclrtFuncHandle a1 = fn("kt_record");
  const aclrtFuncHandle a2 = fn("kt_record");
  const aclrtFuncHandle b = fn("kt_add");
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
  EXPECT_EQ(fn("kt_add"), b);
  // From another thread with its own context on the same device, too.
  aclrtFuncHandle a3 = nullptr;
  EXPECT_EQ(kt_on_fresh_thread([&] {
              aclError rc = aclrtSetDevice(0);
              return rc != kOk ? rc : aclrtBinaryGetFunction(bin_, "kt_record", &a3);
            }),
            kOk);
  EXPECT_EQ(a3, a1);
}

// §9.7: the checks, then the effect: the handle and its function handles give 107017 from then on
// (GetFunction, ArgsInit, Launch, Unload); other binaries are not affected.
TEST_F(KernelLoadTest, UnloadChecksAndInvalidatesItsHandles) {
  aclrtBinHandle other = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &other), kOk);
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtFuncHandle g = fn("kt_add");
  const aclrtFuncHandle keep = fn("kt_record", other);
  const aclrtStream s = stream();
  int forged_storage = 0;
  EXPECT_EQ(aclrtBinaryUnLoad(nullptr), kParam);
  EXPECT_EQ(aclrtBinaryUnLoad(&forged_storage), kBadHandle);
  EXPECT_EQ(aclrtBinaryUnLoad(s), kBadHandle);
  EXPECT_EQ(aclrtBinaryUnLoad(f), kBadHandle) << "a function handle is not a binary";
  const aclrtArgsHandle a = kt_build_args(f, {"abcdefgh"});  // built while f is valid
  EXPECT_EQ(live_count("binaries"), 2);

  ASSERT_EQ(aclrtBinaryUnLoad(bin_), kOk);
  EXPECT_EQ(live_count("binaries"), 1);
  EXPECT_EQ(aclrtBinaryUnLoad(bin_), kBadHandle);
  aclrtFuncHandle out = nullptr;
  EXPECT_EQ(aclrtBinaryGetFunction(bin_, "kt_record", &out), kBadHandle);
  aclrtArgsHandle a2 = nullptr;
  EXPECT_EQ(aclrtKernelArgsInit(f, &a2), kBadHandle);
  EXPECT_EQ(aclrtKernelArgsInit(g, &a2), kBadHandle);
  EXPECT_EQ(kt_launch(f, 1, s, a), kBadHandle);
  EXPECT_EQ(kt_launch(g, 1, s, a), kBadHandle);
  bin_ = nullptr;
  // The other binary's function still works, with the same buffer.
  EXPECT_EQ(kt_launch(keep, 1, s, a), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  ASSERT_EQ(rec_.count(), 1u);
  EXPECT_EQ(rec_.last().args, "abcdefgh");
  EXPECT_EQ(aclrtBinaryUnLoad(other), kOk);
  EXPECT_EQ(live_count("binaries"), 0);
}

// §9.7 "Launches already queued still run": the stream is held while the binary is unloaded.
TEST_F(KernelLoadTest, UnloadKeepsQueuedLaunches) {
  const aclrtStream s = stream();
  HoldGate gate;
  ASSERT_EQ(aclvmmLaunchKernel(s, hold_kernel, &gate), kOk);
  ASSERT_TRUE(wait_started(gate));
  const aclrtFuncHandle f = fn("kt_record");
  const uint64_t v = 0x1122334455667788ull;
  ASSERT_EQ(kt_launch(f, 9, s, kt_build_args(f, {kt_bytes(v)})), kOk);
  ASSERT_EQ(kt_launch(f, 10, s, kt_build_args(f, {kt_bytes(v)})), kOk);
  ASSERT_EQ(aclrtBinaryUnLoad(bin_), kOk);
  bin_ = nullptr;
  EXPECT_EQ(rec_.count(), 0u) << "the stream was held";
  gate.open.store(1);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  ASSERT_EQ(rec_.count(), 2u);
  EXPECT_EQ(rec_.calls()[0].blocks, 9u);
  EXPECT_EQ(rec_.calls()[1].blocks, 10u);
  EXPECT_EQ(rec_.last().args, kt_bytes(v));
}

// §11: "live"."binaries" counts loaded binaries: 0 → 2 → 1 → 0, failed loads and lookups count
// nothing.
TEST_F(KernelLoadStatsTest, LiveBinariesCountsLoadedBinaries) {
  const std::string path = temp_file("x");
  EXPECT_EQ(live_count("binaries"), 0);
  aclrtBinHandle a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &a), kOk);
  ASSERT_EQ(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &b), kOk);
  EXPECT_EQ(aclrtBinaryLoadFromFile("/nonexistent/kt.bin", nullptr, &c), kRtParam);
  EXPECT_EQ(live_count("binaries"), 2);
  ASSERT_EQ(aclrtBinaryUnLoad(a), kOk);
  EXPECT_EQ(aclrtBinaryUnLoad(a), kBadHandle);
  EXPECT_EQ(live_count("binaries"), 1);
  ASSERT_EQ(aclrtBinaryUnLoad(b), kOk);
  EXPECT_EQ(live_count("binaries"), 0);
  unlink(path.c_str());
}

// §11: binaries still loaded at aclFinalize are released: the next runtime counts none, and the
// old handles (and their functions) are dead.
TEST_F(KernelLoadStatsTest, FinalizeReleasesLoadedBinaries) {
  const std::string path = temp_file("x");
  KtRecorder rec;
  ASSERT_EQ(aclvmmRegisterKernel("kt_load_leak", kt_record_kernel, &rec), kOk);
  aclrtBinHandle a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &a), kOk);
  ASSERT_EQ(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &b), kOk);
  aclrtFuncHandle f = nullptr;
  ASSERT_EQ(aclrtBinaryGetFunction(a, "kt_load_leak", &f), kOk);
  EXPECT_EQ(live_count("binaries"), 2);
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);
  ASSERT_EQ(aclInit(nullptr), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(live_count("binaries"), 0);
  aclrtFuncHandle g = nullptr;
  EXPECT_EQ(aclrtBinaryGetFunction(a, "kt_load_leak", &g), kBadHandle);
  aclrtArgsHandle args = nullptr;
  EXPECT_EQ(aclrtKernelArgsInit(f, &args), kBadHandle);
  EXPECT_EQ(aclrtBinaryUnLoad(a), kBadHandle);
  EXPECT_EQ(aclrtBinaryUnLoad(b), kBadHandle);
  EXPECT_EQ(live_count("binaries"), 0);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_load_leak"), kOk);
  unlink(path.c_str());
}

// The child of KernelLoadLeakReport: loads binaries, leaves `leak` of them loaded, and finalizes
// (or exits without finalizing); stdout carries the runtime's log at WARNING level.
struct KtLeakRun {
  ChildResult result;
  std::string out;
};
KtLeakRun kt_leaking_child(const std::vector<std::string>& paths, bool finalize) {
  KtLeakRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  fflush(nullptr);
  settle_threads_before_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    alarm(30);
    kt_drop_inherited_runtime();
    unsetenv("ASCEND_LOG_PRINT_TO_STDOUT");
    setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1", 1);
    setenv("ASCEND_GLOBAL_LOG_LEVEL", "2", 1);
    if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) std::exit(10);
    for (const std::string& p : paths) {
      aclrtBinHandle h = nullptr;
      if (aclrtBinaryLoadFromFile(p.c_str(), nullptr, &h) != kOk) std::exit(11);
    }
    aclrtBinHandle unloaded = nullptr;  // one more, unloaded: never reported
    if (aclrtBinaryLoadFromFile(paths[0].c_str(), nullptr, &unloaded) != kOk) std::exit(12);
    if (aclrtBinaryUnLoad(unloaded) != kOk) std::exit(13);
    if (finalize) {
      aclrtResetDeviceForce(0);
      if (aclFinalize() != kOk) std::exit(14);
      if (live_count("binaries") != 0) std::exit(15);
    }
    std::exit(0);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) run.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  run.result = wait_child(pid);
  return run;
}

// WARNING lines of `out` that name `path`.
int kt_warnings_naming(const std::string& out, const std::string& path) {
  std::stringstream ss(out);
  int n = 0;
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("[WARNING]", 0) == 0 && line.find(path) != std::string::npos) ++n;
  }
  return n;
}

// §11 "loaded binaries still held at aclFinalize / exit are released and reported like the other
// kinds": one WARNING line per binary still loaded (naming its file), none for the unloaded one.
TEST(KernelLoadLeakReport, BinariesLeftLoadedAreReportedOnceAtFinalizeAndAtExit) {
  const std::string a = temp_file("a"), b = temp_file("b");
  char ra[PATH_MAX], rb[PATH_MAX];
  ASSERT_NE(realpath(a.c_str(), ra), nullptr);
  ASSERT_NE(realpath(b.c_str(), rb), nullptr);
  for (bool finalize : {true, false}) {
    SCOPED_TRACE(finalize ? "aclFinalize" : "exit without aclFinalize");
    const KtLeakRun run = kt_leaking_child({a, b, b}, finalize);
    EXPECT_EQ(run.result.signal, 0);
    ASSERT_EQ(run.result.exit_code, 0) << run.out;
    EXPECT_EQ(kt_warnings_naming(run.out, ra), 1) << run.out;
    EXPECT_EQ(kt_warnings_naming(run.out, rb), 2) << run.out;
  }
  unlink(a.c_str());
  unlink(b.c_str());
}

}  // namespace
}  // namespace aclvmm_test
