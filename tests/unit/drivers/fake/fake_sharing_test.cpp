// The fake's Sharing unit (drivers/fake/fake_sharing.h) beyond the conformance cases: what the
// core must never do is a counted violation, the world's tokens are deterministic, an import is
// charged to nobody, and imports survive their exporter's backend.
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "drivers/fake/fake_backend.h"
#include "drivers/fake/fake_world.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kSize = 2 * kMiB;

struct Process {
  explicit Process(const std::shared_ptr<FakeWorld>& world, int32_t pid) {
    FakeConfig config;
    config.world = world;
    config.pid = pid;
    EXPECT_TRUE(open_fake_backend(config, &listener, &be, &bare).ok());
  }
  PhysicalId make(DeviceIndex device) {
    PhysicalId id;
    EXPECT_TRUE(be->physical()
                    .create(PhysicalSpec{Location::device(device), PageType::kHuge, MemType::kHbm,
                                         kSize},
                            &id)
                    .ok());
    return id;
  }
  testing::RecordingListener listener;
  std::unique_ptr<DeviceBackend> be;
  FakeBackend* bare = nullptr;
};

// Table of misuse: each call breaks a precondition the core guarantees, and is counted.
TEST(FakeSharingTest, CoreMisuseIsACountedViolation) {
  auto world = std::make_shared<FakeWorld>();
  Process p(world, 10);
  const PhysicalId id = p.make(0);
  ShareToken token;
  ASSERT_TRUE(p.be->sharing().export_memory(id, &token).ok());
  ImportedMemory imported;
  struct Case {
    const char* what;
    Result (*call)(Sharing&, PhysicalId, ShareToken, ImportedMemory*);
  };
  const Case cases[] = {
      {"export of a forged id",
       [](Sharing& s, PhysicalId, ShareToken, ImportedMemory*) {
         ShareToken t;
         return s.export_memory(PhysicalId{12345}, &t);
       }},
      {"export without a result",
       [](Sharing& s, PhysicalId m, ShareToken, ImportedMemory*) {
         return s.export_memory(m, nullptr);
       }},
      {"import onto no device",
       [](Sharing& s, PhysicalId, ShareToken t, ImportedMemory* out) {
         return s.import_memory(t, 7, out);
       }},
      {"import without a result",
       [](Sharing& s, PhysicalId, ShareToken t, ImportedMemory*) {
         return s.import_memory(t, 1, nullptr);
       }},
      {"set_pids without a list",
       [](Sharing& s, PhysicalId, ShareToken t, ImportedMemory*) {
         return s.set_pids(t, nullptr, 2);
       }},
  };
  uint64_t expected = 0;
  for (const Case& c : cases) {
    EXPECT_EQ(c.call(p.be->sharing(), id, token, &imported).condition(),
              Condition::kInvalidArgument)
        << c.what;
    EXPECT_EQ(p.bare->violations(), ++expected) << c.what;
  }
  // Defined answers are not violations: unknown token, own export onto the same device.
  EXPECT_EQ(p.be->sharing().import_memory(ShareToken{token.value + 1}, 0, &imported).condition(),
            Condition::kBadAddress);
  EXPECT_EQ(p.be->sharing().import_memory(token, 0, &imported).condition(),
            Condition::kNotPermitted);
  EXPECT_EQ(p.bare->violations(), expected);
  EXPECT_TRUE(p.be->physical().release(id).ok());
}

// The same calls give the same tokens in every world; an import is charged to nobody, and its
// bytes outlive the exporter's backend.
TEST(FakeSharingTest, TokensAreDeterministicAndImportsOutliveTheExporter) {
  uint64_t first = 0;
  for (int round = 0; round < 2; ++round) {
    auto world = std::make_shared<FakeWorld>();
    auto exporter = std::make_unique<Process>(world, 10);
    Process importer(world, 11);
    const PhysicalId id = exporter->make(1);
    const uint8_t mark = 0x77;
    ASSERT_TRUE(exporter->bare->write_physical(id, 4096, &mark, 1).ok());
    ShareToken token;
    ASSERT_TRUE(exporter->be->sharing().export_memory(id, &token).ok());
    if (round == 0) first = token.value;
    EXPECT_EQ(token.value, first) << "round " << round;
    const int32_t pid = 11;
    ASSERT_TRUE(exporter->be->sharing().set_pids(token, &pid, 1).ok());
    MemoryInfo before;
    ASSERT_TRUE(importer.be->devices().memory_info(1, MemoryKind::kHbm, &before).ok());
    ImportedMemory imported;
    ASSERT_TRUE(importer.be->sharing().import_memory(token, 1, &imported).ok());
    MemoryInfo after;
    ASSERT_TRUE(importer.be->devices().memory_info(1, MemoryKind::kHbm, &after).ok());
    EXPECT_EQ(after.free, before.free) << "an import was charged to the importer";
    exporter.reset();  // the exporting process exits
    uint8_t seen = 0;
    ASSERT_TRUE(importer.bare->read_physical(imported.memory, 4096, &seen, 1).ok());
    EXPECT_EQ(seen, mark);
    EXPECT_EQ(importer.be->sharing().import_memory(token, 0, &imported).condition(),
              Condition::kBadAddress);
    EXPECT_TRUE(importer.be->physical().release(imported.memory).ok());
    EXPECT_EQ(importer.bare->violations(), 0u);
  }
}

}  // namespace
}  // namespace aclvmm::dev::fake
