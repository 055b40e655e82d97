// aclrtLaunchKernelWithConfig (runtime-extra.md §9.6, §9.8): the checks in their order, the
// configuration attributes, and what runs: the function registered under the name when the stream
// reaches the kernel, once, on the stream's worker as the stream's (user) device, with numBlocks,
// the parameter buffer and its userData; its memory accesses go through the device MMU.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "api/kernel_lib/kernel_test_util.h"

namespace aclvmm_test {
namespace {

using KernelLaunchTest = KtTest;
using KernelLaunchDeviceTest = AclTest;

// A launch attribute with any int as its id (store_raw) and a zero value.
aclrtLaunchKernelAttr kt_attr(int id) {
  aclrtLaunchKernelAttr a;
  std::memset(&a, 0, sizeof a);
  store_raw(a.id, id);
  return a;
}
aclrtLaunchKernelAttr kt_attr_u8(int id, uint8_t v) {
  aclrtLaunchKernelAttr a = kt_attr(id);
  switch (id) {
    case ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE: a.value.schemMode = v; break;
    case ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH: a.value.isBlockTaskPrefetch = v; break;
    case ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP: a.value.isDataDump = v; break;
    case ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING: a.value.enableProfiling = v; break;
    default: a.value.rsv[0] = v;
  }
  return a;
}
aclrtLaunchKernelAttr kt_attr_timeout(uint16_t seconds) {
  aclrtLaunchKernelAttr a = kt_attr(ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT);
  a.value.timeout = seconds;
  return a;
}
aclrtLaunchKernelAttr kt_attr_timeout_us(uint32_t low, uint32_t high) {
  aclrtLaunchKernelAttr a = kt_attr(ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US);
  a.value.timeoutUs.timeoutLow = low;
  a.value.timeoutUs.timeoutHigh = high;
  return a;
}

// The objects of the misuse table: streams of the current context, of a second context of
// device 0 and of device 1's context, a destroyed one, and the kernel functions.
struct KtLaunchWorld {
  aclrtContext primary = nullptr, second = nullptr;
  aclrtStream own = nullptr, dead = nullptr, in_second = nullptr, on_device1 = nullptr;
};

// §9.6: every misuse in the order of the checks with its exact code. Rows that break two rules
// show which check comes first; rows marked "without context" run on a thread with no context.
// No failed launch queues anything.
TEST_F(KernelLaunchTest, MisuseTableInCheckOrder) {
  KtLaunchWorld w;
  ASSERT_EQ(aclrtGetCurrentContext(&w.primary), kOk);
  w.own = stream();
  ASSERT_EQ(aclrtCreateStream(&w.dead), kOk);
  ASSERT_EQ(aclrtDestroyStream(w.dead), kOk);
  ASSERT_EQ(aclrtCreateContext(&w.second, 0), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(w.second), kOk);
  ASSERT_EQ(aclrtCreateStream(&w.in_second), kOk);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  ASSERT_EQ(aclrtCreateStream(&w.on_device1), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(w.primary), kOk);

  const aclrtFuncHandle f = fn("kt_record");  // loaded on device 0 only
  KtRecorder gone_rec;
  reg("kt_launch_gone", kt_record_kernel, &gone_rec);
  const aclrtFuncHandle gone = fn("kt_launch_gone");
  ASSERT_EQ(aclvmmUnregisterKernel("kt_launch_gone"), kOk);
  aclrtBinHandle other = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &other), kOk);
  const aclrtFuncHandle dead_fn = fn("kt_record", other);
  ASSERT_EQ(aclrtBinaryUnLoad(other), kOk);
  int forged_storage = 0, reserve_storage = 0;
  void* const forged = &forged_storage;
  void* const reserve = &reserve_storage;

