// The injection decorator (drivers/injection/): each "dev.*" step fails its operation without
// reaching the wrapped backend, every interface step but dev.queue.execute has an operation here,
// queries never consume a rule, and an unarmed decorator only forwards.
#include <cerrno>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "drivers/injection/injecting_backend.h"
#include "drivers/injection_steps.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::injection {
namespace {

constexpr int kCode = EXDEV;

// Every operation succeeds and counts: the test sees whether the decorator called through.
struct Calls {
  int n = 0;
  void count() { ++n; }
  Result ok() { count(); return Result::success(); }
};

class CountingDevices final : public DeviceManager {
 public:
  explicit CountingDevices(Calls& c) : c_(c) {}
  int32_t device_count() const override { c_.count(); return 2; }
  Result properties(DeviceIndex, DeviceProperties*) const override { return c_.ok(); }
  Result open(DeviceIndex) override { return c_.ok(); }
  Result close(DeviceIndex) override { return c_.ok(); }
  Result memory_info(DeviceIndex, MemoryKind, MemoryInfo*) override { return c_.ok(); }
  Result enable_peer(DeviceIndex, DeviceIndex) override { return c_.ok(); }
  Result disable_peer(DeviceIndex, DeviceIndex) override { return c_.ok(); }
  bool can_access_peer(DeviceIndex, DeviceIndex) const override { return c_.ok().ok(); }
  int32_t bare_tgid() const override { return c_.ok().ok() ? 7 : 0; }
 private:
  Calls& c_;
};

class CountingWindows final : public AddressWindows {
 public:
  explicit CountingWindows(Calls& c) : c_(c) {}
  const WindowLayout& layout() const override { c_.count(); return layout_; }
  Result reserve(const ReserveRequest&, uint64_t*) override { return c_.ok(); }
  Result release(uint64_t, uint64_t) override { return c_.ok(); }
 private:
  Calls& c_;
  WindowLayout layout_;
};

class CountingPhysical final : public PhysicalAllocator {
 public:
  explicit CountingPhysical(Calls& c) : c_(c) {}
  Result create(const PhysicalSpec&, PhysicalId*) override { return c_.ok(); }
  Result release(PhysicalId) override { return c_.ok(); }
  Result properties(PhysicalId, PhysicalProperties*) const override { return c_.ok(); }
  Result granularity(const PhysicalSpec&, Granularity, uint64_t*) const override { return c_.ok(); }
  Result set_map_route(PhysicalId, uint32_t) override { return c_.ok(); }
  Result map_route(PhysicalId, uint32_t*) const override { return c_.ok(); }
 private:
  Calls& c_;
};

class CountingBlocks final : public BlockAllocator {
 public:
  explicit CountingBlocks(Calls& c) : c_(c) {}
  Result allocate(const BlockRequest&, Block*) override { return c_.ok(); }
  Result free(uint64_t) override { return c_.ok(); }
 private:
  Calls& c_;
};

class CountingMmu final : public DeviceMmu {
 public:
  explicit CountingMmu(Calls& c) : c_(c) {}
  Result map(uint64_t, uint64_t, PhysicalId, uint64_t, InitialAccess) override { return c_.ok(); }
  Result unmap(uint64_t, uint64_t) override { return c_.ok(); }
  Result set_access(uint64_t, uint64_t, const AccessGrant*, size_t count, size_t* applied) override {
    *applied = count;
    return c_.ok();
  }
  Result access(uint64_t, Location, Access*) const override { return c_.ok(); }
  Result grant_peer(uint64_t, uint64_t, DeviceIndex) override { return c_.ok(); }
  Result query(uint64_t, AddressInfo*) const override { return c_.ok(); }
  Result register_host(uint64_t, uint64_t, DeviceIndex, bool) override { return c_.ok(); }
  Result unregister_host(uint64_t, uint64_t, DeviceIndex, bool) override { return c_.ok(); }
 private:
  Calls& c_;
};

class CountingCopyEngine final : public CopyEngine {
 public:
  explicit CountingCopyEngine(Calls& c) : c_(c) {}
  CopyOutcome copy(const CopyRequest&) override { return CopyOutcome{c_.ok(), {}, 0}; }
  CopyOutcome fill(const FillRequest&) override { return CopyOutcome{c_.ok(), {}, 0}; }
  Result create_queue(const QueueConfig&, QueueId*) override { return c_.ok(); }
  void destroy_queue(QueueId) override { c_.count(); }
  void cancel(QueueId) override { c_.count(); }
  Result submit(QueueId, const Command&, Fence*) override { return c_.ok(); }
  Result wait(QueueId, Fence, int) override { return c_.ok(); }
  Fence completed(QueueId) const override { return c_.ok().ok() ? 5 : 0; }
 private:
  Calls& c_;
};

class CountingSharing final : public Sharing {
 public:
  explicit CountingSharing(Calls& c) : c_(c) {}
  Result export_memory(PhysicalId, ShareToken*) override { return c_.ok(); }
  Result export_fabric(PhysicalId, FabricToken*) override { return c_.ok(); }
  Result disable_validation(ShareToken) override { return c_.ok(); }
  Result set_pids(ShareToken, const int32_t*, uint32_t) override { return c_.ok(); }
  Result token_of_fabric(const FabricToken&, ShareToken*) override { return c_.ok(); }
  Result import_memory(ShareToken, DeviceIndex, ImportedMemory*) override { return c_.ok(); }
  Result import_fabric(const FabricToken&, DeviceIndex, ImportedMemory*) override { return c_.ok(); }
 private:
  Calls& c_;
};

class CountingUnified final : public UnifiedMemory {
 public:
  explicit CountingUnified(Calls& c) : c_(c) {}
  Result allocate(uint64_t, uint64_t*) override { return c_.ok(); }
  Result free(uint64_t, FreeMode) override { return c_.ok(); }
  Result advise(uint64_t, uint64_t, ManagedAdvice, Location) override { return c_.ok(); }
  Result prefetch(uint64_t, uint64_t, Location) override { return c_.ok(); }
  Result attribute(ManagedAttribute, uint64_t, uint64_t, int32_t*, size_t) override { return c_.ok(); }
  ManagedTracking tracking() const override { c_.count(); return {}; }
 private:
  Calls& c_;
};

class CountingHost final : public HostServices {
 public:
  explicit CountingHost(Calls& c) : c_(c) {}
  uint64_t page_size() const override { c_.count(); return 4096; }
  uint64_t memory_total() override { c_.count(); return 1; }
  uint64_t memory_free() override { c_.count(); return 1; }
  int32_t numa_node_count() const override { c_.count(); return 0; }
  int32_t current_numa_node() override { c_.count(); return 0; }
  Result create_statistics_segment(const std::string&, const std::string&, size_t,
                                   std::shared_ptr<StatisticsSegment>*) override { return c_.ok(); }
  void* allocate_table(uint64_t) override { c_.count(); return &table_; }
 private:
  Calls& c_;
  uint64_t table_ = 0;
};

class CountingBackend final : public DeviceBackend {
 public:
  explicit CountingBackend(Calls& c)
      : devices_(c), windows_(c), physical_(c), blocks_(c), mmu_(c), copy_(c), sharing_(c),
        unified_(c), host_(c) {}
  const char* name() const override { return "counting"; }
  const Capabilities& capabilities() const override { return caps_; }
  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  BlockAllocator& blocks() override { return blocks_; }
  DeviceMmu& mmu() override { return mmu_; }
  CopyEngine& copy_engine() override { return copy_; }
  Sharing& sharing() override { return sharing_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }
  std::string describe(Result) const override { return "counted"; }
  void visit_statistics(StatisticsVisitor&) const override {}
  void prepare_fork() override {}
  void after_fork_parent() override {}
  void after_fork_child() override {}
  void release_inherited() override {}
 private:
  Capabilities caps_;
  CountingDevices devices_;
  CountingWindows windows_;
  CountingPhysical physical_;
  CountingBlocks blocks_;
  CountingMmu mmu_;
  CountingCopyEngine copy_;
  CountingSharing sharing_;
  CountingUnified unified_;
  CountingHost host_;
};

class InjectingBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(wrap_with_injection(std::make_unique<CountingBackend>(calls_), listener_, &be_).ok());
  }
  Calls calls_;
  testing::RecordingListener listener_;
  std::unique_ptr<DeviceBackend> be_;
};

