// Bytes and lifetime of shared memory between real processes (emulation.md sections 4 and 5):
// both directions, the importer outliving the exporter, eight importers at once, and the sharing
// statistics (emulation.md section 8: live.exports, live.imports, ipc.imports_denied).
#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using ShareBytes = AclTest;

const std::vector<std::string> kOk1 = {"0", "1"};

// Exporter writes (aclrtMemcpy H2D into its mapping), importer reads through its own mapping; then
// the importer writes and the exporter reads. Both sides are separate processes.
TEST_F(ShareBytes, BothDirectionsBetweenTwoProcesses) {
  Peer ex, im;
  ASSERT_EQ(ex.rc("alloc 0 0 4194304"), kOk);
  ASSERT_EQ(ex.rc("map 0 4194304"), kOk);
  ASSERT_EQ(ex.rc("write 0 0 4194304 81"), kOk);
  const uint64_t t = ex.export_token(0);
  ASSERT_EQ(ex.rc(line("setpid", hex(t), im.tgid())), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(t), 0))), kOk);
  ASSERT_EQ(im.rc("map 0 4194304"), kOk);
  EXPECT_EQ(im.cmd("check 0 0 4194304 81"), kOk1);
  EXPECT_EQ(im.rc("write 0 3000000 100000 82"), kOk);  // straddles the 2 MiB boundary
  EXPECT_EQ(ex.cmd("check 0 3000000 100000 82"), kOk1);
  EXPECT_EQ(ex.cmd("check 0 0 3000000 81"), kOk1);  // the rest is untouched
  EXPECT_EQ(ex.rc("write 0 0 4096 83"), kOk);
  EXPECT_EQ(im.cmd("check 0 0 4096 83"), kOk1);
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(ex.finish(), 0);
}

// The gtest process as importer of a peer, and as exporter to a peer, with aclrtMemcpy on its side.
TEST_F(ShareBytes, GtestProcessOnEitherSide) {
  Peer p;
  ASSERT_EQ(p.rc("alloc 0 0 2097152"), kOk);
  ASSERT_EQ(p.rc("map 0 2097152"), kOk);
  ASSERT_EQ(p.rc("write 0 0 2097152 85"), kOk);
  const uint64_t theirs = p.export_token(0);
  int32_t self = 0;
  ASSERT_EQ(aclrtDeviceGetBareTgid(&self), kOk);
  EXPECT_EQ(self, getpid());
  ASSERT_EQ(p.rc(line("setpid", hex(theirs), self)), kOk);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(theirs, 0, &h), kOk);
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_EQ(get(va, k2M), share_peer::peer_pattern(k2M, 85));
  h2d(at(va, 777), share_peer::peer_pattern(5000, 86));
  EXPECT_EQ(p.cmd("check 0 777 5000 86"), kOk1);

  LocalExport mine = export_local(87);
  int32_t ppid = p.tgid();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(mine.token, &ppid, 1), kOk);
  ASSERT_EQ(Peer::code_of(p.cmd(line("import 1", hex(mine.token), 0))), kOk);
  ASSERT_EQ(p.rc("map 1 2097152"), kOk);
  EXPECT_EQ(p.cmd("check 1 0 2097152 87"), kOk1);
  EXPECT_EQ(p.rc("write 1 100 200 88"), kOk);
  EXPECT_EQ(get(at(mine.va, 100), 200), share_peer::peer_pattern(200, 88));
  EXPECT_EQ(p.finish(), 0);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  mine.release();
}

// emulation.md §5: the exporter may free its handle and even exit after the import; the importer
// keeps its bytes (mapped or not yet mapped) and may still write and read them.
TEST_F(ShareBytes, ImporterOutlivesTheExporter) {
  Peer ex, im;
  ASSERT_EQ(ex.rc("alloc 0 0 2097152"), kOk);
  ASSERT_EQ(ex.rc("alloc 1 0 2097152"), kOk);
  ASSERT_EQ(ex.rc("map 0 2097152"), kOk);
  ASSERT_EQ(ex.rc("map 1 2097152"), kOk);
  ASSERT_EQ(ex.rc("write 0 0 2097152 91"), kOk);
  ASSERT_EQ(ex.rc("write 1 0 2097152 92"), kOk);
  const uint64_t t0 = ex.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const uint64_t t1 = ex.export_token(1, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(t0), 0))), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 1", hex(t1), 0))), kOk);
  ASSERT_EQ(im.rc("map 0 2097152"), kOk);  // slot 1 stays unmapped until the exporter is gone
  // The exporter frees its handles (unmap + free) and exits.
  EXPECT_EQ(ex.rc("unmap 0"), kOk);
  EXPECT_EQ(ex.rc("free 0"), kOk);
  EXPECT_EQ(ex.rc("unmap 1"), kOk);
  EXPECT_EQ(ex.rc("free 1"), kOk);
  EXPECT_EQ(ex.rc("fin"), kOk);
  EXPECT_EQ(ex.finish(), 0);
  EXPECT_EQ(im.cmd("check 0 0 2097152 91"), kOk1);
  ASSERT_EQ(im.rc("map 1 2097152"), kOk);
  EXPECT_EQ(im.cmd("check 1 0 2097152 92"), kOk1);
  EXPECT_EQ(im.rc("write 1 0 65536 93"), kOk);
  EXPECT_EQ(im.cmd("check 1 0 65536 93"), kOk1);
  // The token died with the exporter.
  EXPECT_EQ(Peer::code_of(im.cmd(line("import 2", hex(t0), 1))), kBadHandle);
  EXPECT_EQ(im.finish(), 0);
}

