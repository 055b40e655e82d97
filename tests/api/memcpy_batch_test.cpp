// aclrtMemcpyBatch / aclrtMemcpyBatchAsync (runtime-extra.md §7): the checks in order with what
// each leaves in *failIndex, the all-empty batch, the attribute ranges, copies in entry order, a
// failing entry, and aclvmm's deliberate rule that a refused batch copies nothing.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr size_t kBatchUntouched = 12345;  // what *failIndex holds before a call

aclrtMemLocation batch_loc(int type, uint32_t id = 0) { return loc(type, id); }
aclrtMemcpyBatchAttr batch_attr(aclrtMemLocation dst, aclrtMemLocation src) {
  aclrtMemcpyBatchAttr a{};
  a.dstLoc = dst;
  a.srcLoc = src;
  return a;
}
const aclrtMemLocation kBatchHost = batch_loc(ACL_MEM_LOCATION_TYPE_HOST);
const aclrtMemLocation kBatchDev0 = batch_loc(ACL_MEM_LOCATION_TYPE_DEVICE, 0);

// Four entries: two host-to-device (attribute 0) then two device-to-host (attribute 1).
class BatchTest : public AllocTest {
 public:
  // Plain host memory the rows of the misuse table may point a device side's attribute at.
  void* host_scratch() { return out_[0].data(); }

 protected:
  void SetUp() override {
    AllocTest::SetUp();
    if (HasFatalFailure()) return;
    prepare_batch();
  }
  // A valid batch over fresh blocks (freed at TearDown).
  void prepare_batch() {
    for (int i = 0; i < 2; ++i) {
      in_[i] = pattern(kBytes, 10 + i);
      out_[i].assign(kBytes, '\0');
      devs_[i] = dev(kBytes);
      devs_[2 + i] = dev(kBytes);
      h2d(devs_[2 + i], pattern(kBytes, 20 + i));
    }
    dsts_ = {devs_[0], devs_[1], out_[0].data(), out_[1].data()};
    srcs_ = {in_[0].data(), in_[1].data(), devs_[2], devs_[3]};
    sizes_.assign(4, kBytes);
    maxs_.assign(4, kBytes);
    attrs_ = {batch_attr(kBatchDev0, kBatchHost), batch_attr(kBatchHost, kBatchDev0)};
    starts_ = {0, 2};
  }
  aclError run(size_t* fail, bool async = false, aclrtStream stream = nullptr) {
    return async ? aclrtMemcpyBatchAsync(dsts_.data(), maxs_.data(), srcs_.data(), sizes_.data(),
                                         dsts_.size(), attrs_.data(), starts_.data(),
                                         starts_.size(), fail, stream)
                 : aclrtMemcpyBatch(dsts_.data(), maxs_.data(), srcs_.data(), sizes_.data(),
                                    dsts_.size(), attrs_.data(), starts_.data(), starts_.size(),
                                    fail);
  }
  void expect_copied() {
    EXPECT_EQ(get(devs_[0], kBytes), in_[0]);
    EXPECT_EQ(get(devs_[1], kBytes), in_[1]);
    EXPECT_EQ(out_[0], pattern(kBytes, 20));
    EXPECT_EQ(out_[1], pattern(kBytes, 21));
  }
  static constexpr size_t kBytes = 64 * 1024;
  std::string in_[2], out_[2];
  char* devs_[4] = {};
  std::vector<void*> dsts_, srcs_;
  std::vector<size_t> sizes_, maxs_;
  std::vector<aclrtMemcpyBatchAttr> attrs_;
  std::vector<size_t> starts_;
};

TEST_F(BatchTest, CopiesEveryEntryInOrder) {
  size_t fail = kBatchUntouched;
  ASSERT_EQ(run(&fail), kOk);
  EXPECT_EQ(fail, SIZE_MAX);
  expect_copied();
}

TEST_F(BatchTest, AsyncQueuesTheCopiesOnTheStream) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), kOk);
  size_t fail = kBatchUntouched;
  // The host sides are plain process memory: each such entry is copied once the stream drained
  // (the documented rule for unpinned memory), the others queued. Either way all land.
  ASSERT_EQ(run(&fail, true, s), kOk);
  EXPECT_EQ(fail, SIZE_MAX);
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  expect_copied();
  // Pinned host memory is queued: nothing has moved before the stream runs it.
  char* pinned_in = pinned(kBytes);
  char* pinned_out = pinned(kBytes);
  std::memset(pinned_in, 0x5a, kBytes);
  std::memset(pinned_out, 0, kBytes);
  srcs_[0] = srcs_[1] = pinned_in;
  dsts_[2] = dsts_[3] = pinned_out;
  std::atomic<bool> go{false};
  ASSERT_EQ(aclvmmLaunchKernel(
                s,
                [](aclvmmKernelContext*, void* flag) {
                  while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
                },
                &go),
            kOk);
  ASSERT_EQ(run(&fail, true, s), kOk);
  EXPECT_EQ(get(devs_[0], kBytes), in_[0]) << "a queued entry ran before the stream reached it";
  EXPECT_EQ(std::string(pinned_out, kBytes), std::string(kBytes, '\0'));
  go = true;
  ASSERT_EQ(aclrtSynchronizeStream(s), kOk);
  EXPECT_EQ(get(devs_[0], kBytes), std::string(kBytes, 0x5a));
  EXPECT_EQ(std::string(pinned_out, kBytes), pattern(kBytes, 21)) << "entry 3 is the last";
  EXPECT_EQ(aclrtDestroyStream(s), kOk);
}

