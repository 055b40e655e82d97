// aclrtKernelArgsInit / Append / Finalize (runtime-extra.md §9.3-§9.5): the checks, one buffer per
// thread, the limits, and the layout the kernel receives (8-byte-aligned offsets in append order,
// zero gaps, size = end of the last parameter; bytes copied at Append and again at launch).
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "api/kernel_lib/kernel_test_util.h"

namespace aclvmm_test {
namespace {

using KernelArgsTest = KtTest;

// The buffer a kernel receives for `params` appended in order (8-byte-aligned offsets, zero gaps).
std::string kt_expected_layout(const std::vector<std::string>& params) {
  std::string out;
  for (const std::string& p : params) {
    out.resize(round_up(out.size(), 8), '\0');
    out += p;
  }
  return out;
}

// Launches `f` with the calling thread's finalized buffer `a` and returns what kt_record saw.
KtCall kt_run_recorded(KtRecorder& rec, aclrtFuncHandle f, aclrtArgsHandle a, uint32_t blocks = 1) {
  const size_t before = rec.count();
  EXPECT_EQ(kt_launch(f, blocks, nullptr, a), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(rec.count(), before + 1);
  return rec.last();
}

// §9.3: the checks in order; a failed call leaves *argsHandle untouched.
TEST_F(KernelArgsTest, InitMisuseTableInCheckOrder) {
  const aclrtFuncHandle f = fn("kt_record");
  aclrtBinHandle other = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &other), kOk);
  const aclrtFuncHandle dead = fn("kt_record", other);
  ASSERT_EQ(aclrtBinaryUnLoad(other), kOk);
  const aclrtStream s = stream();
  int forged_storage = 0;
  void* const forged = &forged_storage;
  int sentinel = 0;
  aclrtArgsHandle out = &sentinel;
  struct Row {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  };
  const Row rows[] = {
      {"both NULL", [] { return aclrtKernelArgsInit(nullptr, nullptr); }, kParam},
      {"funcHandle NULL", [&] { return aclrtKernelArgsInit(nullptr, &out); }, kParam},
      {"argsHandle NULL", [&] { return aclrtKernelArgsInit(f, nullptr); }, kParam},
      {"argsHandle NULL, forged function", [&] { return aclrtKernelArgsInit(forged, nullptr); }, kParam},
      {"forged function", [&] { return aclrtKernelArgsInit(forged, &out); }, kBadHandle},
      {"function of an unloaded binary", [&] { return aclrtKernelArgsInit(dead, &out); }, kBadHandle},
      {"a binary as function", [&] { return aclrtKernelArgsInit(bin_, &out); }, kBadHandle},
      {"a stream as function", [&] { return aclrtKernelArgsInit(s, &out); }, kBadHandle},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.call(), r.expected);
    EXPECT_NE(recent_msg(), "");
    EXPECT_EQ(out, static_cast<void*>(&sentinel));
  }
  // The parameter buffer handle is not a function either.
  aclrtArgsHandle a = kt_build_args(f, {"x"});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(aclrtKernelArgsInit(a, &out), kBadHandle);
}

