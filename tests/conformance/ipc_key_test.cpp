// Conformance of Sharing's IPC keys (docs/device-interface.md §9, C51-C55; runtime-extra.md §3,
// drivers/sharing.h "IPC memory by key"): the key text, the whitelist and its enforcement by the
// backend, keys without a whitelist, the exporter's revoke and close. The second process is the
// harness's PeerProcess.
#include <cstring>
#include <vector>

#include "conformance/sharing_case.h"

namespace aclvmm::conformance {
namespace {

using dev::Condition;
using dev::IpcKey;
using dev::IpcRange;
using dev::kMiB;
using dev::Location;
using dev::PhysicalId;

constexpr uint64_t kObjectSize = 4 * kMiB;
constexpr uint64_t kRangeOffset = 2 * kMiB;  // the key names the second granule
constexpr uint64_t kRangeSize = 2 * kMiB;

class IpcKeyConformance : public SharingCase {
 protected:
  void SetUp() override {
    SharingCase::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    if (!be().capabilities().ipc_keys) GTEST_SKIP() << "capability ipc_keys is false";
  }
  // Device memory of `device`, every byte `value`, released at the end of the case.
  PhysicalId make(dev::DeviceIndex device, uint8_t value) {
    return make_filled(device, kObjectSize, value);
  }
  static IpcRange range_of(PhysicalId id) {
    IpcRange r;
    r.memory = id;
    r.offset = kRangeOffset;
    r.size = kRangeSize;
    r.page_size = 2 * kMiB;
    return r;
  }
  IpcKey key_of(PhysicalId id, bool validate = true) {
    IpcKey key;
    EXPECT_TRUE(be().sharing().ipc_export(range_of(id), validate, &key).ok());
    return key;
  }
};

// C51: the key is the vendor v2 driver's text (exporter's bare tgid, a counter from 1 that rises
// by one per export, the device's physical id, VF 00, '0' padding); every export is a new key;
// an import, an object exported as a token and a range past the object cannot be exported.
TEST_P(IpcKeyConformance, C51_KeyHasTheVendorLayout) {
  const PhysicalId id = make(1, 0x51);
  const IpcKey first = key_of(id);
  ASSERT_EQ(std::strlen(first.text), dev::kIpcKeyLength);
  dev::IpcKeyFields f;
  ASSERT_TRUE(dev::parse_ipc_key(first.text, &f)) << first.text;
  EXPECT_EQ(f.tgid, static_cast<uint32_t>(harness().own_pid()));
  EXPECT_GE(f.counter, 1u) << "counters start at 1 (once per process: other cases may come first)";
  EXPECT_EQ(f.device, 1u);
  EXPECT_EQ(f.vf, 0u);
  const IpcKey second = key_of(id);
  dev::IpcKeyFields g;
  ASSERT_TRUE(dev::parse_ipc_key(second.text, &g));
  EXPECT_EQ(g.counter, f.counter + 1) << "the same range again is a new key";
  EXPECT_FALSE(first == second);

  IpcKey none;
  IpcRange past = range_of(id);
  past.offset = kObjectSize - kRangeSize + 4096;
  EXPECT_EQ(be().sharing().ipc_export(past, true, &none).condition(), Condition::kInvalidArgument);
  const PhysicalId tokened = make(0, 1);
  dev::ShareToken token;
  ASSERT_TRUE(be().sharing().export_memory(tokened, &token).ok());
  EXPECT_EQ(be().sharing().ipc_export(range_of(tokened), true, &none).condition(),
            Condition::kInvalidArgument);
  const IpcKey open = key_of(make(0, 2), false);
  dev::IpcImported imported;
  ASSERT_TRUE(be().sharing().ipc_import(open, 0, &imported).ok());
  held_.push_back(imported.memory.memory);
  IpcRange of_import = range_of(imported.memory.memory);
  EXPECT_EQ(be().sharing().ipc_export(of_import, true, &none).condition(),
            Condition::kInvalidArgument);
}

// C52: a process not listed is refused; once listed it gets the memory with the key's range where
// the exporter's was, and bytes are shared both ways.
TEST_P(IpcKeyConformance, C52_WhitelistAdmitsAndBytesAreShared) {
  const PhysicalId id = make(0, 0x52);
  const IpcKey key = key_of(id);
  auto p = peer();
  ASSERT_NE(p, nullptr);
  uint64_t offset = 0;
  EXPECT_EQ(p->import_key(key, 0, &offset).condition(), Condition::kNotPermitted);
  const int32_t pid = p->pid();
  ASSERT_TRUE(be().sharing().ipc_set_pids(key, &pid, 1).ok());
  ASSERT_TRUE(p->import_key(key, 0, &offset).ok());
  EXPECT_EQ(offset, kRangeOffset);
  EXPECT_EQ(peer_byte(*p, offset), 0x52);
  ASSERT_TRUE(p->fill(offset + 8, 8, 0xa5).ok());
  uint8_t seen[8];
  ASSERT_TRUE(harness().read_physical(id, kRangeOffset + 8, seen, sizeof seen).ok());
  for (uint8_t b : seen) EXPECT_EQ(b, 0xa5) << "the importer's write is not seen by the exporter";
  // Only the exporter lists pids; a key with a whitelist cannot be imported by its exporter.
  EXPECT_EQ(p->set_key_pids(key, pid).condition(), Condition::kNotPermitted);
  dev::IpcImported own;
  EXPECT_EQ(be().sharing().ipc_import(key, 1, &own).condition(), Condition::kNotPermitted);
}

// C53: a pid listed before its process started is refused (pid reuse); the whitelist holds
// kIpcWhitelistMax pids; a list of only 0 and the exporter's own pid is refused.
TEST_P(IpcKeyConformance, C53_WhitelistLimits) {
  const IpcKey key = key_of(make(0, 0x53));
  std::vector<int32_t> many(dev::kIpcWhitelistMax);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int32_t>(1000000 + i);
  ASSERT_TRUE(be().sharing().ipc_set_pids(key, many.data(), dev::kIpcWhitelistMax).ok());
  const int32_t extra = 7;
  EXPECT_EQ(be().sharing().ipc_set_pids(key, &extra, 1).condition(), Condition::kInvalidArgument);
  EXPECT_TRUE(be().sharing().ipc_set_pids(key, many.data(), 1).ok()) << "refreshing a listed pid";
  const int32_t nobody[2] = {0, harness().own_pid()};
  EXPECT_EQ(be().sharing().ipc_set_pids(key, nobody, 2).condition(), Condition::kInvalidArgument);

  const int32_t next = harness().next_peer_pid();
  if (next == 0) return;  // the kernel picks the pid: the API and integration tests cover it
  const IpcKey early = key_of(make(0, 0x54));
  ASSERT_TRUE(be().sharing().ipc_set_pids(early, &next, 1).ok());
  auto p = peer();
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->pid(), next);
  uint64_t offset = 0;
  EXPECT_EQ(p->import_key(early, 0, &offset).condition(), Condition::kNotPermitted);
  ASSERT_TRUE(be().sharing().ipc_set_pids(early, &next, 1).ok());
  EXPECT_TRUE(p->import_key(early, 0, &offset).ok());
}

// C54: without a whitelist anyone imports, the exporter too (a second object over the same
// bytes); listing pids is then kNotPermitted (EPERM: 207006).
TEST_P(IpcKeyConformance, C54_NoWhitelistAdmitsAnyone) {
  const PhysicalId id = make(0, 0x54);
  const IpcKey key = key_of(id, false);
  auto p = peer();
  ASSERT_NE(p, nullptr);
  uint64_t offset = 0;
  ASSERT_TRUE(p->import_key(key, 0, &offset).ok());
  EXPECT_EQ(peer_byte(*p, offset + kRangeSize - 1), 0x54);
  dev::IpcImported own;
  ASSERT_TRUE(be().sharing().ipc_import(key, 0, &own).ok());
  held_.push_back(own.memory.memory);
  EXPECT_EQ(own.offset, kRangeOffset);
  EXPECT_EQ(own.size, kRangeSize);
  uint8_t b = 0;
  ASSERT_TRUE(harness().read_physical(own.memory.memory, own.offset, &b, 1).ok());
  EXPECT_EQ(b, 0x54);
  const int32_t pid = p->pid();
  const dev::Result listed = be().sharing().ipc_set_pids(key, &pid, 1);
  EXPECT_EQ(listed.condition(), Condition::kNotPermitted);
  EXPECT_EQ(listed.errno_value(), EPERM);
  EXPECT_EQ(p->set_key_pids(key, pid).errno_value(), EPERM) << "by anyone";
}

// C55: a revoked key (its memory freed) refuses imports and keeps the ones made; a closed key
// refuses imports; a close by another process is refused (EACCES), a second close of a key
// that served an import is EFAULT (107017), of one that served none EINVAL.
TEST_P(IpcKeyConformance, C55_RevokeAndClose) {
  const PhysicalId id = make(0, 0x55);
  const IpcKey key = key_of(id, false);
  auto p = peer();
  ASSERT_NE(p, nullptr);
  uint64_t offset = 0;
  ASSERT_TRUE(p->import_key(key, 0, &offset).ok());
  EXPECT_EQ(p->close_key(key).condition(), Condition::kNotPermitted) << "not the exporter";
  be().sharing().ipc_revoke(key);
  dev::IpcImported again;
  EXPECT_EQ(be().sharing().ipc_import(key, 0, &again).condition(), Condition::kInvalidArgument);
  uint64_t other = 0;
  EXPECT_EQ(p->import_key(key, 0, &other).condition(), Condition::kInvalidArgument);
  ASSERT_TRUE(be().sharing().ipc_close_export(key).ok()) << "a revoked key is closed as usual";
  EXPECT_EQ(be().sharing().ipc_close_export(key).errno_value(), EFAULT);
  const int32_t pid = p->pid();
  EXPECT_EQ(be().sharing().ipc_set_pids(key, &pid, 1).errno_value(), EFAULT);

  const IpcKey unused = key_of(id);
  ASSERT_TRUE(be().sharing().ipc_close_export(unused).ok());
  EXPECT_EQ(be().sharing().ipc_close_export(unused).errno_value(), EINVAL);
  EXPECT_EQ(p->import_key(unused, 0, &other).condition(), Condition::kInvalidArgument);
}

ACLVMM_CONFORMANCE_SUITE(IpcKeyConformance);

}  // namespace
}  // namespace aclvmm::conformance