  aclrtArgsHandle a = nullptr;
  auto finalized = [&] { a = kt_build_args(f, {"12345678"}); };
  auto open = [&] { a = kt_build_args(f, {"12345678"}, false); };
  auto empty = [&] { a = kt_build_args(f, {}); };
  aclrtLaunchKernelAttr timeout = kt_attr_timeout(5);
  aclrtLaunchKernelAttr bad_cfg_attrs[] = {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 2)};
  aclrtLaunchKernelCfg bad_cfg{bad_cfg_attrs, 1};
  auto launch = [&](aclrtFuncHandle fh, uint32_t blocks, aclrtStream s, aclrtLaunchKernelCfg* cfg,
                    void* res) { return aclrtLaunchKernelWithConfig(fh, blocks, s, cfg, a, res); };

  struct Row {
    std::string name;
    std::function<void()> setup;
    std::function<aclError()> call;
    aclError expected;
    bool fresh_thread;
  };
  std::vector<Row> rows = {
      // 1. ACL-layer checks
      {"func NULL, numBlocks 0, args NULL, reserve set", finalized,
       [&] { return aclrtLaunchKernelWithConfig(nullptr, 0, nullptr, nullptr, nullptr, reserve); }, kParam,
       false},
      {"func NULL", finalized, [&] { return launch(nullptr, 1, w.own, nullptr, nullptr); }, kParam, false},
      {"numBlocks 0", finalized, [&] { return launch(f, 0, w.own, nullptr, nullptr); }, kParam, false},
      {"numBlocks 0, forged func", finalized, [&] { return launch(forged, 0, w.own, nullptr, nullptr); },
       kParam, false},
      {"args NULL", finalized,
       [&] { return aclrtLaunchKernelWithConfig(f, 1, w.own, nullptr, nullptr, nullptr); }, kParam, false},
      {"args NULL, forged func, destroyed stream", finalized,
       [&] { return aclrtLaunchKernelWithConfig(forged, 1, w.dead, nullptr, nullptr, nullptr); }, kParam,
       false},
      {"reserve set", finalized, [&] { return launch(f, 1, w.own, nullptr, reserve); }, kParam, false},
      {"reserve set, forged func", finalized, [&] { return launch(forged, 1, w.own, nullptr, reserve); },
       kParam, false},
      {"reserve set, not finalized, bad cfg", open, [&] { return launch(f, 1, w.own, &bad_cfg, reserve); },
       kParam, false},
      {"reserve set, without context", finalized, [&] { return launch(f, 1, nullptr, nullptr, reserve); },
       kParam, true},
      // 2. handles
      {"forged func", finalized, [&] { return launch(forged, 1, w.own, nullptr, nullptr); }, kBadHandle, false},
      {"func of an unloaded binary", finalized, [&] { return launch(dead_fn, 1, w.own, nullptr, nullptr); },
       kBadHandle, false},
      {"a binary as func", finalized, [&] { return launch(bin_, 1, w.own, nullptr, nullptr); }, kBadHandle,
       false},
      {"a stream as func", finalized, [&] { return launch(w.own, 1, w.own, nullptr, nullptr); }, kBadHandle,
       false},
      {"forged func, not finalized", open, [&] { return launch(forged, 1, w.own, nullptr, nullptr); },
       kBadHandle, false},
      {"forged func, without context", finalized, [&] { return launch(forged, 1, nullptr, nullptr, nullptr); },
       kBadHandle, true},
      {"forged args", finalized,
       [&] { return aclrtLaunchKernelWithConfig(f, 1, w.own, nullptr, forged, nullptr); }, kBadHandle, false},
      {"a function as args", finalized,
       [&] { return aclrtLaunchKernelWithConfig(f, 1, w.own, nullptr, f, nullptr); }, kBadHandle, false},
      {"a stream as args", finalized,
       [&] { return aclrtLaunchKernelWithConfig(f, 1, w.own, nullptr, w.own, nullptr); }, kBadHandle, false},
      {"forged args, bad cfg", finalized,
       [&] { return aclrtLaunchKernelWithConfig(f, 1, w.own, &bad_cfg, forged, nullptr); }, kBadHandle, false},
      {"destroyed stream", finalized, [&] { return launch(f, 1, w.dead, nullptr, nullptr); }, kBadHandle, false},
      {"forged stream", finalized, [&] { return launch(f, 1, forged, nullptr, nullptr); }, kBadHandle, false},
      {"a binary as stream", finalized, [&] { return launch(f, 1, bin_, nullptr, nullptr); }, kBadHandle, false},
      {"a function as stream", finalized, [&] { return launch(f, 1, f, nullptr, nullptr); }, kBadHandle, false},
      {"destroyed stream, not finalized", open, [&] { return launch(f, 1, w.dead, nullptr, nullptr); },
       kBadHandle, false},
      {"destroyed stream, without context", finalized, [&] { return launch(f, 1, w.dead, nullptr, nullptr); },
       kBadHandle, true},
      // 3. the buffer
      {"not finalized", open, [&] { return launch(f, 1, w.own, nullptr, nullptr); }, kRtParam, false},
      {"not finalized, without context", open, [&] { return launch(f, 1, nullptr, nullptr, nullptr); },
       kRtParam, true},
      {"not finalized, stream of another context", open,
       [&] { return launch(f, 1, w.in_second, nullptr, nullptr); }, kRtParam, false},
      {"empty", empty, [&] { return launch(f, 1, w.own, nullptr, nullptr); }, kRtParam, false},
      {"empty, unregistered kernel", empty, [&] { return launch(gone, 1, w.own, nullptr, nullptr); }, kRtParam,
       false},
  };
  // 4. the configuration
  struct CfgRow {
    const char* name;
    std::vector<aclrtLaunchKernelAttr> attrs;
    bool attrs_null;
    size_t num;  // numAttrs when attrs_null
  };
  const CfgRow cfgs[] = {
      {"cfg->attrs NULL, numAttrs 0", {}, true, 0},
      {"cfg->attrs NULL, numAttrs 1", {}, true, 1},
      {"TIMEOUT and TIMEOUT_US", {timeout, kt_attr_timeout_us(1000, 0)}, false, 0},
      {"TIMEOUT_US and TIMEOUT", {kt_attr_timeout_us(0, 1), kt_attr_timeout(0)}, false, 0},
      {"SCHEM_MODE 2", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 2)}, false, 0},
      {"SCHEM_MODE 255", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 255)}, false, 0},
      {"BLOCK_TASK_PREFETCH 2", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, 2)}, false, 0},
      {"DATA_DUMP 2", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 2)}, false, 0},
      {"ENABLE_PROFILING 2", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 2)}, false, 0},
      {"id 0", {kt_attr(0)}, false, 0},
      {"id 10", {kt_attr(10)}, false, 0},
      {"id -1", {kt_attr(-1)}, false, 0},
      {"a valid attribute, then id 10", {timeout, kt_attr(10)}, false, 0},
      {"a valid attribute, then DATA_DUMP 3",
       {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 1), kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 3)},
       false, 0},
  };
  std::vector<std::vector<aclrtLaunchKernelAttr>> storage;
  storage.reserve(sizeof cfgs / sizeof cfgs[0]);
  std::vector<aclrtLaunchKernelCfg> configs;
  configs.reserve(sizeof cfgs / sizeof cfgs[0]);
  for (const CfgRow& c : cfgs) {
    storage.push_back(c.attrs);
    configs.push_back(c.attrs_null ? aclrtLaunchKernelCfg{nullptr, c.num}
                                   : aclrtLaunchKernelCfg{storage.back().data(), storage.back().size()});
    aclrtLaunchKernelCfg* cfg = &configs.back();
    rows.push_back({c.name, finalized, [&, cfg] { return launch(f, 1, w.own, cfg, nullptr); }, kRtParam, false});
  }
  rows.push_back({"bad cfg, without context", finalized, [&] { return launch(f, 1, nullptr, &bad_cfg, nullptr); },
                  kRtParam, true});
  rows.push_back({"bad cfg, stream of another context", finalized,
                  [&] { return launch(f, 1, w.in_second, &bad_cfg, nullptr); }, kRtParam, false});
  rows.push_back({"bad cfg, unregistered kernel", finalized,
                  [&] { return launch(gone, 1, w.own, &bad_cfg, nullptr); }, kRtParam, false});
  // 5. context and stream
  rows.push_back({"no context (default stream)", finalized, [&] { return launch(f, 1, nullptr, nullptr, nullptr); },
                  kNoContext, true});
  rows.push_back({"no context, a stream", finalized, [&] { return launch(f, 1, w.own, nullptr, nullptr); },
                  kNoContext, true});
  rows.push_back({"no context, unregistered kernel", finalized,
                  [&] { return launch(gone, 1, w.own, nullptr, nullptr); }, kNoContext, true});
  rows.push_back({"stream of another context", finalized,
                  [&] { return launch(f, 1, w.in_second, nullptr, nullptr); }, kKtStreamContext, false});
  rows.push_back({"stream of another device's context (binary not loaded there)", finalized,
                  [&] { return launch(f, 1, w.on_device1, nullptr, nullptr); }, kKtStreamContext, false});
  rows.push_back({"stream of another context, unregistered kernel", finalized,
                  [&] { return launch(gone, 1, w.in_second, nullptr, nullptr); }, kKtStreamContext, false});
  // 6. the binary on the stream's device, the kernel's registration
  rows.push_back({"binary not loaded on the stream's device", finalized,
                  [&] {
                    if (aclrtSetDevice(1) != kOk) return -1;
                    const aclError rc = launch(f, 1, w.on_device1, nullptr, nullptr);
                    return aclrtSetCurrentContext(w.primary) == kOk ? rc : -2;
                  },
                  kBadHandle, false});
  rows.push_back({"binary not loaded on the current device (default stream)", finalized,
                  [&] {
                    if (aclrtSetDevice(1) != kOk) return -1;
                    const aclError rc = launch(f, 1, nullptr, nullptr, nullptr);
                    return aclrtSetCurrentContext(w.primary) == kOk ? rc : -2;
                  },
                  kBadHandle, false});
  rows.push_back({"kernel unregistered", finalized, [&] { return launch(gone, 1, w.own, nullptr, nullptr); },
                  kBadHandle, false});
  rows.push_back({"kernel unregistered, default stream", finalized,
                  [&] { return launch(gone, 1, nullptr, nullptr, nullptr); }, kBadHandle, false});

  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    r.setup();
    std::string msg;
    if (r.fresh_thread) {
      EXPECT_EQ(kt_on_fresh_thread(r.call, &msg), r.expected);
    } else {
      EXPECT_EQ(r.call(), r.expected);
      msg = recent_msg();
    }
    EXPECT_NE(msg, "");
  }
  // Nothing was queued anywhere.
  EXPECT_EQ(aclrtSynchronizeStream(w.own), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(aclrtSetCurrentContext(w.second), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(w.in_second), kOk);
  EXPECT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(w.on_device1), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  EXPECT_EQ(rec_.count(), 0u);
  EXPECT_EQ(gone_rec.count(), 0u);
  // The same objects launch fine once the rule they broke is mended.
  ASSERT_EQ(aclrtSetCurrentContext(w.second), kOk);
  finalized();
  EXPECT_EQ(launch(f, 1, w.in_second, nullptr, nullptr), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(w.in_second), kOk);
  EXPECT_EQ(rec_.count(), 1u);
  EXPECT_EQ(aclrtDestroyStream(w.in_second), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(w.primary), kOk);
  EXPECT_EQ(aclrtDestroyContext(w.second), kOk);
  EXPECT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(aclrtDestroyStream(w.on_device1), kOk);
  EXPECT_EQ(aclrtSetDevice(0), kOk);
  aclrtResetDeviceForce(1);
}