// §9.3 "one buffer per thread": every Init on a thread returns the same value (whatever the
// function), another thread gets another one, and Init needs no context.
TEST_F(KernelArgsTest, OneBufferPerThread) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtFuncHandle g = fn("kt_add");
  aclrtArgsHandle a1 = nullptr, a2 = nullptr, a3 = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &a1), kOk);
  ASSERT_EQ(aclrtKernelArgsInit(f, &a2), kOk);
  ASSERT_EQ(aclrtKernelArgsInit(g, &a3), kOk);
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(a1, a3);
  aclrtArgsHandle t1 = nullptr, t2 = nullptr;
  EXPECT_EQ(kt_on_fresh_thread([&] {
              aclError rc = aclrtKernelArgsInit(f, &t1);
              return rc != kOk ? rc : aclrtKernelArgsInit(g, &t2);
            }),
            kOk);
  EXPECT_NE(t1, nullptr);
  EXPECT_EQ(t1, t2);
  EXPECT_NE(t1, a1) << "another thread has its own buffer";
  // Two live threads at once have different buffers as well.
  std::atomic<int> ready{0}, done{0};
  aclrtArgsHandle h[2] = {nullptr, nullptr};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      (void)aclrtKernelArgsInit(f, &h[i]);
      ready.fetch_add(1);
      while (done.load() == 0) std::this_thread::yield();
    });
  }
  while (ready.load() < 2) std::this_thread::yield();
  done.store(1);
  for (auto& t : threads) t.join();
  EXPECT_NE(h[0], nullptr);
  EXPECT_NE(h[0], h[1]);
  EXPECT_NE(h[0], a1);
  EXPECT_NE(h[1], a1);
  aclrtArgsHandle again = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &again), kOk);
  EXPECT_EQ(again, a1) << "the main thread's buffer is still its own";
}

// §9.3 "discards what the previous one built", also a finalized buffer: Append works again and the
// kernel sees only the new parameters.
TEST_F(KernelArgsTest, InitDiscardsThePreviousBuffer) {
  const aclrtFuncHandle f = fn("kt_record");
  aclrtArgsHandle a = kt_build_args(f, {std::string(100, 'a'), "bbbb", "cc"});
  aclrtParamHandle p = nullptr;
  char x = 'x';
  EXPECT_EQ(aclrtKernelArgsAppend(a, &x, 1, &p), kNotSupported);
  aclrtArgsHandle b = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &b), kOk);
  EXPECT_EQ(b, a);
  uint32_t v = 0xa1b2c3d4;
  ASSERT_EQ(aclrtKernelArgsAppend(b, &v, sizeof v, &p), kOk);
  // Not finalized yet: the launch refuses it (§9.6 check 3) ...
  EXPECT_EQ(kt_launch(f, 1, nullptr, b), kRtParam);
  ASSERT_EQ(aclrtKernelArgsFinalize(b), kOk);
  const KtCall c = kt_run_recorded(rec_, f, b);
  EXPECT_EQ(c.args, kt_bytes(v)) << "size 4: only the new parameter";
  // ... and an Init then Finalize with nothing appended is empty (107000 at launch).
  ASSERT_EQ(aclrtKernelArgsInit(f, &b), kOk);
  ASSERT_EQ(aclrtKernelArgsFinalize(b), kOk);
  EXPECT_EQ(kt_launch(f, 1, nullptr, b), kRtParam);
}

