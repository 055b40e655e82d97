// aclrtValueWrite / aclrtValueWait (runtime-extra.md §8): the checks in order, the word written
// and waited for in stream order, the four wait conditions, and the ways a stuck wait ends
// (aclrtStreamAbort, aclrtDestroyStreamForce; the timed synchronisation reports it).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr aclError kValueStreamContext = 107003;  // ACL_ERROR_RT_STREAM_CONTEXT
constexpr aclError kValueTimedOut = 507046;       // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT

// An aclrtMalloc block whose first word the tests write and wait on, and a stream of its own.
class ValueTest : public AllocTest {
 protected:
  void SetUp() override {
    AllocTest::SetUp();
    if (HasFatalFailure()) return;
    word_ = dev(4096);
    ASSERT_NE(word_, nullptr);
    set_word(0);
    ASSERT_EQ(aclrtCreateStream(&stream_), kOk);
  }
  void TearDown() override {
    if (stream_) EXPECT_EQ(aclrtDestroyStreamForce(stream_), kOk);
    AllocTest::TearDown();
  }
  void set_word(uint64_t v) {
    ASSERT_EQ(aclrtMemcpy(word_, 8, &v, 8, ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  }
  uint64_t word() {
    uint64_t v = 0;
    EXPECT_EQ(aclrtMemcpy(&v, 8, word_, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
    return v;
  }
  char* word_ = nullptr;
  aclrtStream stream_ = nullptr;
};

TEST_F(ValueTest, WriteStoresTheWordWhenTheStreamReachesIt) {
  ASSERT_EQ(aclrtValueWrite(word_, 0x1122334455667788ull, 0, stream_), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), kOk);
  EXPECT_EQ(word(), 0x1122334455667788ull);
  // The default stream (NULL) as well, at another word.
  ASSERT_EQ(aclrtValueWrite(word_ + 8, 7, 0, nullptr), kOk);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), kOk);
  uint64_t second = 0;
  ASSERT_EQ(aclrtMemcpy(&second, 8, word_ + 8, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_EQ(second, 7u);
}

// Each condition of runtime-extra.md §8 against a word the test sets first: the true ones let
// the stream pass; the false ones hold it until the timed synchronisation gives up, and a later
// write of a satisfying word releases it.
struct ValueCondition {
  const char* name;
  uint32_t flag;
  uint64_t word;
  uint64_t value;
  bool ready;
};
const ValueCondition kValueConditions[] = {
    {"GEQ above", ACL_STREAM_WAIT_VALUE_GEQ, 10, 9, true},
    {"GEQ equal", ACL_STREAM_WAIT_VALUE_GEQ, 9, 9, true},
    {"GEQ below", ACL_STREAM_WAIT_VALUE_GEQ, 8, 9, false},
    // (int64_t)(word - value) >= 0: a word that wrapped past the value still counts as after it.
    {"GEQ wrapped", ACL_STREAM_WAIT_VALUE_GEQ, 2, UINT64_MAX - 1, true},
    {"GEQ half a range before", ACL_STREAM_WAIT_VALUE_GEQ, 0, uint64_t{1} << 63, false},
    {"EQ equal", ACL_STREAM_WAIT_VALUE_EQ, 42, 42, true},
    {"EQ other", ACL_STREAM_WAIT_VALUE_EQ, 41, 42, false},
    {"AND common bit", ACL_STREAM_WAIT_VALUE_AND, 0b1010, 0b0010, true},
    {"AND none", ACL_STREAM_WAIT_VALUE_AND, 0b1010, 0b0101, false},
    {"NOR a zero bit left", ACL_STREAM_WAIT_VALUE_NOR, 0b1010, 0b0101, true},
    {"NOR every bit set", ACL_STREAM_WAIT_VALUE_NOR, UINT64_MAX, 0, false},
};

TEST_F(ValueTest, EachConditionHoldsTheStreamExactlyWhileItIsFalse) {
  for (const ValueCondition& c : kValueConditions) {
    SCOPED_TRACE(c.name);
    set_word(c.word);
    uint64_t marker = 0x99, seen = 0;
    char* after = word_ + 64;  // written by the copy queued behind the wait
    set_word(c.word);
    ASSERT_EQ(aclrtMemcpy(after, 8, &seen, 8, ACL_MEMCPY_HOST_TO_DEVICE), kOk);
    ASSERT_EQ(aclrtValueWait(word_, c.value, c.flag, stream_), kOk);
    ASSERT_EQ(aclrtMemcpyAsync(after, 8, &marker, 8, ACL_MEMCPY_HOST_TO_DEVICE, stream_), kOk);
    if (c.ready) {
      EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 5000), kOk);
    } else {
      EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 50), kValueTimedOut);
      ASSERT_EQ(aclrtMemcpy(&seen, 8, after, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
      EXPECT_EQ(seen, 0u) << "the copy behind the wait ran while the condition was false";
      // The word that makes it true comes from another stream, as in the vendor's sample 9.
      aclrtStream writer = nullptr;
      ASSERT_EQ(aclrtCreateStream(&writer), kOk);
      const uint64_t release = c.flag == ACL_STREAM_WAIT_VALUE_NOR ? 0 : c.value;
      ASSERT_EQ(aclrtValueWrite(word_, c.flag == ACL_STREAM_WAIT_VALUE_AND ? c.value : release, 0,
                                writer),
                kOk);
      EXPECT_EQ(aclrtSynchronizeStream(writer), kOk);
      EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 5000), kOk);
      EXPECT_EQ(aclrtDestroyStream(writer), kOk);
    }
    ASSERT_EQ(aclrtMemcpy(&seen, 8, after, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
    EXPECT_EQ(seen, marker);
  }
}

// A wait that never comes true is freed by aclrtStreamAbort; the stream is usable afterwards and
// the copy queued behind the wait never ran.
TEST_F(ValueTest, AbortEndsAWaitThatNeverComesTrue) {
  uint64_t zero = 0, marker = 0x55;
  char* after = word_ + 64;
  ASSERT_EQ(aclrtMemcpy(after, 8, &zero, 8, ACL_MEMCPY_HOST_TO_DEVICE), kOk);
  ASSERT_EQ(aclrtValueWait(word_, 1, ACL_STREAM_WAIT_VALUE_EQ, stream_), kOk);
  ASSERT_EQ(aclrtMemcpyAsync(after, 8, &marker, 8, ACL_MEMCPY_HOST_TO_DEVICE, stream_), kOk);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 20), kValueTimedOut);
  EXPECT_EQ(aclrtStreamAbort(stream_), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk);
  uint64_t seen = 1;
  ASSERT_EQ(aclrtMemcpy(&seen, 8, after, 8, ACL_MEMCPY_DEVICE_TO_HOST), kOk);
  EXPECT_EQ(seen, 0u) << "the copy queued behind the aborted wait ran";
  ASSERT_EQ(aclrtValueWrite(word_, 3, 0, stream_), kOk);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk);
  EXPECT_EQ(word(), 3u);
}