// §9.6 check 4: every valid attribute (and a cfg whose attrs are non-NULL with numAttrs 0) is
// accepted, and the kernel runs as without cfg.
TEST_F(KernelLaunchTest, ValidConfigAttributesAreAccepted) {
  const aclrtFuncHandle f = fn("kt_record");
  aclrtLaunchKernelAttr dyn = kt_attr(ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE);
  dyn.value.dynUBufSize = 65536;
  aclrtLaunchKernelAttr engine = kt_attr(ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE);
  engine.value.engineType = ACL_RT_ENGINE_TYPE_AIV;
  aclrtLaunchKernelAttr offset = kt_attr(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET);
  offset.value.blockDimOffset = 4;
  struct Row {
    const char* name;
    std::vector<aclrtLaunchKernelAttr> attrs;
  };
  const Row rows[] = {
      {"attrs non-NULL, numAttrs 0", {}},
      {"SCHEM_MODE 0", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 0)}},
      {"SCHEM_MODE 1", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 1)}},
      {"DYN_UBUF_SIZE", {dyn}},
      {"ENGINE_TYPE AIV", {engine}},
      {"BLOCKDIM_OFFSET", {offset}},
      {"BLOCK_TASK_PREFETCH 0", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, 0)}},
      {"BLOCK_TASK_PREFETCH 1", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, 1)}},
      {"DATA_DUMP 0", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 0)}},
      {"DATA_DUMP 1", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 1)}},
      {"TIMEOUT", {kt_attr_timeout(1)}},
      {"TIMEOUT 0", {kt_attr_timeout(0)}},
      {"TIMEOUT_US", {kt_attr_timeout_us(1, 0)}},
      {"ENABLE_PROFILING 0", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 0)}},
      {"ENABLE_PROFILING 1", {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 1)}},
      {"all of them but TIMEOUT_US",
       {kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 1), dyn, engine, offset,
        kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, 1),
        kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 1), kt_attr_timeout(30),
        kt_attr_u8(ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 1)}},
      {"TIMEOUT twice", {kt_attr_timeout(1), kt_attr_timeout(2)}},
  };
  aclrtLaunchKernelAttr spare = kt_attr(10);  // behind numAttrs 0: never read
  uint32_t i = 0;
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    std::vector<aclrtLaunchKernelAttr> attrs = r.attrs;
    aclrtLaunchKernelCfg cfg{attrs.empty() ? &spare : attrs.data(), attrs.size()};
    ++i;
    const aclrtArgsHandle a = kt_build_args(f, {kt_bytes(i)});
    ASSERT_EQ(aclrtLaunchKernelWithConfig(f, i, nullptr, &cfg, a, nullptr), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
    ASSERT_EQ(rec_.count(), i);
    EXPECT_EQ(rec_.last().blocks, i);
    EXPECT_EQ(rec_.last().args, kt_bytes(i));
  }
}