// §9.4: every misuse in the order of the checks with its exact code; a failed call leaves
// *paramHandle untouched and the buffer as it was.
TEST_F(KernelArgsTest, AppendMisuseTableInCheckOrder) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtStream s = stream();
  int forged_storage = 0;
  void* const forged = &forged_storage;
  char byte = 'q';
  uint64_t word = 0x0102030405060708ull;
  int sentinel = 0;
  aclrtParamHandle out = &sentinel;
  aclrtArgsHandle a = nullptr;
  // The states the rows need, made just before each row.
  auto open = [&] { a = kt_build_args(f, {kt_bytes(word)}, false); };
  auto finalized = [&] { a = kt_build_args(f, {kt_bytes(word)}, true); };
  auto full = [&](bool fin) {
    a = kt_build_args(f, std::vector<std::string>(128, std::string(1, 'p')), fin);
  };
  struct Row {
    const char* name;
    std::function<void()> setup;
    std::function<aclError()> call;
    aclError expected;
  };
  const Row rows[] = {
      {"all NULL / 0", open, [&] { return aclrtKernelArgsAppend(nullptr, nullptr, 0, nullptr); }, kParam},
      {"argsHandle NULL", open, [&] { return aclrtKernelArgsAppend(nullptr, &byte, 1, &out); }, kParam},
      {"param NULL", open, [&] { return aclrtKernelArgsAppend(a, nullptr, 1, &out); }, kParam},
      {"paramSize 0", open, [&] { return aclrtKernelArgsAppend(a, &byte, 0, &out); }, kParam},
      {"paramHandle NULL", open, [&] { return aclrtKernelArgsAppend(a, &byte, 1, nullptr); }, kParam},
      {"param NULL on a forged buffer", open, [&] { return aclrtKernelArgsAppend(forged, nullptr, 1, &out); },
       kParam},
      {"paramSize 0 on a finalized buffer", finalized, [&] { return aclrtKernelArgsAppend(a, &byte, 0, &out); },
       kParam},
      {"paramHandle NULL on a full buffer", [&] { full(false); },
       [&] { return aclrtKernelArgsAppend(a, &byte, 1, nullptr); }, kParam},
      {"forged buffer", open, [&] { return aclrtKernelArgsAppend(forged, &byte, 1, &out); }, kBadHandle},
      {"a function as buffer", open, [&] { return aclrtKernelArgsAppend(f, &byte, 1, &out); }, kBadHandle},
      {"a binary as buffer", open, [&] { return aclrtKernelArgsAppend(bin_, &byte, 1, &out); }, kBadHandle},
      {"a stream as buffer", open, [&] { return aclrtKernelArgsAppend(s, &byte, 1, &out); }, kBadHandle},
      {"finalized", finalized, [&] { return aclrtKernelArgsAppend(a, &byte, 1, &out); }, kNotSupported},
      {"finalized and full (finalized is checked first)", [&] { full(true); },
       [&] { return aclrtKernelArgsAppend(a, &byte, 1, &out); }, kNotSupported},
      {"finalized, parameter too large", finalized,
       [&] { return aclrtKernelArgsAppend(a, &byte, 70000, &out); }, kNotSupported},
      {"129th parameter", [&] { full(false); }, [&] { return aclrtKernelArgsAppend(a, &byte, 1, &out); },
       kRtParam},
      {"parameter of 64 KiB + 1", open, [&] { return aclrtKernelArgsAppend(a, &byte, 65537 - 8, &out); },
       kRtParam},
      {"parameter of SIZE_MAX bytes", open, [&] { return aclrtKernelArgsAppend(a, &byte, SIZE_MAX, &out); },
       kRtParam},
      {"parameter of SIZE_MAX - 7 bytes at offset 8 (wraps to 0)", open,
       [&] { return aclrtKernelArgsAppend(a, &byte, SIZE_MAX - 7, &out); }, kRtParam},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    r.setup();
    EXPECT_EQ(r.call(), r.expected);
    EXPECT_NE(recent_msg(), "");
    EXPECT_EQ(out, static_cast<void*>(&sentinel)) << "a failed call wrote the parameter handle";
  }
  // After all that, the last row's buffer still holds exactly its one parameter.
  ASSERT_EQ(aclrtKernelArgsFinalize(a), kOk);
  EXPECT_EQ(kt_run_recorded(rec_, f, a).args, kt_bytes(word));
}

// §9.4 limits: 128 parameters fit (the kernel gets all of them at offsets 0, 8, ... 1016), the
// 129th is refused with 107000 and changes nothing.
TEST_F(KernelArgsTest, AtMost128Parameters) {
  const aclrtFuncHandle f = fn("kt_record");
  aclrtArgsHandle a = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &a), kOk);
  std::vector<std::string> params;
  for (int i = 0; i < 128; ++i) {
    unsigned char v = static_cast<unsigned char>(i + 1);
    aclrtParamHandle p = nullptr;
    ASSERT_EQ(aclrtKernelArgsAppend(a, &v, 1, &p), kOk) << "parameter " << i;
    params.push_back(std::string(1, static_cast<char>(v)));
  }
  unsigned char extra = 0xee;
  aclrtParamHandle p = nullptr;
  EXPECT_EQ(aclrtKernelArgsAppend(a, &extra, 1, &p), kRtParam);
  EXPECT_EQ(aclrtKernelArgsAppend(a, &extra, 1, &p), kRtParam) << "still full";
  ASSERT_EQ(aclrtKernelArgsFinalize(a), kOk);
  const KtCall c = kt_run_recorded(rec_, f, a);
  EXPECT_EQ(c.args.size(), 127u * 8 + 1);
  EXPECT_EQ(c.args, kt_expected_layout(params));
}

