// The fake's copy engine (drivers/fake/fake_copy_engine.h): a broken precondition (size 0, an
// unknown endpoint kind) is a counted violation answered kInvalidArgument; the contract's own
// refusals (nothing mapped, no right, a host pointer its CPU model says faults, no managed range)
// are answers, not violations. A call on a queue that is not live (destroyed, or never made) is a
// counted violation too, and runs nothing.
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kCopyVa = 0x100000000000ull;

class FakeCopyEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(open_fake_backend(config_, &listener_, &be_, &fake_).ok());
    PhysicalSpec spec{Location::device(0), PageType::kHuge, MemType::kHbm, 2 * kMiB};
    ASSERT_TRUE(be_->physical().create(spec, &mem_).ok());
    ASSERT_TRUE(be_->mmu().map(kCopyVa, 2 * kMiB, mem_, 0, InitialAccess::kOwnerReadWrite).ok());
  }
  CopyOutcome copy(CopyEndpoint dst, CopyEndpoint src, uint64_t n, DeviceIndex who = 0) {
    return be_->copy_engine().copy(CopyRequest{dst, src, n, Executor{who, 0}});
  }

  FakeConfig config_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
  FakeBackend* fake_ = nullptr;
  PhysicalId mem_;
};

TEST_F(FakeCopyEngineTest, BrokenPreconditionsAreCountedViolations) {
  std::vector<uint8_t> buffer(64);
  const CopyEndpoint host{reinterpret_cast<uint64_t>(buffer.data()), EndpointKind::kHostMemory};
  const CopyEndpoint odd{kCopyVa, static_cast<EndpointKind>(7)};
  struct Case {
    const char* what;
    bool fill;
    CopyEndpoint dst, src;
    uint64_t size;
  } cases[] = {{"copy of 0 bytes", false, host, host, 0},
               {"fill of 0 bytes", true, host, host, 0},
               {"unknown source kind", false, host, odd, 64},
               {"unknown destination kind", false, odd, host, 64},
               {"fill of an unknown kind", true, odd, host, 64}};
  uint64_t expected = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    CopyOutcome out = c.fill ? be_->copy_engine().fill(FillRequest{c.dst, 1, c.size, {0, 0}})
                             : copy(c.dst, c.src, c.size);
    EXPECT_EQ(out.result.condition(), Condition::kInvalidArgument);
    EXPECT_EQ(fake_->violations(), ++expected);
  }
}

TEST_F(FakeCopyEngineTest, RefusalsOfTheContractAreNoViolations) {
  std::vector<uint8_t> buffer(64, 9);
  const CopyEndpoint host{reinterpret_cast<uint64_t>(buffer.data()), EndpointKind::kHostMemory};
  EXPECT_EQ(
      copy(host, CopyEndpoint{kCopyVa + 2 * kMiB, EndpointKind::kMapped}, 64).result.condition(),
      Condition::kBadAddress);
  EXPECT_EQ(copy(CopyEndpoint{kCopyVa, EndpointKind::kMapped}, host, 64, 1).result.condition(),
            Condition::kNotPermitted);
  EXPECT_EQ(copy(host, CopyEndpoint{kCopyVa, EndpointKind::kHostMemory}, 64).result.condition(),
            Condition::kBadAddress);
  EXPECT_EQ(copy(host, CopyEndpoint{kCopyVa, EndpointKind::kManaged}, 64).result.condition(),
            Condition::kBadAddress)
      << "no managed range there";
  EXPECT_EQ(fake_->violations(), 0u);
  // And the bytes a copy moved are the store's.
  ASSERT_TRUE(copy(CopyEndpoint{kCopyVa + 10, EndpointKind::kMapped}, host, 64).result.ok());
  std::vector<uint8_t> back(64);
  ASSERT_TRUE(fake_->read_physical(mem_, 10, back.data(), 64).ok());
  EXPECT_EQ(back, buffer);
}

TEST_F(FakeCopyEngineTest, CallsOnAQueueThatIsNotLiveAreCountedViolations) {
  QueueId queue;
  ASSERT_TRUE(be_->copy_engine().create_queue(QueueConfig{0, nullptr, nullptr}, &queue).ok());
  be_->copy_engine().destroy_queue(queue);
  std::atomic<int> completions{0};
  Command c;
  c.kind = CommandKind::kHostTask;
  c.task.run = [](void*) { return Result::success(); };
  c.completion = {[](void* n, const CopyOutcome&) { static_cast<std::atomic<int>*>(n)->fetch_add(1); },
                  &completions};
  Fence f = 0;
  const uint64_t before = fake_->violations();
  EXPECT_EQ(be_->copy_engine().submit(queue, c, &f).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(be_->copy_engine().wait(queue, 1, 0).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(be_->copy_engine().completed(queue), 0u);
  be_->copy_engine().destroy_queue(queue);
  be_->copy_engine().destroy_queue(QueueId{0x1234});
  EXPECT_EQ(fake_->violations(), before + 5);
  EXPECT_EQ(completions.load(), 0);
}

}  // namespace
}  // namespace aclvmm::dev::fake
