// Shared helpers of the kernel-loading tests (tests/api/kernel_*_test.cpp; runtime-extra.md §9):
// the codes §9 adds, a kernel that records what each launch handed it, an add kernel shaped like
// the vendor sample's add_custom, and a fixture that holds a loaded binary and undoes what a test
// registered. Every name here starts with Kt / kt_ / KT_ (the API tests are unity builds).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/fork_test_util.h"  // HoldGate, hold_kernel, wait_started, run_in_child_for
#include "api/stats_json_util.h"
#include "api/test_env.h"
#include "api/test_util.h"

namespace aclvmm_test {

constexpr aclError kKtKernelNotFound = 100029;     // ACL_ERROR_KERNEL_NOT_FOUND
constexpr aclError kKtAlreadyRegistered = 100031;  // ACL_ERROR_KERNEL_ALREADY_REGISTERED
constexpr aclError kKtStreamContext = 107003;      // ACL_ERROR_RT_STREAM_CONTEXT

// The text §9.2 prescribes for a name nobody registered.
inline std::string kt_not_registered_message(const std::string& name) {
  return "no emulated kernel is registered under the name \"" + name +
         "\"; register one with aclvmmRegisterKernel or ACLVMM_KERNEL_LIBS";
}

// In a forked child: a failed check prints itself and becomes the exit code.
#define KT_CHILD_CHECK(cond, code)                                                           \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "child check %d failed: %s (line %d)\n", code, #cond, __LINE__); \
      return code;                                                                           \
    }                                                                                        \
  } while (0)

// In a forked child of the test process: drops whatever runtime the child inherited, so that the
// next aclInit reads the environment afresh.
inline void kt_drop_inherited_runtime() {
  (void)aclInit(nullptr);
  while (aclFinalize() == kOk) {
  }
  (void)aclGetRecentErrMsg();
}

// One call of kt_record_kernel.
struct KtCall {
  uint32_t blocks = 0;
  std::string args;  // the parameter buffer, argsSize bytes
  void* user_data = nullptr;
  int32_t device = -2;
  std::thread::id thread;
};

// What kt_record_kernel saw; registered as the kernel's userData.
class KtRecorder {
 public:
  void add(KtCall c) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(c));
  }
  std::vector<KtCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.size();
  }
  // The last call (a default KtCall when there was none).
  KtCall last() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.empty() ? KtCall() : calls_.back();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<KtCall> calls_;
};

inline void kt_record_kernel(aclvmmKernelContext* ctx, uint32_t numBlocks, const void* args,
                             size_t argsSize, void* userData) {
  KtCall c;
  c.blocks = numBlocks;
  if (args != nullptr && argsSize != 0) c.args.assign(static_cast<const char*>(args), argsSize);
  c.user_data = userData;
  c.device = aclvmmKernelDeviceId(ctx);
  c.thread = std::this_thread::get_id();
  static_cast<KtRecorder*>(userData)->add(std::move(c));
}

// The vendor sample's add_custom over int32 elements: z[i] = x[i] + y[i] for numBlocks * perBlock
// elements, where x, y, z are the three 8-byte device pointers at offsets 0, 8, 16 of the
// parameter buffer and perBlock comes from the registered userData (a KtAddKernel).
struct KtAddKernel {
  uint32_t per_block = 0;
  std::atomic<int> calls{0};
  std::atomic<int> read_rc{-1};
  std::atomic<int> write_rc{-1};
  std::atomic<size_t> args_size{0};
};
inline void kt_add_kernel(aclvmmKernelContext* ctx, uint32_t numBlocks, const void* args,
                          size_t argsSize, void* userData) {
  auto* k = static_cast<KtAddKernel*>(userData);
  k->args_size = argsSize;
  k->calls.fetch_add(1);
  if (argsSize < 3 * sizeof(uint64_t)) return;
  uint64_t p[3];
  std::memcpy(p, args, sizeof p);
  const size_t n = size_t(numBlocks) * k->per_block;
  std::vector<uint32_t> x(n), y(n);
  aclError rc = aclvmmKernelRead(ctx, x.data(), reinterpret_cast<const void*>(p[0]), n * 4);
  if (rc == kOk) rc = aclvmmKernelRead(ctx, y.data(), reinterpret_cast<const void*>(p[1]), n * 4);
  k->read_rc = rc;
  if (rc != kOk) return;
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
  k->write_rc = aclvmmKernelWrite(ctx, reinterpret_cast<void*>(p[2]), x.data(), n * 4);
}