// §9.4 "the parameter would end beyond 64 KiB → 107000": the end counts after alignment; a refused
// parameter leaves the buffer as it was.
TEST_F(KernelArgsTest, ParametersEndWithin64KiB) {
  const aclrtFuncHandle f = fn("kt_record");
  struct Row {
    const char* name;
    std::vector<size_t> sizes;  // appended in order, all accepted but the last when !fits
    bool fits;
  } rows[] = {
      {"one parameter of 64 KiB", {65536}, true},
      {"one parameter of 64 KiB + 1", {65537}, false},
      {"4 bytes, then 65528 bytes at offset 8 (ends at 64 KiB)", {4, 65528}, true},
      {"4 bytes, then 65529 bytes at offset 8 (65533 if packed)", {4, 65529}, false},
      {"1 byte, then 64 KiB", {1, 65536}, false},
      {"64 KiB - 8, then 8 bytes", {65528, 8}, true},
      {"64 KiB - 8, then 9 bytes", {65528, 9}, false},
      {"64 KiB - 9, then 1 byte at offset 65528", {65527, 1}, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    aclrtArgsHandle a = nullptr;
    ASSERT_EQ(aclrtKernelArgsInit(f, &a), kOk);
    std::vector<std::string> kept;
    for (size_t i = 0; i < r.sizes.size(); ++i) {
      std::string bytes = pattern(r.sizes[i], static_cast<unsigned>(i + 3));
      aclrtParamHandle p = nullptr;
      const bool last = i + 1 == r.sizes.size();
      const aclError want = (!last || r.fits) ? kOk : kRtParam;
      ASSERT_EQ(aclrtKernelArgsAppend(a, &bytes[0], bytes.size(), &p), want) << "parameter " << i;
      if (want == kOk) kept.push_back(bytes);
    }
    ASSERT_EQ(aclrtKernelArgsFinalize(a), kOk);
    if (kept.empty()) {
      EXPECT_EQ(kt_launch(f, 1, nullptr, a), kRtParam) << "still empty";
      continue;
    }
    const KtCall c = kt_run_recorded(rec_, f, a);
    EXPECT_TRUE(c.args == kt_expected_layout(kept)) << "size " << c.args.size();
  }
}

// §9.5: the checks in order (handle before context), finalizing twice is harmless, Append after
// Finalize is 207000 until the next Init.
TEST_F(KernelArgsTest, FinalizeMisuseTableInCheckOrder) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtStream s = stream();
  int forged_storage = 0;
  void* const forged = &forged_storage;
  // A buffer of a thread without context: Init and Append work there, Finalize does not.
  aclError fresh_init = -1, fresh_append = -1, fresh_append_after = -1;
  std::string fresh_msg;
  auto on_thread_without_context = [&] {
    aclrtArgsHandle a = nullptr;
    aclrtParamHandle p = nullptr;
    uint32_t v = 1;
    fresh_init = aclrtKernelArgsInit(f, &a);
    fresh_append = aclrtKernelArgsAppend(a, &v, sizeof v, &p);
    const aclError rc = aclrtKernelArgsFinalize(a);
    fresh_msg = recent_msg();
    fresh_append_after = aclrtKernelArgsAppend(a, &v, sizeof v, &p);  // not finalized
    return rc;
  };
  const aclrtArgsHandle a = kt_build_args(f, {"abcd"}, false);
  struct Row {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
    bool fresh_thread;
    bool reads_message = false;  // the call takes its message itself
  };
  const Row rows[] = {
      {"NULL", [] { return aclrtKernelArgsFinalize(nullptr); }, kParam, false},
      {"NULL without context", [] { return aclrtKernelArgsFinalize(nullptr); }, kParam, true},
      {"forged", [&] { return aclrtKernelArgsFinalize(forged); }, kBadHandle, false},
      {"a function", [&] { return aclrtKernelArgsFinalize(f); }, kBadHandle, false},
      {"a binary", [&] { return aclrtKernelArgsFinalize(bin_); }, kBadHandle, false},
      {"a stream", [&] { return aclrtKernelArgsFinalize(s); }, kBadHandle, false},
      {"forged without context", [&] { return aclrtKernelArgsFinalize(forged); }, kBadHandle, true},
      {"no context", on_thread_without_context, kNoContext, true, true},
      {"valid", [&] { return aclrtKernelArgsFinalize(a); }, kOk, false},
      {"again", [&] { return aclrtKernelArgsFinalize(a); }, kOk, false},
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
    if (r.expected != kOk && !r.reads_message) {
      EXPECT_NE(msg, "");
    }
  }
  EXPECT_NE(fresh_msg, "");
  EXPECT_EQ(fresh_init, kOk);
  EXPECT_EQ(fresh_append, kOk);
  EXPECT_EQ(fresh_append_after, kOk) << "a refused Finalize does not finalize";
  // Finalized: Append is 207000 until the next Init.
  char c = 'c';
  aclrtParamHandle p = nullptr;
  EXPECT_EQ(aclrtKernelArgsAppend(a, &c, 1, &p), kNotSupported);
  EXPECT_EQ(kt_run_recorded(rec_, f, a).args, "abcd") << "the refused Append changed nothing";
  aclrtArgsHandle again = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &again), kOk);
  EXPECT_EQ(aclrtKernelArgsAppend(again, &c, 1, &p), kOk);
  ASSERT_EQ(aclrtKernelArgsFinalize(again), kOk);
  EXPECT_EQ(kt_run_recorded(rec_, f, again).args, "c");
}

