// Shareable handles between real processes: token layout and uniqueness (V1 and V2 DEFAULT), the
// FABRIC blob on A3 carried to another process over UDP, and FABRIC refused on A2
// (behavior.md section 7, emulation.md section 5, products.md).
#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using ShareToken = AclTest;

// behavior.md §7 "V1 handle format": bits 0-31 share id, bits 32-39 exporter's logical device,
// bits 40-63 zero; emulation.md §5 / behavior.md top: non-zero, not reused soon after release.
TEST_F(ShareToken, LayoutDeviceFieldAndUniqueness) {
  aclrtDrvMemHandle h0 = make_handle(k2M, 0);
  aclrtDrvMemHandle h3 = make_handle(k2M, 3);
  uint64_t t0 = 0, t3 = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h0, ACL_MEM_HANDLE_TYPE_NONE, 0, &t0), kOk);
  ASSERT_EQ(aclrtMemExportToShareableHandle(h3, ACL_MEM_HANDLE_TYPE_NONE, 0, &t3), kOk);
  for (uint64_t t : {t0, t3}) {
    EXPECT_NE(t, 0u);
    EXPECT_NE(share_id_of(t), 0u) << hex(t);
    EXPECT_EQ(high_of(t), 0u) << hex(t);
  }
  EXPECT_EQ(device_of(t0), 0u);
  EXPECT_EQ(device_of(t3), 3u);
  EXPECT_NE(t0, t3);
  EXPECT_NE(share_id_of(t0), share_id_of(t3));

  // Free the exported handle, export a new one: the previous value does not come back.
  ASSERT_EQ(aclrtFreePhysical(h0), kOk);
  aclrtDrvMemHandle h0b = make_handle(k2M, 0);
  uint64_t t0b = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h0b, ACL_MEM_HANDLE_TYPE_NONE, 0, &t0b), kOk);
  EXPECT_NE(t0b, t0);
  EXPECT_NE(t0b, t3);
  EXPECT_EQ(device_of(t0b), 0u);
  EXPECT_EQ(high_of(t0b), 0u);
  EXPECT_EQ(aclrtFreePhysical(h0b), kOk);
  EXPECT_EQ(aclrtFreePhysical(h3), kOk);
}

// The token's device field is the exporter's logical (user) id: with ASCEND_RT_VISIBLE_DEVICES=2,5
// the handle of user device 1 (physical 5) exports as device 1.
TEST_F(ShareToken, DeviceFieldIsTheLogicalId) {
  Peer p({"ASCEND_RT_VISIBLE_DEVICES=2,5"});
  ASSERT_EQ(p.rc("dev 1"), kOk);
  ASSERT_EQ(p.rc("alloc 0 1 2097152"), kOk);
  const uint64_t t = p.export_token(0);
  EXPECT_EQ(device_of(t), 1u) << hex(t);
  EXPECT_EQ(high_of(t), 0u) << hex(t);
  EXPECT_EQ(p.finish(), 0);
}