// A copy that fails names its entry; the entries before it stay copied (synchronous form).
TEST_F(BatchTest, AFailingCopyNamesItsEntry) {
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  dsts_[1] = va;
  maxs_[1] = sizes_[1] = 3 * kMiB;  // runs past the mapping into the reserved, unmapped tail
  in_[1].assign(3 * kMiB, 'x');
  srcs_[1] = in_[1].data();
  size_t fail = kBatchUntouched;
  EXPECT_EQ(run(&fail), kDrv);
  EXPECT_EQ(fail, 1u);
  EXPECT_EQ(get(devs_[0], kBytes), in_[0]) << "the entry before the failing one was not copied";
  EXPECT_EQ(out_[0], std::string(kBytes, '\0')) << "an entry after the failing one was copied";
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

TEST_F(BatchTest, AllEmptyAnswersAtOnceWithSizeMax) {
  std::vector<size_t> zero(3, 0);
  size_t fail = kBatchUntouched;
  // Nothing but the sizes is looked at: NULL arrays and attributes pass.
  EXPECT_EQ(aclrtMemcpyBatch(nullptr, nullptr, nullptr, zero.data(), 3, nullptr, nullptr, 0, &fail),
            kOk);
  EXPECT_EQ(fail, SIZE_MAX);
  fail = kBatchUntouched;
  EXPECT_EQ(aclrtMemcpyBatchAsync(nullptr, nullptr, nullptr, zero.data(), 3, nullptr, nullptr, 0,
                                  &fail, reinterpret_cast<aclrtStream>(0x1)),
            kOk);
  EXPECT_EQ(fail, SIZE_MAX);
}

// runtime-extra.md §7's checks in order: each row breaks one thing of a valid batch and names
// the code and what *failIndex then holds (untouched before check 6).
struct BatchMisuse {
  const char* name;
  bool async;
  void (*arrange)(BatchTest*, std::vector<void*>& d, std::vector<void*>& s,
                  std::vector<size_t>& sizes, std::vector<size_t>& maxs,
                  std::vector<aclrtMemcpyBatchAttr>& attrs, std::vector<size_t>& starts,
                  size_t* count, bool* null_fail, aclrtStream* stream);
  aclError expected;
  size_t fail;
};

#define BATCH_ARRANGE(...)                                                                    \
  [](BatchTest * t, std::vector<void*> & d, std::vector<void*> & s, std::vector<size_t> & sizes, \
     std::vector<size_t> & maxs, std::vector<aclrtMemcpyBatchAttr> & attrs,                     \
     std::vector<size_t> & starts, size_t * count, bool* null_fail, aclrtStream* stream) {      \
    (void)t, (void)d, (void)s, (void)sizes, (void)maxs, (void)attrs, (void)starts, (void)count, \
        (void)null_fail, (void)stream;                                                         \
    __VA_ARGS__;                                                                               \
  }

const BatchMisuse kBatchMisuses[] = {
    {"NULL failIndex", false, BATCH_ARRANGE(*null_fail = true), kParam, kBatchUntouched},
    {"NULL sizes", false, BATCH_ARRANGE(sizes.clear()), kParam, kBatchUntouched},
    {"numBatches 0", false, BATCH_ARRANGE(*count = 0), kParam, kBatchUntouched},
    {"NULL dsts", false, BATCH_ARRANGE(d.clear()), kParam, kBatchUntouched},
    {"NULL destMaxs", false, BATCH_ARRANGE(maxs.clear()), kParam, kBatchUntouched},
    {"NULL srcs", false, BATCH_ARRANGE(s.clear()), kParam, kBatchUntouched},
    {"NULL attrs", false, BATCH_ARRANGE(attrs.clear()), kParam, kBatchUntouched},
    {"NULL attrsIndexes", false, BATCH_ARRANGE(starts.clear()), kParam, kBatchUntouched},
    {"destMax below size", false, BATCH_ARRANGE(maxs[3] = sizes[3] - 1), kParam, kBatchUntouched},
    {"a reserved byte set", false, BATCH_ARRANGE(attrs[1].rsv[15] = 1), kParam, kBatchUntouched},
    {"async: forged stream", true,
     BATCH_ARRANGE(*stream = reinterpret_cast<aclrtStream>(0x12345)), kBadHandle,
     kBatchUntouched},
    {"numAttrs above numBatches", false,
     BATCH_ARRANGE(attrs.resize(5, attrs[0]); starts = {0, 1, 2, 3, 4}), kRtParam, SIZE_MAX},
    {"attrsIndexes[0] not 0", false, BATCH_ARRANGE(starts[0] = 1), kRtParam, SIZE_MAX},
    {"attrsIndexes not increasing", false, BATCH_ARRANGE(starts[1] = 0), kRtParam, SIZE_MAX},
    {"an index past numBatches", false, BATCH_ARRANGE(starts[1] = 4), kRtParam, SIZE_MAX},
    {"sync: more than 4096 entries", false,
     BATCH_ARRANGE(*count = 4097; d.resize(4097, d[0]); s.resize(4097, s[0]);
                   sizes.resize(4097, sizes[0]); maxs.resize(4097, maxs[0])),
     kRtParam, SIZE_MAX},
    {"async: a zero size among others", true, BATCH_ARRANGE(sizes[2] = 0), kRtParam, 2},
    {"a NULL destination", false, BATCH_ARRANGE(d[1] = nullptr), kRtParam, 1},
    {"a NULL source", true, BATCH_ARRANGE(s[3] = nullptr), kRtParam, 3},
    {"a device side on another device than its attribute", false,
     BATCH_ARRANGE(attrs[0].dstLoc.id = 1), kRtParam, 0},
    {"a host side whose attribute says device", false,
     BATCH_ARRANGE(attrs[1].dstLoc = kBatchDev0), kRtParam, 2},
    {"host to host", false,
     BATCH_ARRANGE(attrs[0] = batch_attr(kBatchHost, kBatchHost); d[0] = t->host_scratch()), kRtParam, 0},
    {"an unallocated device address", false,
     BATCH_ARRANGE(s[3] = static_cast<char*>(s[3]) + 512 * kMiB), kDrv, 3},
};

TEST_F(BatchTest, MisuseInCheckOrder) {
  for (const BatchMisuse& m : kBatchMisuses) {
    SCOPED_TRACE(m.name);
    prepare_batch();  // a fresh, valid batch (the blocks of earlier rows are freed at TearDown)
    std::vector<void*> d = dsts_, s = srcs_;
    std::vector<size_t> sizes = sizes_, maxs = maxs_;
    std::vector<aclrtMemcpyBatchAttr> attrs = attrs_;
    std::vector<size_t> starts = starts_;
    size_t count = d.size();
    bool null_fail = false;
    aclrtStream stream = nullptr;
    m.arrange(this, d, s, sizes, maxs, attrs, starts, &count, &null_fail, &stream);
    size_t fail = kBatchUntouched;
    auto ptr = [](auto& v) { return v.empty() ? nullptr : v.data(); };
    const size_t num_attrs = starts.empty() ? attrs_.size() : starts.size();
    const aclError rc =
        m.async ? aclrtMemcpyBatchAsync(ptr(d), ptr(maxs), ptr(s), ptr(sizes), count, ptr(attrs),
                                        ptr(starts), num_attrs, null_fail ? nullptr : &fail,
                                        stream)
                : aclrtMemcpyBatch(ptr(d), ptr(maxs), ptr(s), ptr(sizes), count, ptr(attrs),
                                   ptr(starts), num_attrs, null_fail ? nullptr : &fail);
    EXPECT_EQ(rc, m.expected);
    EXPECT_EQ(fail, m.fail);
    // Deliberate (runtime-extra.md): a refused batch copied and queued nothing, entry 0 included.
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), kOk);
    EXPECT_NE(get(devs_[0], kBytes), in_[0]) << "entry 0 was copied by a refused batch";
  }
}