struct StepOperation {
  const char* step;
  std::function<Result(DeviceBackend&)> run;
};

Result of_table(void* table) { return table != nullptr ? Result::success() : Result::from_errno(kCode); }

std::vector<StepOperation> step_operations() {
  static FabricToken fabric;
  static const AccessGrant grant{Location::host(), Access::kReadWrite};
  return {
      {steps::kDeviceOpen, [](DeviceBackend& b) { return b.devices().open(0); }},
      {steps::kDeviceClose, [](DeviceBackend& b) { return b.devices().close(0); }},
      {steps::kDevicePeer, [](DeviceBackend& b) { return b.devices().enable_peer(0, 1); }},
      {steps::kWindowReserve, [](DeviceBackend& b) { uint64_t a; return b.windows().reserve({}, &a); }},
      {steps::kWindowRelease, [](DeviceBackend& b) { return b.windows().release(0, 0); }},
      {steps::kPhysicalCreate, [](DeviceBackend& b) { PhysicalId id; return b.physical().create({}, &id); }},
      {steps::kPhysicalRelease, [](DeviceBackend& b) { return b.physical().release(PhysicalId{1}); }},
      {steps::kPhysicalRoute, [](DeviceBackend& b) { return b.physical().set_map_route(PhysicalId{1}, 1); }},
      {steps::kBlockAllocate, [](DeviceBackend& b) { Block k; return b.blocks().allocate({}, &k); }},
      {steps::kBlockFree, [](DeviceBackend& b) { return b.blocks().free(0); }},
      {steps::kMmuMap, [](DeviceBackend& b) { return b.mmu().map(0, 0, {}, 0, InitialAccess::kNone); }},
      {steps::kMmuUnmap, [](DeviceBackend& b) { return b.mmu().unmap(0, 0); }},
      {steps::kMmuSetAccess, [](DeviceBackend& b) {
         size_t applied = 9;
         Result r = b.mmu().set_access(0, 0, &grant, 1, &applied);
         EXPECT_EQ(applied, r.ok() ? 1u : 0u) << "an injected failure applied nothing";
         return r;
       }},
      {steps::kMmuGrantPeer, [](DeviceBackend& b) { return b.mmu().grant_peer(0, 0, 1); }},
      {steps::kMmuRegisterHost,
       [](DeviceBackend& b) { return b.mmu().register_host(0, 4096, 0, false); }},
      {steps::kCopySync, [](DeviceBackend& b) {
         CopyOutcome o = b.copy_engine().copy({});
         if (!o.result.ok()) {
           EXPECT_EQ(o.failed_side, CopyOutcome::Side::kNone);
         }
         return o.result;
       }},
      {steps::kFillSync, [](DeviceBackend& b) { return b.copy_engine().fill({}).result; }},
      {steps::kQueueCreate, [](DeviceBackend& b) { QueueId q; return b.copy_engine().create_queue({}, &q); }},
      {steps::kQueueSubmit, [](DeviceBackend& b) { Fence f; return b.copy_engine().submit({}, {}, &f); }},
      {steps::kShareExport, [](DeviceBackend& b) { ShareToken t; return b.sharing().export_memory({}, &t); }},
      {steps::kShareExport, [](DeviceBackend& b) { return b.sharing().export_fabric({}, &fabric); }},
      {steps::kShareDisableValidation, [](DeviceBackend& b) { return b.sharing().disable_validation({}); }},
      {steps::kShareSetPids, [](DeviceBackend& b) { int32_t p = 1; return b.sharing().set_pids({}, &p, 1); }},
      {steps::kShareImport, [](DeviceBackend& b) { ImportedMemory m; return b.sharing().import_memory({}, 0, &m); }},
      {steps::kShareImport, [](DeviceBackend& b) { ImportedMemory m; return b.sharing().import_fabric(fabric, 0, &m); }},
      {steps::kManagedAllocate, [](DeviceBackend& b) { uint64_t a; return b.unified_memory().allocate(0, &a); }},
      {steps::kManagedFree, [](DeviceBackend& b) { return b.unified_memory().free(0, FreeMode::kNormal); }},
      {steps::kManagedAdvise, [](DeviceBackend& b) {
         return b.unified_memory().advise(0, 0, ManagedAdvice::kReadMostly, Location::host());
       }},
      {steps::kManagedPrefetch, [](DeviceBackend& b) { return b.unified_memory().prefetch(0, 0, Location::host()); }},
      {steps::kHostStatsSegment, [](DeviceBackend& b) {
         std::shared_ptr<StatisticsSegment> s;
         return b.host().create_statistics_segment("d", "p", 1, &s);
       }},
      {steps::kHostTable, [](DeviceBackend& b) { return of_table(b.host().allocate_table(8)); }},
  };
}