// §9.8 / the samples' add_custom: three device pointers in the buffer, 8 blocks; the kernel reads
// two device buffers and writes their sum to the third through aclvmmKernelRead / Write, on an
// explicit stream and on the default stream.
TEST_F(KernelLaunchTest, AddsTwoDeviceBuffersLikeTheVendorSample) {
  const aclrtFuncHandle f = fn("kt_add");
  const size_t n = 8 * add_.per_block;
  char* x = dev(n * 4);
  char* y = dev(n * 4);
  char* z = dev(n * 4);
  const std::string xs = kt_u32s(n, 1, 3), ys = kt_u32s(n, 1000000, 7);
  h2d(x, xs);
  h2d(y, ys);
  const std::string sums = kt_u32s(n, 1000001, 10);
  for (aclrtStream s : {stream(), static_cast<aclrtStream>(nullptr)}) {
    SCOPED_TRACE(s ? "explicit stream" : "default stream");
    ASSERT_EQ(aclrtMemset(z, n * 4, 0xee, n * 4), kOk);
    const aclrtArgsHandle a = kt_build_args(f, {kt_bytes(x), kt_bytes(y), kt_bytes(z)});
    const int before = add_.calls.load();
    ASSERT_EQ(kt_launch(f, 8, s, a), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    EXPECT_EQ(add_.calls.load(), before + 1) << "once per launch";
    EXPECT_EQ(add_.args_size.load(), 24u);
    EXPECT_EQ(add_.read_rc.load(), kOk);
    EXPECT_EQ(add_.write_rc.load(), kOk);
    EXPECT_TRUE(get(z, n * 4) == sums);
  }
  // numBlocks scales the work (the kernel computes numBlocks * 2048 elements): 1 block touches
  // only the first 2048 elements.
  ASSERT_EQ(aclrtMemset(z, n * 4, 0, n * 4), kOk);
  ASSERT_EQ(kt_launch(f, 1, nullptr, kt_build_args(f, {kt_bytes(x), kt_bytes(y), kt_bytes(z)})), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  const std::string out = get(z, n * 4);
  EXPECT_TRUE(out.substr(0, 2048 * 4) == sums.substr(0, 2048 * 4));
  EXPECT_TRUE(all_bytes(out.substr(2048 * 4), '\0'));
}

// §9.6/§9.8: numBlocks, the buffer and userData arrive as given; the kernel runs once per launch,
// on the stream's worker (not the caller's thread), as device 0.
TEST_F(KernelLaunchTest, KernelGetsBlocksBufferUserDataAndRunsOnTheStreamsWorker) {
  const aclrtFuncHandle f = fn("kt_record");
  const aclrtStream s = stream();
  const uint32_t blocks[] = {1, 8, 48, 65535, 0x80000000u, UINT32_MAX};
  for (uint32_t b : blocks) {
    ASSERT_EQ(kt_launch(f, b, s, kt_build_args(f, {kt_bytes(b), "payload"})), kOk);
  }
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  const std::vector<KtCall> calls = rec_.calls();
  ASSERT_EQ(calls.size(), sizeof blocks / sizeof blocks[0]);
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(blocks[i]);
    EXPECT_EQ(calls[i].blocks, blocks[i]) << "in launch order";
    EXPECT_EQ(calls[i].args, kt_bytes(blocks[i]) + std::string(4, '\0') + "payload");
    EXPECT_EQ(calls[i].user_data, &rec_);
    EXPECT_EQ(calls[i].device, 0);
    EXPECT_NE(calls[i].thread, std::this_thread::get_id());
  }
}

// §9.6 "A memory access that fails inside it marks the kernel failed; the next synchronisation of
// the stream returns that access's code (507899 for unmapped memory)": reading from and writing
// to an unmapped reservation; the synchronisation after that is clean and the stream still works.
TEST_F(KernelLaunchTest, AccessToUnmappedMemoryFailsTheSynchronisation) {
  const aclrtFuncHandle f = fn("kt_add");
  const size_t n = add_.per_block;
  char* x = dev(n * 4);
  char* y = dev(n * 4);
  char* z = dev(n * 4);
  h2d(x, kt_u32s(n, 5, 1));
  h2d(y, kt_u32s(n, 7, 1));
  ASSERT_EQ(aclrtMemset(z, n * 4, 0xee, n * 4), kOk);
  void* hole = reserve(k2M);
  const aclrtStream s = stream();
  // Reading an unmapped source.
  ASSERT_EQ(kt_launch(f, 1, s, kt_build_args(f, {kt_bytes(hole), kt_bytes(y), kt_bytes(z)})), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kDrv);
  EXPECT_EQ(add_.read_rc.load(), kDrv);
  EXPECT_TRUE(all_bytes(get(z, n * 4), '\xee')) << "nothing was written";
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk) << "reported once";
  // Writing to an unmapped destination.
  ASSERT_EQ(kt_launch(f, 1, s, kt_build_args(f, {kt_bytes(x), kt_bytes(y), kt_bytes(hole)})), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kDrv);
  EXPECT_EQ(add_.write_rc.load(), kDrv);
  // The stream goes on.
  ASSERT_EQ(kt_launch(f, 1, s, kt_build_args(f, {kt_bytes(x), kt_bytes(y), kt_bytes(z)})), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_TRUE(get(z, n * 4) == kt_u32s(n, 12, 2));
  EXPECT_EQ(aclrtReleaseMemAddress(hole), kOk);
}

// §9.6 "no implementation is registered under the kernel's name any more" at execution: a kernel
// unregistered after its launch but before the stream reaches it fails the synchronisation with
// 107017 and runs nothing; registered again, the same handles launch it.
TEST_F(KernelLaunchTest, KernelUnregisteredBeforeTheStreamReachesItFailsWith107017) {
  KtRecorder late;
  reg("kt_launch_late", kt_record_kernel, &late);
  const aclrtFuncHandle f = fn("kt_launch_late");
  const aclrtStream s = stream();
  HoldGate gate;
  ASSERT_EQ(aclvmmLaunchKernel(s, hold_kernel, &gate), kOk);
  ASSERT_TRUE(wait_started(gate));
  const aclrtArgsHandle a = kt_build_args(f, {"late"});
  ASSERT_EQ(kt_launch(f, 1, s, a), kOk);
  ASSERT_EQ(aclvmmUnregisterKernel("kt_launch_late"), kOk);
  gate.open.store(1);
  EXPECT_EQ(aclrtSynchronizeStream(s), kBadHandle);
  EXPECT_NE(recent_msg().find("kt_launch_late"), std::string::npos) << "the message names the kernel";
  EXPECT_EQ(late.count(), 0u);
  EXPECT_EQ(kt_launch(f, 1, s, a), kBadHandle) << "unregistered at launch time";
  ASSERT_EQ(aclvmmRegisterKernel("kt_launch_late", kt_record_kernel, &late), kOk);
  EXPECT_EQ(kt_launch(f, 1, s, a), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(late.count(), 1u);
}

// §9.6 "aclvmm calls the implementation registered under the name at that moment": unregistered
// and registered again with another function and userData while the launch waits; the new one
// runs, once, with the new userData.
TEST_F(KernelLaunchTest, TheFunctionRegisteredWhenTheStreamReachesTheKernelRuns) {
  KtRecorder before, after;
  reg("kt_launch_swap", kt_record_kernel, &before);
  const aclrtFuncHandle f = fn("kt_launch_swap");
  const aclrtStream s = stream();
  HoldGate gate;
  ASSERT_EQ(aclvmmLaunchKernel(s, hold_kernel, &gate), kOk);
  ASSERT_TRUE(wait_started(gate));
  ASSERT_EQ(kt_launch(f, 4, s, kt_build_args(f, {"swap"})), kOk);
  ASSERT_EQ(aclvmmUnregisterKernel("kt_launch_swap"), kOk);
  ASSERT_EQ(aclvmmRegisterKernel("kt_launch_swap", kt_record_kernel, &after), kOk);
  gate.open.store(1);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(before.count(), 0u);
  ASSERT_EQ(after.count(), 1u);
  EXPECT_EQ(after.last().user_data, &after);
  EXPECT_EQ(after.last().blocks, 4u);
  EXPECT_EQ(after.last().args, "swap");
}

// §9.6 check 6: "the binary is not loaded on the stream's device (no aclrtBinaryGetFunction on it
// while that device was current)" → 107017; after a lookup on that device the same handle works
// there, and the kernel runs as device 1.
TEST_F(KernelLaunchTest, BinaryMustBeLoadedOnTheStreamsDevice) {
  const aclrtFuncHandle f = fn("kt_record");
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  const aclrtArgsHandle a = kt_build_args(f, {"dev1"});
  EXPECT_EQ(kt_launch(f, 1, nullptr, a), kBadHandle);
  EXPECT_NE(recent_msg(), "");
  aclrtFuncHandle again = nullptr;
  ASSERT_EQ(aclrtBinaryGetFunction(bin_, "kt_record", &again), kOk);
  EXPECT_EQ(again, f) << "the same name, the same handle";
  EXPECT_EQ(kt_launch(f, 3, nullptr, a), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  ASSERT_EQ(rec_.count(), 1u);
  EXPECT_EQ(rec_.last().device, 1);
  EXPECT_EQ(rec_.last().blocks, 3u);
  // Another binary is loaded nowhere until it is looked up.
  aclrtBinHandle other = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path_.c_str(), nullptr, &other), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  const aclrtFuncHandle g = fn("kt_record", other);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  EXPECT_EQ(kt_launch(g, 1, nullptr, a), kBadHandle);
  EXPECT_EQ(aclrtBinaryUnLoad(other), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  aclrtResetDeviceForce(1);
}

// §9.8 / emulation.md §4: aclvmmKernelDeviceId is the stream's user device id, not the physical
// one: with ASCEND_RT_VISIBLE_DEVICES=2,5 a kernel on user device 1 (physical 5) reports 1, and
// device memory of that device is reachable.
TEST_F(KernelLaunchDeviceTest, KernelDeviceIdIsTheStreamsUserDevice) {
  ScopedEnvRuntime env("ASCEND_RT_VISIBLE_DEVICES", "2,5");
  ASSERT_TRUE(env.ok());
  KtRecorder rec;
  KtAddKernel add;
  add.per_block = 16;
  ASSERT_EQ(aclvmmRegisterKernel("kt_launch_user_dev", kt_record_kernel, &rec), kOk);
  ASSERT_EQ(aclvmmRegisterKernel("kt_launch_user_add", kt_add_kernel, &add), kOk);
  const std::string path = temp_file("bin");
  aclrtBinHandle bin = nullptr;
  ASSERT_EQ(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &bin), kOk);
  for (int32_t device : {1, 0}) {
    SCOPED_TRACE(device);
    ASSERT_EQ(aclrtSetDevice(device), kOk);
    aclrtFuncHandle f = nullptr, g = nullptr;
    ASSERT_EQ(aclrtBinaryGetFunction(bin, "kt_launch_user_dev", &f), kOk);
    ASSERT_EQ(aclrtBinaryGetFunction(bin, "kt_launch_user_add", &g), kOk);
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), kOk);
    ASSERT_EQ(kt_launch(f, 1, s, kt_build_args(f, {"d"})), kOk);
    void *x = nullptr, *z = nullptr;
    ASSERT_EQ(aclrtMalloc(&x, 64, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    ASSERT_EQ(aclrtMalloc(&z, 64, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
    h2d(x, kt_u32s(16, 100, 1));
    ASSERT_EQ(kt_launch(g, 1, s, kt_build_args(g, {kt_bytes(x), kt_bytes(x), kt_bytes(z)})), kOk);
    ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
    EXPECT_EQ(rec.last().device, device);
    EXPECT_TRUE(get(z, 64) == kt_u32s(16, 200, 2));
    EXPECT_EQ(aclrtFree(x), kOk);
    EXPECT_EQ(aclrtFree(z), kOk);
    EXPECT_EQ(aclrtDestroyStream(s), kOk);
  }
  EXPECT_EQ(rec.count(), 2u);
  EXPECT_EQ(aclrtBinaryUnLoad(bin), kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_launch_user_dev"), kOk);
  EXPECT_EQ(aclvmmUnregisterKernel("kt_launch_user_add"), kOk);
  aclrtResetDeviceForce(1);
  unlink(path.c_str());
}

}  // namespace
}  // namespace aclvmm_test