// §9.4 layout: 8-byte-aligned offsets in append order, the first at 0, zero gaps (also where the
// thread's previous buffer had other bytes), size = the end of the last parameter.
TEST_F(KernelArgsTest, LayoutIsAlignedInAppendOrderWithZeroGaps) {
  const aclrtFuncHandle f = fn("kt_record");
  // Dirty the thread's buffer first: the gaps below must not show these bytes.
  kt_build_args(f, {std::string(200, '\xff')});
  struct Row {
    const char* name;
    std::vector<std::string> params;
    size_t size;  // what the kernel must get
  };
  const uint32_t four = 0x04030201;
  const uint64_t eight = 0x1817161514131211ull;
  const Row rows[] = {
      {"4 then 8 bytes: second at 8, size 16", {kt_bytes(four), kt_bytes(eight)}, 16},
      {"the samples' three pointers: 0, 8, 16, size 24",
       {kt_bytes(eight), kt_bytes(eight + 1), kt_bytes(eight + 2)}, 24},
      {"1, 3, 8, 5, 16, 2 bytes: 0, 8, 16, 24, 32, 48, size 50",
       {"A", "BCD", "EFGHIJKL", "MNOPQ", "RSTUVWXYZ0123456", "78"}, 50},
      {"8 then 4 bytes: size 12 (no padding after the last)", {kt_bytes(eight), kt_bytes(four)}, 12},
      {"a single byte: size 1", {"z"}, 1},
      {"zero bytes in parameters are kept", {std::string("\0\0\x01", 3), std::string(9, '\0')}, 17},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const KtCall c = kt_run_recorded(rec_, f, kt_build_args(f, r.params));
    EXPECT_EQ(c.args.size(), r.size);
    EXPECT_EQ(c.args, kt_expected_layout(r.params));
    kt_build_args(f, {std::string(200, '\xff')});  // dirty again
  }
  // The first row spelled out: bytes 4..7 are zero, the 8-byte parameter starts at 8.
  const KtCall c = kt_run_recorded(rec_, f, kt_build_args(f, {kt_bytes(four), kt_bytes(eight)}));
  ASSERT_EQ(c.args.size(), 16u);
  uint32_t first = 0;
  uint64_t second = 0;
  std::memcpy(&first, c.args.data(), 4);
  std::memcpy(&second, c.args.data() + 8, 8);
  EXPECT_EQ(first, four);
  EXPECT_EQ(c.args.substr(4, 4), std::string(4, '\0'));
  EXPECT_EQ(second, eight);
}

