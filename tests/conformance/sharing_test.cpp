// Conformance of Sharing (docs/device-interface.md §9, C28-C36): tokens, the whitelist and its
// enforcement by the backend, the same-process rules, FABRIC blobs, an exporter's end. The
// second process is the harness's PeerProcess.
#include <cstring>
#include <vector>

#include "conformance/sharing_case.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::kMiB;
using dev::Location;
using dev::PhysicalId;
using dev::ShareToken;

constexpr uint64_t kShareSize = 2 * kMiB;

class SharingConformance : public SharingCase {
 protected:
  void SetUp() override {
    SharingCase::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    if (!be().capabilities().sharing) GTEST_SKIP() << "capability sharing is false";
  }
  // Device memory of `device` whose bytes are all `value`, released at the end of the case.
  PhysicalId make(dev::DeviceIndex device, uint8_t value) {
    return make_filled(device, kShareSize, value);
  }
  ShareToken exported(PhysicalId id) {
    ShareToken token;
    EXPECT_TRUE(be().sharing().export_memory(id, &token).ok());
    return token;
  }
};

// C28: a new token: non-zero, bits 40-63 zero, the device field the exporter's; a second export
// and an export of an import are kInvalidArgument.
TEST_P(SharingConformance, C28_ExportGivesAVendorShapedToken) {
  const PhysicalId id = make(1, 0x11);
  const ShareToken token = exported(id);
  EXPECT_NE(token.value, 0u);
  EXPECT_EQ(token.value >> 40, 0u);
  EXPECT_EQ((token.value >> 32) & 0xff, 1u);
  EXPECT_NE(static_cast<uint32_t>(token.value), 0u) << "share id";
  ShareToken again;
  EXPECT_EQ(be().sharing().export_memory(id, &again).condition(), Condition::kInvalidArgument);
  const ShareToken other = exported(make(1, 0x12));
  EXPECT_NE(other.value, token.value);

  dev::ImportedMemory imported;
  ASSERT_TRUE(be().sharing().import_memory(token, 0, &imported).ok());
  held_.push_back(imported.memory);
  EXPECT_EQ(be().sharing().export_memory(imported.memory, &again).condition(),
            Condition::kInvalidArgument);
}

// C29: a process not on the whitelist is refused; once listed it sees the exporter's bytes, and
// writes are seen both ways.
TEST_P(SharingConformance, C29_WhitelistAdmitsAndBytesAreShared) {
  const PhysicalId id = make(0, 0x29);
  const ShareToken token = exported(id);
  auto p = peer();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->import(token, 0).condition(), harness().traits().not_permitted);
  const int32_t pid = p->pid();
  ASSERT_TRUE(be().sharing().set_pids(token, &pid, 1).ok());
  ASSERT_TRUE(p->import(token, 0).ok());
  EXPECT_EQ(peer_byte(*p, 0), 0x29);
  EXPECT_EQ(peer_byte(*p, kShareSize - 1), 0x29);
  ASSERT_TRUE(p->fill(4096, 16, 0x5a).ok());
  uint8_t seen[16];
  ASSERT_TRUE(harness().read_physical(id, 4096, seen, sizeof seen).ok());
  for (uint8_t b : seen) EXPECT_EQ(b, 0x5a) << "the importer's write is not seen by the exporter";
  const uint8_t mine[4] = {1, 2, 3, 4};
  ASSERT_TRUE(harness().write_physical(id, 100, mine, sizeof mine).ok());
  uint8_t theirs[4] = {};
  ASSERT_TRUE(p->read(100, theirs, sizeof theirs).ok());
  EXPECT_EQ(std::memcmp(theirs, mine, sizeof mine), 0);
}