TEST_F(InjectingBackendTest, AFiredStepNeverReachesTheWrappedBackend) {
  for (const StepOperation& op : step_operations()) {
    SCOPED_TRACE(op.step);
    calls_.n = 0;
    EXPECT_TRUE(op.run(*be_).ok());
    EXPECT_EQ(calls_.n, 1) << "unarmed: forwarded once";
    listener_.arm(op.step, 2, kCode);
    EXPECT_TRUE(op.run(*be_).ok()) << "the 1st execution of a rule armed for the 2nd";
    EXPECT_EQ(op.run(*be_), Result::from_errno(kCode));
    EXPECT_EQ(calls_.n, 2) << "the failed execution did not reach the backend";
    EXPECT_FALSE(listener_.armed(op.step));
    EXPECT_TRUE(op.run(*be_).ok()) << "a rule fires once";
  }
}

TEST_F(InjectingBackendTest, EveryInterfaceStepButQueueExecuteHasAnOperation) {
  std::set<std::string> covered;
  for (const StepOperation& op : step_operations()) covered.insert(op.step);
  std::set<std::string> declared(std::begin(steps::kInterfaceSteps), std::end(steps::kInterfaceSteps));
  declared.erase(steps::kQueueExecute);  // checked by a backend's queue when the command runs
  EXPECT_EQ(covered, declared);
}

