// The device interface (drivers/device_backend.h and the units it ties together) compiles on its
// own and is complete: a stub of every unit is instantiated, so a pure virtual without its stub,
// or a signature the stub does not match (every stub method says `override`), fails the build.
// The rest checks the few things the headers compute: results and their conditions, the
// conservative capability defaults, the injection gate, and the legacy step names.
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <iterator>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include "drivers/device_backend.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev {
namespace {

const Result kNo = Result::from_errno(EOPNOTSUPP);

class StubDevices final : public DeviceManager {
 public:
  int32_t device_count() const override { return 0; }
  Result properties(DeviceIndex, DeviceProperties*) const override { return kNo; }
  Result open(DeviceIndex) override { return kNo; }
  Result close(DeviceIndex) override { return kNo; }
  Result memory_info(DeviceIndex, MemoryKind, MemoryInfo*) override { return kNo; }
  Result enable_peer(DeviceIndex, DeviceIndex) override { return kNo; }
  Result disable_peer(DeviceIndex, DeviceIndex) override { return kNo; }
  bool can_access_peer(DeviceIndex, DeviceIndex) const override { return false; }
  int32_t bare_tgid() const override { return -1; }
};

class StubWindows final : public AddressWindows {
 public:
  const WindowLayout& layout() const override { return layout_; }
  Result reserve(const ReserveRequest&, uint64_t*) override { return kNo; }
  Result release(uint64_t, uint64_t) override { return kNo; }

 private:
  WindowLayout layout_;
};

class StubPhysical final : public PhysicalAllocator {
 public:
  Result create(const PhysicalSpec&, PhysicalId*) override { return kNo; }
  Result release(PhysicalId) override { return kNo; }
  Result properties(PhysicalId, PhysicalProperties*) const override { return kNo; }
  Result granularity(const PhysicalSpec&, Granularity, uint64_t*) const override { return kNo; }
  Result set_map_route(PhysicalId, uint32_t) override { return kNo; }
  Result map_route(PhysicalId, uint32_t*) const override { return kNo; }
};

class StubBlocks final : public BlockAllocator {
 public:
  Result allocate(const BlockRequest&, Block*) override { return kNo; }
  Result free(uint64_t) override { return kNo; }
};

class StubMmu final : public DeviceMmu {
 public:
  Result map(uint64_t, uint64_t, PhysicalId, uint64_t, InitialAccess) override { return kNo; }
  Result unmap(uint64_t, uint64_t) override { return kNo; }
  Result set_access(uint64_t, uint64_t, const AccessGrant*, size_t, size_t* applied) override {
    *applied = 0;
    return kNo;
  }
  Result access(uint64_t, Location, Access*) const override { return kNo; }
  Result grant_peer(uint64_t, uint64_t, DeviceIndex) override { return kNo; }
  Result query(uint64_t, AddressInfo*) const override { return kNo; }
  Result register_host(uint64_t, uint64_t, DeviceIndex, bool) override { return kNo; }
  Result unregister_host(uint64_t, uint64_t, DeviceIndex, bool) override { return kNo; }
};

class StubCopyEngine final : public CopyEngine {
 public:
  CopyOutcome copy(const CopyRequest&) override { return CopyOutcome{kNo, {}, 0}; }
  CopyOutcome fill(const FillRequest&) override { return CopyOutcome{kNo, {}, 0}; }
  Result create_queue(const QueueConfig&, QueueId*) override { return kNo; }
  void destroy_queue(QueueId) override {}
  void cancel(QueueId) override {}
  Result submit(QueueId, const Command&, Fence*) override { return kNo; }
  Result wait(QueueId, Fence, int) override { return kNo; }
  Fence completed(QueueId) const override { return 0; }
};

class StubSharing final : public Sharing {
 public:
  Result export_memory(PhysicalId, ShareToken*) override { return kNo; }
  Result export_fabric(PhysicalId, FabricToken*) override { return kNo; }
  Result disable_validation(ShareToken) override { return kNo; }
  Result set_pids(ShareToken, const int32_t*, uint32_t) override { return kNo; }
  Result token_of_fabric(const FabricToken&, ShareToken*) override { return kNo; }
  Result import_memory(ShareToken, DeviceIndex, ImportedMemory*) override { return kNo; }
  Result import_fabric(const FabricToken&, DeviceIndex, ImportedMemory*) override { return kNo; }
};

class StubUnified final : public UnifiedMemory {
 public:
  Result allocate(uint64_t, uint64_t*) override { return kNo; }
  Result free(uint64_t, FreeMode) override { return kNo; }
  Result advise(uint64_t, uint64_t, ManagedAdvice, Location) override { return kNo; }
  Result prefetch(uint64_t, uint64_t, Location) override { return kNo; }
  Result attribute(ManagedAttribute, uint64_t, uint64_t, int32_t*, size_t) override { return kNo; }
  ManagedTracking tracking() const override { return {}; }
};

class StubHost final : public HostServices {
 public:
  uint64_t page_size() const override { return 4096; }
  uint64_t memory_total() override { return 0; }
  uint64_t memory_free() override { return 0; }
  int32_t numa_node_count() const override { return 0; }
  int32_t current_numa_node() override { return 0; }
  Result create_statistics_segment(const std::string&, const std::string&, size_t,
                                   std::shared_ptr<StatisticsSegment>*) override {
    return kNo;
  }
  void* allocate_table(uint64_t) override { return nullptr; }
};

class StubSegment final : public StatisticsSegment {
 public:
  void* data() override { return nullptr; }
  size_t size() const override { return 0; }
  const SegmentOwner& owner() const override { return owner_; }
  const std::string& path() const override { return path_; }
  Result publish() override { return kNo; }
  void withdraw() override {}