TEST_F(ValueTest, DestroyStreamForceEndsAStuckWait) {
  ASSERT_EQ(aclrtValueWait(word_, 1, ACL_STREAM_WAIT_VALUE_EQ, stream_), kOk);
  EXPECT_EQ(aclrtDestroyStreamForce(stream_), kOk);  // returns: the wait saw the destroy
  stream_ = nullptr;
}

// The word is read through the device MMU when the stream reaches the wait: a range unmapped
// meanwhile fails the stream with 507899, and a write queued before an unmap fails likewise.
TEST_F(ValueTest, AWordUnmappedBeforeTheStreamReachesItFailsTheStream) {
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  std::atomic<bool> go{false};
  // A kernel holds the stream until the range is gone.
  ASSERT_EQ(aclvmmLaunchKernel(
                stream_,
                [](aclvmmKernelContext*, void* flag) {
                  while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
                },
                &go),
            kOk);
  ASSERT_EQ(aclrtValueWrite(va, 5, 0, stream_), kOk);
  ASSERT_EQ(aclrtValueWait(va, 0, ACL_STREAM_WAIT_VALUE_EQ, stream_), kOk);
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  go = true;
  EXPECT_EQ(aclrtSynchronizeStream(stream_), kDrv);
  EXPECT_NE(recent_msg().find("aclrtValueWrite"), std::string::npos);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// runtime-extra.md §8's checks in order; each row breaks one and keeps the ones before it valid.
struct ValueMisuse {
  const char* name;
  bool wait;
  int arrange;  // see make_misuse()
  aclError expected;
};
enum ValueArrange {
  kValueNullAddr,
  kValueForgedStream,
  kValueBadFlag,
  kValueHostMalloc,
  kValuePinnedHost,
  kValueManaged,
  kValueUnallocated,
  kValueOtherContext,
  kValueUnaligned,
};
const ValueMisuse kValueMisuses[] = {
    {"write: NULL address", false, kValueNullAddr, kParam},
    {"wait: NULL address", true, kValueNullAddr, kParam},
    {"write: forged stream", false, kValueForgedStream, kBadHandle},
    {"wait: forged stream", true, kValueForgedStream, kBadHandle},
    {"write: flag 1", false, kValueBadFlag, kRtParam},
    {"wait: flag 4", true, kValueBadFlag, kRtParam},
    {"write: malloc'd host memory", false, kValueHostMalloc, kRtParam},
    {"wait: aclrtMallocHost memory", true, kValuePinnedHost, kRtParam},
    {"write: managed memory", false, kValueManaged, kRtParam},
    {"wait: unallocated device-window address", true, kValueUnallocated, kDrv},
    {"write: a stream of another context", false, kValueOtherContext, kValueStreamContext},
    {"wait: not 8-byte aligned", true, kValueUnaligned, kRtParam},
    {"write: not 8-byte aligned", false, kValueUnaligned, kRtParam},
};

TEST_F(ValueTest, MisuseInCheckOrder) {
  std::vector<uint64_t> plain(8, 0);
  void* pinned = this->pinned(4096);
  void* managed = nullptr;
  ASSERT_EQ(aclrtMemAllocManaged(&managed, k2M, ACL_RT_MEM_ATTACH_GLOBAL), kOk);
  aclrtContext mine = nullptr, other = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&mine), kOk);
  ASSERT_EQ(aclrtCreateContext(&other, 0), kOk);  // becomes current
  aclrtStream foreign = nullptr;
  ASSERT_EQ(aclrtCreateStream(&foreign), kOk);
  ASSERT_EQ(aclrtSetCurrentContext(mine), kOk);
  for (const ValueMisuse& m : kValueMisuses) {
    SCOPED_TRACE(m.name);
    void* addr = word_;
    aclrtStream stream = stream_;
    uint32_t flag = 0;
    switch (m.arrange) {
      case kValueNullAddr: addr = nullptr; break;
      case kValueForgedStream: stream = reinterpret_cast<aclrtStream>(0x12345); break;
      case kValueBadFlag: flag = m.wait ? 4 : 1; break;
      case kValueHostMalloc: addr = plain.data(); break;
      case kValuePinnedHost: addr = pinned; break;
      case kValueManaged: addr = managed; break;
      case kValueUnallocated: addr = word_ + 64 * kMiB; break;
      case kValueOtherContext: stream = foreign; break;
      case kValueUnaligned: addr = word_ + 4; break;
    }
    const aclError rc = m.wait ? aclrtValueWait(addr, 0, flag, stream)
                               : aclrtValueWrite(addr, 0, flag, stream);
    EXPECT_EQ(rc, m.expected);
  }
  EXPECT_EQ(aclrtSynchronizeStream(stream_), kOk) << "a refused call queued something";
  EXPECT_EQ(word(), 0u);
  EXPECT_EQ(aclrtDestroyStream(foreign), kOk);
  EXPECT_EQ(aclrtDestroyContext(other), kOk);
  EXPECT_EQ(aclrtFree(managed), kOk);
}