TEST_F(InjectingBackendTest, QueriesAndForwardersConsumeNoRule) {
  for (const char* step : steps::kInterfaceSteps) listener_.arm(step, 1, kCode);
  DeviceBackend& b = *be_;
  DeviceProperties props;
  MemoryInfo info;
  PhysicalProperties pp;
  uint64_t value = 0;
  uint32_t route = 0;
  Access access;
  AddressInfo where;
  ShareToken token;
  int32_t attr = 0;
  calls_.n = 0;
  EXPECT_EQ(b.devices().device_count(), 2);
  EXPECT_TRUE(b.devices().properties(0, &props).ok());
  EXPECT_TRUE(b.devices().memory_info(0, MemoryKind::kHbm, &info).ok());
  EXPECT_TRUE(b.devices().disable_peer(0, 1).ok());
  EXPECT_TRUE(b.devices().can_access_peer(0, 1));
  EXPECT_EQ(b.devices().bare_tgid(), 7);
  (void)b.windows().layout();
  EXPECT_TRUE(b.physical().properties(PhysicalId{1}, &pp).ok());
  EXPECT_TRUE(b.physical().granularity({}, Granularity::kMinimum, &value).ok());
  EXPECT_TRUE(b.physical().map_route(PhysicalId{1}, &route).ok());
  EXPECT_TRUE(b.mmu().access(0, Location::host(), &access).ok());
  EXPECT_TRUE(b.mmu().query(0, &where).ok());
  b.copy_engine().destroy_queue(QueueId{1});
  EXPECT_TRUE(b.copy_engine().wait(QueueId{1}, 1, 0).ok());
  EXPECT_EQ(b.copy_engine().completed(QueueId{1}), 5u);
  EXPECT_TRUE(b.sharing().token_of_fabric(FabricToken{}, &token).ok());
  EXPECT_TRUE(b.unified_memory().attribute(ManagedAttribute::kReadMostly, 0, 0, &attr, 1).ok());
  (void)b.unified_memory().tracking();
  EXPECT_EQ(b.host().page_size(), 4096u);
  (void)b.host().memory_total();
  (void)b.host().memory_free();
  (void)b.host().numa_node_count();
  (void)b.host().current_numa_node();
  EXPECT_EQ(calls_.n, 23) << "every query reached the backend";
  EXPECT_EQ(listener_.asked(), 0u) << "no query asked for a rule";
  EXPECT_STREQ(b.name(), "counting");
  EXPECT_EQ(b.describe(Result::from_errno(EIO)), "counted");
}

TEST_F(InjectingBackendTest, NothingToWrapIsRefused) {
  std::unique_ptr<DeviceBackend> out;
  EXPECT_EQ(wrap_with_injection(nullptr, listener_, &out).condition(), Condition::kInvalidArgument);
  EXPECT_EQ(out, nullptr);
}

}  // namespace
}  // namespace aclvmm::dev::injection