 private:
  SegmentOwner owner_;
  std::string path_;
};

class StubBackend final : public DeviceBackend {
 public:
  const char* name() const override { return "stub"; }
  const Capabilities& capabilities() const override { return capabilities_; }
  DeviceManager& devices() override { return devices_; }
  AddressWindows& windows() override { return windows_; }
  PhysicalAllocator& physical() override { return physical_; }
  BlockAllocator& blocks() override { return blocks_; }
  DeviceMmu& mmu() override { return mmu_; }
  CopyEngine& copy_engine() override { return copy_engine_; }
  Sharing& sharing() override { return sharing_; }
  UnifiedMemory& unified_memory() override { return unified_; }
  HostServices& host() override { return host_; }
  std::string describe(Result r) const override { return "errno " + std::to_string(r.errno_value()); }
  void visit_statistics(StatisticsVisitor& v) const override { v.counter("ipc", "imports_denied", 0); }
  void prepare_fork() override {}
  void after_fork_parent() override {}
  void after_fork_child() override {}
  void release_inherited() override {}

 private:
  Capabilities capabilities_;
  StubDevices devices_;
  StubWindows windows_;
  StubPhysical physical_;
  StubBlocks blocks_;
  StubMmu mmu_;
  StubCopyEngine copy_engine_;
  StubSharing sharing_;
  StubUnified unified_;
  StubHost host_;
};

class StubListener final : public BackendListener {
 public:
  void log(Severity, const char*, const char*) noexcept override {}
  void residency_event(const ResidencyEvent&) noexcept override {}
  void usage_changed(DeviceIndex, int64_t) noexcept override {}
  const std::atomic<bool>& injection_armed() const noexcept override { return armed; }
  int injected(const char* step) noexcept override {
    ++asked;
    return std::strcmp(step, steps::kMmuMap) == 0 ? code : 0;
  }
  std::atomic<bool> armed{false};
  int code = ENOMEM;
  int asked = 0;
};

class StubVisitor final : public StatisticsVisitor {
 public:
  void counter(const char*, const char*, uint64_t) override { ++counters; }
  void flag(const char*, const char*, bool) override {}
  int counters = 0;
};

static_assert(std::is_same_v<decltype(&open_device_backend),
                             Result (*)(const std::string&, const BackendOptions&,
                                        BackendListener*, std::unique_ptr<DeviceBackend>*)>,
              "the factory keeps its documented signature");
static_assert(sizeof(Result) == 4 && std::is_trivially_copyable_v<Result>,
              "a Result costs what an int did");
static_assert(std::is_trivially_copyable_v<Command>, "commands cross threads by copy");

TEST(DeviceInterfaceTest, EveryUnitHasAStubAndEveryStubAnswers) {
  StubBackend backend;
  DeviceBackend& be = backend;
  EXPECT_EQ(be.devices().open(0), kNo);
  uint64_t va = 0;
  EXPECT_EQ(be.windows().reserve(ReserveRequest{}, &va), kNo);
  PhysicalId id;
  EXPECT_EQ(be.physical().create(PhysicalSpec{}, &id), kNo);
  Block block;
  EXPECT_EQ(be.blocks().allocate(BlockRequest{}, &block), kNo);
  size_t applied = 7;
  const AccessGrant grant{Location::host(), Access::kReadWrite};
  EXPECT_EQ(be.mmu().set_access(0, 0, &grant, 1, &applied), kNo);
  EXPECT_EQ(applied, 0u);
  EXPECT_EQ(be.copy_engine().copy(CopyRequest{}).result, kNo);
  ShareToken token;
  EXPECT_EQ(be.sharing().export_memory(id, &token), kNo);
  EXPECT_EQ(be.unified_memory().allocate(2 * kMiB, &va), kNo);
  EXPECT_EQ(be.host().page_size(), 4096u);
  StubSegment segment;
  EXPECT_EQ(segment.publish(), kNo);
  StubVisitor visitor;
  be.visit_statistics(visitor);
  EXPECT_EQ(visitor.counters, 1);
}

struct ConditionCase {
  Result result;
  Condition condition;
};

TEST(DeviceInterfaceTest, ResultsOfBothDomainsNameTheirCondition) {
  const ConditionCase cases[] = {
      {Result::success(), Condition::kOk},
      {Result::from_errno(EINVAL), Condition::kInvalidArgument},
      {Result::from_errno(EFAULT), Condition::kBadAddress},
      {Result::from_errno(ENOMEM), Condition::kOutOfMemory},
      {Result::from_errno(EAGAIN), Condition::kNoResources},
      {Result::from_errno(EMFILE), Condition::kNoResources},
      {Result::from_errno(EOPNOTSUPP), Condition::kNotSupported},
      {Result::from_errno(EACCES), Condition::kNotPermitted},
      {Result::from_errno(EPERM), Condition::kNotPermitted},
      {Result::from_errno(EEXIST), Condition::kBusy},
      {Result::from_errno(ECONNREFUSED), Condition::kNotFound},
      {Result::from_errno(ETIMEDOUT), Condition::kTimedOut},
      {Result::from_errno(ECANCELED), Condition::kCancelled},
      {Result::from_errno(ENODEV), Condition::kDeviceLost},
      {Result::from_errno(EDOM), Condition::kOther},
      {Result::from_driver(3), Condition::kInvalidArgument},     // INVALID_VALUE
      {Result::from_driver(8), Condition::kInvalidArgument},     // PARA_ERROR
      {Result::from_driver(4), Condition::kBadAddress},          // INVALID_HANDLE
      {Result::from_driver(6), Condition::kOutOfMemory},         // OUT_OF_MEMORY
      {Result::from_driver(14), Condition::kNoResources},        // NO_RESOURCES
      {Result::from_driver(0xfffe), Condition::kNotSupported},   // NOT_SUPPORT
      {Result::from_driver(46), Condition::kNotPermitted},       // OPER_NOT_PERMITTED
      {Result::from_driver(13), Condition::kBusy},               // BUSY
      {Result::from_driver(10), Condition::kBusy},               // REPEATED_INIT
      {Result::from_driver(9), Condition::kInvalidArgument},     // UNINIT
      {Result::from_driver(11), Condition::kNotFound},           // NOT_EXIST
      {Result::from_driver(16), Condition::kTimedOut},           // WAIT_TIMEOUT
      {Result::from_driver(33), Condition::kDeviceLost},         // BUS_DOWN
      {Result::from_driver(17), Condition::kOther},              // IOCRL_FAIL
  };
  for (const ConditionCase& c : cases) {
    EXPECT_EQ(c.result.condition(), c.condition) << "raw " << c.result.raw();
  }
}

TEST(DeviceInterfaceTest, TheTwoDomainsStayApart) {
  const Result e = Result::from_errno(ENOMEM);
  EXPECT_TRUE(e.is_errno());
  EXPECT_FALSE(e.is_driver());
  EXPECT_EQ(e.errno_value(), ENOMEM);
  EXPECT_EQ(e.driver_value(), 0u);
  EXPECT_EQ(e.raw(), -ENOMEM);
  EXPECT_EQ(Result::from_raw(-ENOMEM), e);
  const Result d = Result::from_driver(0xfffe);
  EXPECT_TRUE(d.is_driver());
  EXPECT_EQ(d.errno_value(), 0);
  EXPECT_EQ(d.driver_value(), 0xfffeu);
  EXPECT_TRUE(Result().ok());
}

TEST(DeviceInterfaceTest, SpelledOutErrnosAreTheSystemsOwn) {
  const std::pair<int, int> pairs[] = {
      {detail::kEPERM, EPERM},         {detail::kENOENT, ENOENT},
      {detail::kESRCH, ESRCH},         {detail::kEIO, EIO},
      {detail::kENXIO, ENXIO},         {detail::kEAGAIN, EAGAIN},
      {detail::kENOMEM, ENOMEM},       {detail::kEACCES, EACCES},
      {detail::kEFAULT, EFAULT},       {detail::kEBUSY, EBUSY},
      {detail::kEEXIST, EEXIST},       {detail::kENODEV, ENODEV},
      {detail::kEINVAL, EINVAL},       {detail::kENFILE, ENFILE},
      {detail::kEMFILE, EMFILE},       {detail::kENOSPC, ENOSPC},
      {detail::kEADDRINUSE, EADDRINUSE}, {detail::kEOPNOTSUPP, EOPNOTSUPP},
      {detail::kETIMEDOUT, ETIMEDOUT}, {detail::kECONNREFUSED, ECONNREFUSED},
      {detail::kECANCELED, ECANCELED},
  };
  for (const auto& [spelled, system] : pairs) EXPECT_EQ(spelled, system);
}

TEST(DeviceInterfaceTest, CapabilitiesClaimNothingByDefault) {
  const Capabilities c;
  const bool claims[] = {c.map_without_access,  c.access_none_and_read,
                         c.cpu_visible_device_memory, c.cpu_visible_host_memory,
                         c.map_routes,
                         c.host_tasks,          c.host_numa,
                         c.sharing,             c.fabric_sharing,
                         c.disable_validation,  c.managed_memory,
                         c.managed_residency,   c.managed_write_tracking,
                         c.authoritative_queries};
  for (bool claim : claims) EXPECT_FALSE(claim);
  EXPECT_EQ(c.giant_page, 0u);
  EXPECT_EQ(c.map_granule, 2 * kMiB);
}

TEST(DeviceInterfaceTest, AnUnarmedGateAsksNobody) {
  StubListener listener;
  InjectionGate gate(listener);
  EXPECT_TRUE(gate.check(steps::kMmuMap).ok());
  EXPECT_EQ(listener.asked, 0);
  listener.armed = true;
  EXPECT_EQ(gate.check(steps::kMmuMap), Result::from_errno(ENOMEM));
  EXPECT_TRUE(gate.check(steps::kMmuUnmap).ok());
  EXPECT_EQ(listener.asked, 2);
}

// Every step name the old seam's decorator accepted (before issue 14): each still names a step.
const char* const kTodaysStepNames[] = {
    "drv.adopt_physical",  "drv.allocate_table",  "drv.bind_numa",
    "drv.claim_fixed",     "drv.claim_window",    "drv.create_physical",
    "drv.fill",            "drv.host_copy",       "drv.host_fill",
    "drv.map_cpu",         "drv.populate",        "drv.read",
    "drv.release_window",  "drv.share_accept",    "drv.share_connect",
    "drv.share_listen",    "drv.share_poll",      "drv.share_recv",
    "drv.share_send",      "drv.stats_segment",   "drv.uffd_allow_writes",
    "drv.uffd_next_fault", "drv.uffd_protect_writes", "drv.uffd_resolve",
    "drv.uffd_resolve_read_only", "drv.uffd_revoke", "drv.uffd_start",
    "drv.uffd_unwatch",    "drv.uffd_watch",      "drv.unmap_cpu",
    "drv.write",
};

TEST(DeviceInterfaceTest, EveryLegacyStepNameLeadsToOneCurrentStep) {
  std::set<std::string> targets;
  for (const char* legacy : kTodaysStepNames) {
    const std::string current = steps::current_step_name(legacy);
    EXPECT_NE(current, legacy) << legacy << " has no current name";
    EXPECT_NE(current.rfind("drv.", 0), 0u) << legacy << " leads to another legacy name";
    EXPECT_TRUE(targets.insert(current).second) << legacy << " shares its step with another name";
  }
  EXPECT_EQ(std::size(steps::kLegacyStepNames), std::size(kTodaysStepNames));
  EXPECT_STREQ(steps::current_step_name(steps::kEmuCpuMap), steps::kEmuCpuMap);
  EXPECT_STREQ(steps::current_step_name("drv.map_cpux"), "drv.map_cpux");
  EXPECT_STREQ(steps::current_step_name("drv.map"), "drv.map");
}

}  // namespace
}  // namespace aclvmm::dev