// No current context: the address is checked first (it is device memory), then the context.
TEST_F(ValueTest, NoContextIs107002) {
  std::thread([&] {
    EXPECT_EQ(aclrtValueWrite(word_, 1, 0, nullptr), kNoContext);
    EXPECT_EQ(aclrtValueWait(word_, 1, 0, nullptr), kNoContext);
  }).join();
}

// EDGE, INF and TRAIN families lack the calls (runtime-extra.md §10): 207000 right after the
// NULL check, before the stream is even looked at.
TEST(ValueProducts, OnlyTheFamiliesWithStreamMemoryOperations) {
  struct {
    const char* soc;
    aclError expected;
  } const rows[] = {{"Ascend950PR_9599", kOk}, {"Ascend910_9391", kOk}, {"Ascend910B1", kOk},
                    {"Ascend310B1", kNotSupported}, {"Ascend310P3", kNotSupported},
                    {"Ascend910A", kNotSupported}};
  for (const auto& row : rows) {
    SCOPED_TRACE(row.soc);
    EXPECT_CHILD_OK(run_in_child([&] {
      setenv("ACLVMM_SOC", row.soc, 1);
      if (aclrtSetDevice(0) != kOk) return 10;
      void* p = nullptr;
      if (aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_NORMAL_ONLY) != kOk) return 11;
      const aclrtStream forged = reinterpret_cast<aclrtStream>(0x12345);
      const aclError expect_write = row.expected == kOk ? kBadHandle : row.expected;
      if (aclrtValueWrite(p, 1, 0, forged) != expect_write) return 12;
      if (aclrtValueWait(p, 1, 0, forged) != expect_write) return 13;
      if (row.expected == kOk) {
        if (aclrtValueWrite(p, 1, 0, nullptr) != kOk) return 14;
        if (aclrtSynchronizeStream(nullptr) != kOk) return 15;
      }
      return 0;
    }));
  }
}

}  // namespace
}  // namespace aclvmm_test