// Eight importer processes import the same token at the same time; each verifies all the bytes.
TEST_F(ShareBytes, EightImportersAtOnce) {
  constexpr int kN = 8;
  LocalExport e = export_local(95);
  const long long denied_before = stat_int(stats(), "ipc.imports_denied");  // counts since start
  std::vector<std::unique_ptr<Peer>> peers;
  std::vector<int32_t> pids;
  for (int i = 0; i < kN; ++i) {
    peers.push_back(std::make_unique<Peer>());
    pids.push_back(peers.back()->tgid());
  }
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, pids.data(), pids.size()), kOk);
  // All requests go out before any reply is read: the imports overlap.
  const std::string imp = line("import 0", hex(e.token), 0);
  for (auto& p : peers) p->send(imp);
  for (auto& p : peers) EXPECT_EQ(Peer::code_of(p->reply(imp)), kOk);
  for (auto& p : peers) p->send("map 0 2097152");
  for (auto& p : peers) EXPECT_EQ(Peer::code_of(p->reply("map")), kOk);
  for (auto& p : peers) p->send("check 0 0 2097152 95");
  for (auto& p : peers) EXPECT_EQ(p->reply("check"), kOk1);
  for (auto& p : peers) EXPECT_EQ(p->finish(), 0);
  EXPECT_EQ(stat_int(stats(), "ipc.imports_denied"), denied_before);
  e.release();
}

// emulation.md §8: live.exports / live.imports count live exports and imports of the process;
// ipc.imports_denied counts the refusals the exporter made.
TEST_F(ShareBytes, StatisticsCountExportsImportsAndRefusals) {
  Peer ex, im, stranger;
  EXPECT_EQ(stat_int(ex.stats(), "live.exports"), 0);
  ASSERT_EQ(ex.rc("alloc 0 0 2097152"), kOk);
  ASSERT_EQ(ex.rc("alloc 1 1 2097152"), kOk);
  const uint64_t t0 = ex.export_token(0);
  const uint64_t t1 = ex.export_token(1);
  Json s = ex.stats();
  EXPECT_EQ(stat_int(s, "live.exports"), 2);
  EXPECT_EQ(stat_int(s, "live.imports"), 0);
  EXPECT_EQ(stat_int(s, "ipc.imports_denied"), 0);
  ASSERT_EQ(ex.rc(line("setpid", hex(t0), im.tgid())), kOk);
  ASSERT_EQ(ex.rc(line("setpid", hex(t1), im.tgid())), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(t0), 0))), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 1", hex(t1), 0))), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 2", hex(t0), 0))), kOk);  // same handle again
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 3", hex(t0), 2))), kOk);  // another device
  EXPECT_EQ(stat_int(im.stats(), "live.imports"), 3);
  EXPECT_EQ(stat_int(im.stats(), "live.exports"), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Peer::code_of(stranger.cmd(line("import 0", hex(i == 1 ? t1 : t0), 0))), kDrv);
  }
  EXPECT_EQ(stat_int(stranger.stats(), "ipc.imports_denied"), 0);  // counted by the exporter
  s = ex.stats();
  EXPECT_EQ(stat_int(s, "ipc.imports_denied"), 3);
  EXPECT_EQ(stat_int(s, "live.exports"), 2);
  // Freeing ends the export / the import.
  ASSERT_EQ(ex.rc("free 1"), kOk);
  EXPECT_EQ(stat_int(ex.stats(), "live.exports"), 1);
  ASSERT_EQ(im.rc("free 1"), kOk);
  ASSERT_EQ(im.rc("free 0"), kOk);  // slot 2 still holds t0's handle (same value)
  EXPECT_EQ(stat_int(im.stats(), "live.imports"), 2);
  ASSERT_EQ(im.rc("free 2"), kOk);
  ASSERT_EQ(im.rc("free 3"), kOk);
  EXPECT_EQ(stat_int(im.stats(), "live.imports"), 0);
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(stranger.finish(), 0);
  EXPECT_EQ(ex.finish(), 0);
}

}  // namespace