// C30: a pid listed before its process started is refused (pid reuse).
TEST_P(SharingConformance, C30_PidListedBeforeTheProcessStartedIsRefused) {
  const int32_t future = harness().next_peer_pid();
  // emu compares the kernel's start time with the listing's: the pid of a process not yet
  // started cannot be known (the API-level tests of docs/sharing.md §4 cover pid reuse there).
  if (future == 0) GTEST_SKIP() << "the next process's pid is unknown on " << GetParam().name;
  const ShareToken token = exported(make(0, 0x30));
  ASSERT_TRUE(be().sharing().set_pids(token, &future, 1).ok());
  auto p = peer();
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->pid(), future);
  EXPECT_EQ(p->import(token, 0).condition(), Condition::kNotPermitted)
      << "a pid listed before its process started admitted it";
  ASSERT_TRUE(be().sharing().set_pids(token, &future, 1).ok());  // listed again: a new stamp
  EXPECT_TRUE(p->import(token, 0).ok());
}

// C31: disable_validation: any process imports; set_pids afterwards is kNotPermitted.
TEST_P(SharingConformance, C31_DisabledValidationAdmitsAnyone) {
  if (!be().capabilities().disable_validation) GTEST_SKIP() << "capability disable_validation";
  const ShareToken token = exported(make(0, 0x31));
  ASSERT_TRUE(be().sharing().disable_validation(token).ok());
  auto p = peer();
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->import(token, 1).ok());
  EXPECT_EQ(peer_byte(*p, 77), 0x31);
  const int32_t pid = p->pid();
  EXPECT_EQ(be().sharing().set_pids(token, &pid, 1).condition(), Condition::kNotPermitted);
  // And the other order: after set_pids, validation cannot be disabled.
  const ShareToken listed = exported(make(0, 0x32));
  ASSERT_TRUE(be().sharing().set_pids(listed, &pid, 1).ok());
  EXPECT_EQ(be().sharing().disable_validation(listed).condition(), Condition::kNotPermitted);
}

// C32: set_pids by another process than the exporter: kNotPermitted; an unknown token:
// kBadAddress; an all-zero list: kInvalidArgument.
TEST_P(SharingConformance, C32_SetPidsRefusals) {
  const ShareToken token = exported(make(0, 0x32));
  auto p = peer();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->set_pids(token, harness().own_pid()).condition(),
            harness().traits().not_permitted);
  const int32_t pid = p->pid();
  ShareToken unknown{token.value ^ (uint64_t{1} << 20)};  // another serial of this process
  EXPECT_EQ(be().sharing().set_pids(unknown, &pid, 1).condition(), Condition::kBadAddress);
  const int32_t zeros[3] = {0, 0, 0};
  EXPECT_EQ(be().sharing().set_pids(token, zeros, 3).condition(), Condition::kInvalidArgument);
  // 0 entries are skipped when others are there.
  const int32_t mixed[3] = {0, pid, 0};
  EXPECT_TRUE(be().sharing().set_pids(token, mixed, 3).ok());
  EXPECT_TRUE(p->import(token, 0).ok());
}

// C33: after the exporter's release new imports are kBadAddress; imports made before keep the
// bytes.
TEST_P(SharingConformance, C33_ReleaseEndsTheExportNotTheImports) {
  const PhysicalId id = make(0, 0x33);
  const ShareToken token = exported(id);
  auto first = peer();
  auto second = peer();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const int32_t pids[2] = {first->pid(), second->pid()};
  ASSERT_TRUE(be().sharing().set_pids(token, pids, 2).ok());
  ASSERT_TRUE(first->import(token, 0).ok());
  ASSERT_TRUE(be().physical().release(id).ok());
  released(id);
  EXPECT_EQ(second->import(token, 0).condition(), Condition::kBadAddress);
  EXPECT_EQ(be().sharing().set_pids(token, pids, 1).condition(), Condition::kBadAddress);
  EXPECT_EQ(peer_byte(*first, 1234), 0x33) << "an import lost its bytes with the export";
}