// EDGE, INF and TRAIN lack the calls (runtime-extra.md §10): 207000 after the array checks, with
// *failIndex untouched; an all-empty batch still answers 0 there.
TEST(BatchProducts, OnlyTheFamiliesWithBatchCopies) {
  for (const char* soc : {"Ascend310B1", "Ascend310P3", "Ascend910A"}) {
    SCOPED_TRACE(soc);
    EXPECT_CHILD_OK(run_in_child([&] {
      setenv("ACLVMM_SOC", soc, 1);
      if (aclrtSetDevice(0) != kOk) return 10;
      std::vector<size_t> zero(2, 0), sizes(1, 8), maxs(1, 8);
      size_t fail = kBatchUntouched;
      if (aclrtMemcpyBatch(nullptr, nullptr, nullptr, zero.data(), 2, nullptr, nullptr, 0, &fail) !=
              kOk ||
          fail != SIZE_MAX) {
        return 11;
      }
      char host[8] = {};
      void* d = nullptr;
      if (aclrtMalloc(&d, 64, ACL_MEM_MALLOC_NORMAL_ONLY) != kOk) return 12;
      void* dsts[] = {d};
      void* srcs[] = {host};
      aclrtMemcpyBatchAttr attr = batch_attr(kBatchDev0, kBatchHost);
      size_t start = 0;
      fail = kBatchUntouched;
      if (aclrtMemcpyBatch(dsts, maxs.data(), srcs, sizes.data(), 1, &attr, &start, 1, &fail) !=
              kNotSupported ||
          fail != kBatchUntouched) {
        return 13;
      }
      return 0;
    }));
  }
}

}  // namespace
}  // namespace aclvmm_test