// §7 "V2 DEFAULT ≡ V1": export V2 DEFAULT writes exactly 8 bytes in the V1 format; a V2 DEFAULT
// token is imported with the V1 call and a V1 token with the V2 call; SetPidV2 DEFAULT whitelists.
TEST_F(ShareToken, V2DefaultIsV1) {
  aclrtDrvMemHandle h = make_handle();
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  h2d(va, share_peer::peer_pattern(k2M, 21));
  unsigned char buf[16];
  std::memset(buf, 0xEE, sizeof buf);
  ASSERT_EQ(aclrtMemExportToShareableHandleV2(h, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, buf), kOk);
  uint64_t t = 0;
  std::memcpy(&t, buf, 8);
  EXPECT_NE(share_id_of(t), 0u);
  EXPECT_EQ(device_of(t), 0u);
  EXPECT_EQ(high_of(t), 0u);
  for (int i = 8; i < 16; ++i) EXPECT_EQ(buf[i], 0xEE) << "byte " << i << " was written";

  Peer v1, v2;
  int32_t pids[] = {v1.tgid()};
  ASSERT_EQ(aclrtMemSetPidToShareableHandleV2(buf, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, pids, 1), kOk);
  int32_t pid2 = v2.tgid();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(t, &pid2, 1), kOk);
  // V1 import of the V2 DEFAULT token.
  ASSERT_EQ(Peer::code_of(v1.cmd(line("import 0", hex(t), 0))), kOk);
  ASSERT_EQ(v1.rc("map 0 2097152"), kOk);
  EXPECT_EQ(v1.cmd("check 0 0 2097152 21"), (std::vector<std::string>{"0", "1"}));
  // V2 DEFAULT import (onto the current device) of the token as 8 bytes.
  ASSERT_EQ(Peer::code_of(v2.cmd(line("import2 0 1", hex_of(&t, 8), 0))), kOk);
  ASSERT_EQ(v2.rc("map 0 2097152"), kOk);
  EXPECT_EQ(v2.cmd("check 0 0 2097152 21"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(v2.cmd("props 0"), (std::vector<std::string>{"0", std::to_string(ACL_HBM_MEM_HUGE), "1", "0"}));
  EXPECT_EQ(v1.finish(), 0);
  EXPECT_EQ(v2.finish(), 0);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// §7 V2 FABRIC on A3: 128 bytes, the first 20 five u32 {1, super-pod 0, exporter logical device,
// exporter physical device, share id}; bytes 20..127 stay as the caller left them. The blob goes
// to the importer over UDP on loopback; SetPidV2 FABRIC whitelists the importer.
TEST_F(ShareToken, FabricBlobOverUdpOnA3) {
  std::vector<std::string> env = kA3;
  env.push_back("ASCEND_RT_VISIBLE_DEVICES=2,5");
  Peer exporter(env), importer(env);
  ASSERT_EQ(exporter.rc("dev 1"), kOk);
  ASSERT_EQ(exporter.rc("alloc 0 1 2097152"), kOk);
  ASSERT_EQ(exporter.rc("map 0 2097152"), kOk);
  ASSERT_EQ(exporter.rc("write 0 0 2097152 33"), kOk);
  auto r = exporter.cmd("export2 0 0 2");
  ASSERT_EQ(Peer::code_of(r), kOk);
  ASSERT_EQ(r.size(), 2u);
  const std::vector<unsigned char> blob = bytes_of(r[1]);
  ASSERT_EQ(blob.size(), 128u);
  uint32_t words[5];
  std::memcpy(words, blob.data(), sizeof words);
  EXPECT_EQ(words[0], 1u);  // handle type
  EXPECT_EQ(words[1], 1u);  // SDID: server 0 in bits 22-31, device 1 in bits 0-15
  EXPECT_EQ(words[2], 1u);  // exporter logical device
  EXPECT_EQ(words[3], 5u);  // exporter physical device
  EXPECT_NE(words[4], 0u);  // share id
  for (size_t i = 20; i < 128; ++i) EXPECT_EQ(blob[i], 0xEE) << "byte " << i << " was written";

  // A second export (V1) of another handle: a different share id.
  ASSERT_EQ(exporter.rc("alloc 1 1 2097152"), kOk);
  const uint64_t other = exporter.export_token(1);
  EXPECT_NE(share_id_of(other), words[4]);
  EXPECT_EQ(device_of(other), 1u);

  // Whitelist through the FABRIC form, then move the blob exporter -> importer over UDP.
  const int32_t ipid = importer.tgid();
  EXPECT_EQ(exporter.rc(line("setpid2 2", r[1], ipid)), kOk);
  auto port = importer.cmd("udpbind");
  ASSERT_EQ(Peer::code_of(port), 0);
  ASSERT_EQ(port.size(), 2u);
  ASSERT_EQ(exporter.rc(line("udpsend", port[1], r[1])), 0);
  auto got = importer.cmd("udprecv");
  ASSERT_EQ(Peer::code_of(got), 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], r[1]);
  ASSERT_EQ(Peer::code_of(importer.cmd(line("import2 0 2", got[1], 0))), kOk);
  ASSERT_EQ(importer.rc("map 0 2097152"), kOk);
  EXPECT_EQ(importer.cmd("check 0 0 2097152 33"), (std::vector<std::string>{"0", "1"}));
  // Properties report the exporter's (driver) device id, 5 (behavior.md §6).
  auto props = importer.cmd("props 0");
  ASSERT_EQ(props.size(), 4u);
  EXPECT_EQ(props[3], "5");
  EXPECT_EQ(importer.finish(), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

// docs/fabric.md: a FABRIC handle names its exporter's server in the top bits of its SDID (word
// 1) and marks host memory with the driver's host id (word 3, 65). Host memory does not cross
// servers: an importer on another server is refused with 207000, before any transport.
TEST_F(ShareToken, FabricHandleNamesTheServerAndHostMemoryStaysThere) {
  std::vector<std::string> exporter_env = kA3, importer_env = kA3;
  exporter_env.push_back("ACLVMM_SERVER_ID=7");
  importer_env.push_back("ACLVMM_SERVER_ID=3");
  Peer exporter(exporter_env), importer(importer_env), neighbour(exporter_env);
  ASSERT_EQ(exporter.rc("dev 0"), kOk);
  ASSERT_EQ(exporter.rc("halloc 0 2097152"), kOk);
  auto r = exporter.cmd("export2 0 1 2");  // DISABLE_PID_VALIDATION: anyone may import
  ASSERT_EQ(Peer::code_of(r), kOk);
  ASSERT_EQ(r.size(), 2u);
  const std::vector<unsigned char> blob = bytes_of(r[1]);
  uint32_t words[5];
  std::memcpy(words, blob.data(), sizeof words);
  EXPECT_EQ(words[1], 7u << 22);  // server 7, device field 0
  EXPECT_EQ(words[3], 65u);       // host memory
  ASSERT_EQ(importer.rc("dev 0"), kOk);
  EXPECT_EQ(Peer::code_of(importer.cmd(line("import2 0 2", r[1], 0))), 207000);
  // A process of the exporter's own server imports it as before.
  ASSERT_EQ(neighbour.rc("dev 0"), kOk);
  EXPECT_EQ(Peer::code_of(neighbour.cmd(line("import2 0 2", r[1], 0))), kOk);
  EXPECT_EQ(neighbour.finish(), 0);
  EXPECT_EQ(importer.finish(), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

// §7 / §12.5 / products.md: FABRIC needs a super-pod product; on A2 (the default) every V2 call
// with the FABRIC type answers 207000 after the ACL null checks.
TEST_F(ShareToken, FabricIsNotSupportedOnA2) {
  aclrtDrvMemHandle h = make_handle();
  unsigned char blob[128];
  std::memset(blob, 0xEE, sizeof blob);
  int32_t pid = getpid();
  aclrtDrvMemHandle out = nullptr;
  struct Case {
    const char* name;
    std::function<aclError()> call;
    aclError expected;
  };
  const Case cases[] = {
      {"ExportV2 FABRIC",
       [&] { return aclrtMemExportToShareableHandleV2(h, 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, blob); },
       kNotSupported},
      {"SetPidV2 FABRIC",
       [&] { return aclrtMemSetPidToShareableHandleV2(blob, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &pid, 1); },
       kNotSupported},
      {"ImportV2 FABRIC",
       [&] { return aclrtMemImportFromShareableHandleV2(blob, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &out); },
       kNotSupported},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.call(), c.expected);
  }
  for (size_t i = 0; i < sizeof blob; ++i) ASSERT_EQ(blob[i], 0xEE) << "byte " << i;
  // The refused FABRIC export did not export the handle: a DEFAULT export still works.
  uint64_t t = 0;
  EXPECT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &t), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

}  // namespace