// `n` uint32 values start, start + step, ... as bytes.
inline std::string kt_u32s(size_t n, uint32_t start, uint32_t step) {
  std::string s(n * 4, '\0');
  for (size_t i = 0; i < n; ++i) {
    const uint32_t v = start + static_cast<uint32_t>(i) * step;
    std::memcpy(&s[i * 4], &v, 4);
  }
  return s;
}

// A parameter's bytes.
template <typename T>
std::string kt_bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// Runs `call` on a new thread, which has no current context; returns its code and, in *msg, the
// message it left for aclGetRecentErrMsg.
inline aclError kt_on_fresh_thread(const std::function<aclError()>& call, std::string* msg = nullptr) {
  aclError rc = -1;
  std::string m;
  std::thread t([&] {
    rc = call();
    m = recent_msg();
  });
  t.join();
  if (msg) *msg = m;
  return rc;
}

// aclrtKernelArgsInit + one Append per parameter (+ Finalize) on the calling thread's buffer;
// nullptr (and a test failure) when a step fails.
inline aclrtArgsHandle kt_build_args(aclrtFuncHandle f, const std::vector<std::string>& params,
                                     bool finalize = true) {
  aclrtArgsHandle a = nullptr;
  EXPECT_EQ(aclrtKernelArgsInit(f, &a), kOk);
  if (a == nullptr) return nullptr;
  for (const std::string& p : params) {
    std::string copy = p;
    aclrtParamHandle ph = nullptr;
    EXPECT_EQ(aclrtKernelArgsAppend(a, &copy[0], copy.size(), &ph), kOk) << p.size() << " bytes";
  }
  if (finalize) {
    EXPECT_EQ(aclrtKernelArgsFinalize(a), kOk);
  }
  return a;
}

// aclrtLaunchKernelWithConfig without cfg and reserve.
inline aclError kt_launch(aclrtFuncHandle f, uint32_t blocks, aclrtStream s, aclrtArgsHandle a) {
  return aclrtLaunchKernelWithConfig(f, blocks, s, nullptr, a, nullptr);
}

// AllocTest with one loaded binary (bin_), the kernels "kt_record" (recording into rec_) and
// "kt_add" (add_, 2048 elements per block) registered, and streams made by stream(). TearDown waits
// for device 0's streams, destroys the streams, unregisters every name the test registered through
// reg() and unloads bin_ (if the test did not).
class KtTest : public AllocTest {
 protected:
  void SetUp() override {
    AllocTest::SetUp();
    if (HasFatalFailure()) return;
    path_ = temp_file("an opaque kernel binary: aclvmm reads it, never parses it");
    ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &bin_), kOk);
    ASSERT_NE(bin_, nullptr);
    add_.per_block = 2048;
    reg("kt_record", kt_record_kernel, &rec_);
    reg("kt_add", kt_add_kernel, &add_);
  }
  void TearDown() override {
    (void)aclrtSetDevice(0);
    (void)aclrtSynchronizeDevice();  // nothing queued may outlive the test's objects
    for (aclrtStream s : streams_) EXPECT_EQ(aclrtDestroyStream(s), kOk);
    for (const std::string& n : names_) (void)aclvmmUnregisterKernel(n.c_str());
    if (bin_) (void)aclrtBinaryUnLoad(bin_);
    if (!path_.empty()) unlink(path_.c_str());
    (void)aclGetRecentErrMsg();
    AllocTest::TearDown();
  }
  // Registers func under name for this test only.
  void reg(const std::string& name, aclvmmNamedKernelFunc func, void* user) {
    ASSERT_EQ(aclvmmRegisterKernel(name.c_str(), func, user), kOk) << name;
    names_.push_back(name);
  }
  // The function `name` of `bin` (bin_ by default); nullptr and a test failure when it fails.
  aclrtFuncHandle fn(const std::string& name, aclrtBinHandle bin = nullptr) {
    aclrtFuncHandle f = nullptr;
    EXPECT_EQ(aclrtBinaryGetFunction(bin ? bin : bin_, name.c_str(), &f), kOk) << name;
    return f;
  }
  aclrtStream stream() {
    aclrtStream s = nullptr;
    EXPECT_EQ(aclrtCreateStream(&s), kOk);
    if (s) streams_.push_back(s);
    return s;
  }
  // A stream the test destroys itself (not destroyed again at TearDown).
  void forget_stream(aclrtStream s) {
    for (auto it = streams_.begin(); it != streams_.end(); ++it) {
      if (*it == s) {
        streams_.erase(it);
        return;
      }
    }
  }

  std::string path_;
  aclrtBinHandle bin_ = nullptr;
  KtRecorder rec_;
  KtAddKernel add_;

 private:
  std::vector<aclrtStream> streams_;
  std::vector<std::string> names_;
};

}  // namespace aclvmm_test