// §9.4 "copies paramSize bytes from param now": changing the source after Append (before Finalize
// and launch) does not matter.
TEST_F(KernelArgsTest, BytesAreCopiedAtAppend) {
  const aclrtFuncHandle f = fn("kt_record");
  aclrtArgsHandle a = nullptr;
  ASSERT_EQ(aclrtKernelArgsInit(f, &a), kOk);
  uint64_t v = 0x1111111111111111ull;
  std::string big(1000, 'b');
  aclrtParamHandle p1 = nullptr, p2 = nullptr;
  ASSERT_EQ(aclrtKernelArgsAppend(a, &v, sizeof v, &p1), kOk);
  ASSERT_EQ(aclrtKernelArgsAppend(a, &big[0], big.size(), &p2), kOk);
  v = 0x2222222222222222ull;
  big.assign(1000, 'X');
  ASSERT_EQ(aclrtKernelArgsFinalize(a), kOk);
  v = 0x3333333333333333ull;
  const KtCall c = kt_run_recorded(rec_, f, a);
  EXPECT_EQ(c.args, kt_bytes(uint64_t{0x1111111111111111ull}) + std::string(1000, 'b'));
  EXPECT_NE(p1, nullptr);
  EXPECT_NE(p2, nullptr);
  EXPECT_NE(p1, p2) << "each parameter has its own handle";
}

// §9.6 "copies the buffer (so the thread may build the next one at once)": with the stream held,
// a launch, then a new buffer built on the same thread and launched again: each kernel sees its
// own bytes and blocks.
TEST_F(KernelArgsTest, BytesAreCopiedAtLaunch) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtStream s = stream();
  HoldGate gate;
  ASSERT_EQ(aclvmmLaunchKernel(s, hold_kernel, &gate), kOk);
  ASSERT_TRUE(wait_started(gate));
  const uint64_t first = 0xaaaaaaaaaaaaaaaaull, second = 0x5555;
  aclrtArgsHandle a = kt_build_args(f, {kt_bytes(first), "tail"});
  ASSERT_EQ(kt_launch(f, 2, s, a), kOk);
  // Re-Init and refill while the first launch is still queued.
  aclrtArgsHandle b = kt_build_args(f, {kt_bytes(second)});
  ASSERT_EQ(b, a);
  ASSERT_EQ(kt_launch(f, 3, s, b), kOk);
  // And leave the thread's buffer changed (not finalized) too.
  kt_build_args(f, {std::string(64, '\x7f')}, false);
  EXPECT_EQ(rec_.count(), 0u);
  gate.open.store(1);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  const std::vector<KtCall> calls = rec_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].blocks, 2u);
  EXPECT_EQ(calls[0].args, kt_expected_layout({kt_bytes(first), "tail"}));
  EXPECT_EQ(calls[1].blocks, 3u);
  EXPECT_EQ(calls[1].args, kt_bytes(second));
}

}  // namespace
}  // namespace aclvmm_test