// C34: its own export onto the same device is refused; onto another device it is the same bytes.
TEST_P(SharingConformance, C34_OwnExportOnlyOntoAnotherDevice) {
  const PhysicalId id = make(1, 0x34);
  const ShareToken token = exported(id);
  dev::ImportedMemory imported;
  EXPECT_EQ(be().sharing().import_memory(token, 1, &imported).condition(),
            harness().traits().not_permitted);
  ASSERT_TRUE(be().sharing().import_memory(token, 0, &imported).ok());
  held_.push_back(imported.memory);
  EXPECT_EQ(imported.exporter_device, 1);
  EXPECT_EQ(imported.properties.location, Location::device(1));
  if (harness().traits().import_sizes) {
    EXPECT_EQ(imported.properties.size, kShareSize);
  }
  EXPECT_TRUE(imported.properties.imported);
  const uint8_t mark = 0xc4;
  ASSERT_TRUE(harness().write_physical(id, 999, &mark, 1).ok());
  uint8_t seen = 0;
  ASSERT_TRUE(harness().read_physical(imported.memory, 999, &seen, 1).ok());
  EXPECT_EQ(seen, mark);
}

// C35: FABRIC: only the bytes the backend owns are written; token_of_fabric gives the token;
// import_fabric imports it.
TEST_P(SharingConformance, C35_FabricBlob) {
  if (!be().capabilities().fabric_sharing) GTEST_SKIP() << "capability fabric_sharing";
  dev::DeviceProperties props;
  ASSERT_TRUE(be().devices().properties(1, &props).ok());
  if (harness().traits().fabric_needs_server_id && props.server_id < 0) {
    GTEST_SKIP() << "no server id on this machine (" << props.soc_name << "): FABRIC needs one";
  }
  const PhysicalId id = make(1, 0x35);
  dev::FabricToken blob;
  std::memset(blob.bytes, 0xee, sizeof blob.bytes);
  ASSERT_TRUE(be().sharing().export_fabric(id, &blob).ok());
  uint32_t words[5];
  std::memcpy(words, blob.bytes, sizeof words);
  EXPECT_EQ(words[0], 1u) << "handle type";
  EXPECT_EQ(words[2], 1u) << "exporter's device";
  EXPECT_NE(words[4], 0u) << "share id";
  for (size_t i = 20; i < sizeof blob.bytes; ++i) EXPECT_EQ(blob.bytes[i], 0xee) << "byte " << i;
  ShareToken token;
  ASSERT_TRUE(be().sharing().token_of_fabric(blob, &token).ok());
  EXPECT_EQ(static_cast<uint32_t>(token.value), words[4]);
  EXPECT_EQ((token.value >> 32) & 0xff, 1u);
  dev::ImportedMemory imported;
  ASSERT_TRUE(be().sharing().import_fabric(blob, 0, &imported).ok());
  held_.push_back(imported.memory);
  uint8_t seen = 0;
  ASSERT_TRUE(harness().read_physical(imported.memory, 5, &seen, 1).ok());
  EXPECT_EQ(seen, 0x35);
  dev::FabricToken junk;
  EXPECT_EQ(be().sharing().token_of_fabric(junk, &token).condition(), Condition::kInvalidArgument);
}

// C36: the exporter's process ends: its tokens are kBadAddress (within the bound).
TEST_P(SharingConformance, C36_ExporterGoneIsBadAddress) {
  auto p = peer();
  ASSERT_NE(p, nullptr);
  ShareToken token;
  ASSERT_TRUE(p->export_new(0, kShareSize, 0x36, harness().own_pid(), &token).ok());
  dev::ImportedMemory imported;
  ASSERT_TRUE(be().sharing().import_memory(token, 0, &imported).ok()) << "while it lives";
  held_.push_back(imported.memory);
  p->exit();
  dev::ImportedMemory late;
  EXPECT_EQ(be().sharing().import_memory(token, 1, &late).condition(), Condition::kBadAddress);
  uint8_t seen = 0;
  ASSERT_TRUE(harness().read_physical(imported.memory, 0, &seen, 1).ok());
  EXPECT_EQ(seen, 0x36) << "the bytes outlive their exporter";
}

ACLVMM_CONFORMANCE_SUITE(SharingConformance);

}  // namespace
}  // namespace aclvmm::conformance
