// FABRIC handles across servers through the ACL calls (issue 17, docs/fabric.md): real processes
// (aclvmm_share_peer) in network namespaces that stand for the servers of a pod, each with its
// ACLVMM_SERVER_ID and one shared pod file. Exports on one server, imports, maps, copies and
// fills on another, with the bytes checked on both; the whitelist; the refusals; and what an
// exporter that exits, an importer that exits and a cut link do to the other side.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fabric/netns_pod.h"
#include "integration/share_peer/peer_client.h"

namespace {

using aclvmm_test::NetnsPod;
using share_test::Peer;

constexpr size_t kMiB = 1 << 20;
constexpr int kFabric = 2;  // ACL_MEM_SHARE_HANDLE_TYPE_FABRIC
constexpr int kDisablePids = 1;

// A check's reply when the bytes are the expected ones.
const std::vector<std::string> kSame = {"0", "1"};

// Host i of the pod is server 10 + i: ids that are not the default 0 nor the host index.
int server_of(int host) { return 10 + host; }

class FabricPod : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!NetnsPod::available(&why)) GTEST_SKIP() << why;
  }
  void TearDown() override {
    peers_.clear();  // before the namespaces go
    pod_.reset();
    if (!pod_file_.empty()) (void)std::remove(pod_file_.c_str());
    if (!dir_.empty()) (void)::rmdir(dir_.c_str());
  }

  // The namespaces and the pod file that lists them.
  void start(int hosts) {
    pod_ = std::make_unique<NetnsPod>(hosts);
    ASSERT_TRUE(pod_->ok()) << "the namespaces could not be set up";
    char dir[] = "/tmp/aclvmm-pod-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    pod_file_ = dir_ + "/pod";
    std::ofstream f(pod_file_);
    f << "# the servers of this test's pod\n";
    for (int i = 0; i < hosts; ++i) f << server_of(i) << ' ' << NetnsPod::address(i) << '\n';
    ASSERT_TRUE(f.good());
  }

  // A peer process on host i, its device 0 current.
  Peer& peer_on(int host) {
    std::vector<std::string> env = share_test::kA3;
    env.push_back("ACLVMM_SERVER_ID=" + std::to_string(server_of(host)));
    env.push_back("ACLVMM_POD_FILE=" + pod_file_);
    peers_.push_back(std::make_unique<Peer>(
        env, true, std::vector<std::string>{"/usr/sbin/ip", "netns", "exec", pod_->host_ns(host)}));
    return *peers_.back();
  }

  // A mapped device allocation of `size` in slot `slot` of `p`, filled with `seed`'s pattern,
  // exported as FABRIC with `flags`: the handle's hex.
  static std::string export_fabric(Peer& p, int slot, size_t size, int seed, int flags,
                                   int device = 0) {
    const std::string s = std::to_string(slot);
    if (device != 0) {
      EXPECT_EQ(p.rc(share_test::line("dev", device)), share_test::kOk);
    }
    EXPECT_EQ(p.rc(share_test::line("alloc", s, device, size)), share_test::kOk);
    EXPECT_EQ(p.rc(share_test::line("map", s, size)), share_test::kOk);
    EXPECT_EQ(p.rc(share_test::line("write", s, 0, size, seed)), share_test::kOk);
    auto r = p.cmd(share_test::line("export2", s, flags, kFabric));
    EXPECT_EQ(Peer::code_of(r), share_test::kOk);
    if (device != 0) {
      EXPECT_EQ(p.rc("dev 0"), share_test::kOk);
    }
    return r.size() == 2 ? r[1] : std::string();
  }

  // Imports a FABRIC handle into `slot` of `p` and maps it.
  static void import_and_map(Peer& p, int slot, const std::string& handle, size_t size) {
    const std::string s = std::to_string(slot);
    ASSERT_EQ(Peer::code_of(p.cmd(share_test::line("import2", s, kFabric, handle, 0))),
              share_test::kOk);
    ASSERT_EQ(p.rc(share_test::line("map", s, size)), share_test::kOk);
  }

  static long long holders(Peer& exporter) {
    return aclvmm_test::stat_int(exporter.stats(), "ipc.fabric_holders");
  }
  // Polls the exporter's holder count until it is `want` or ~10 s passed (keep-alive bound).
  static long long holders_become(Peer& exporter, long long want) {
    long long h = -1;
    for (int i = 0; i < 100 && (h = holders(exporter)) != want; ++i) ::usleep(100 * 1000);
    return h;
  }

  std::unique_ptr<NetnsPod> pod_;
  std::string dir_, pod_file_;
  std::vector<std::unique_ptr<Peer>> peers_;
};

using share_test::kOk;
using share_test::line;

// Export on server 10, import + map on server 11; D2H, H2D across a 4 MiB piece boundary,
// memset and D2D in both directions, every byte checked on both servers.
TEST_F(FabricPod, CopiesAndFillsReachTheOtherServerBothWays) {
  start(2);
  Peer& exporter = peer_on(0);
  Peer& importer = peer_on(1);
  const size_t size = 8 * kMiB;
  const std::string handle = export_fabric(exporter, 0, size, 11, 0);
  ASSERT_EQ(handle.size(), 256u);
  uint32_t words[5];
  std::memcpy(words, share_test::bytes_of(handle).data(), sizeof words);
  EXPECT_EQ(words[1] >> 22, static_cast<uint32_t>(server_of(0))) << "the SDID names server 10";
  // Whitelisted by the pid the importer's host reports.
  ASSERT_EQ(exporter.rc(line("setpid2", kFabric, handle, importer.tgid())), kOk);
  ASSERT_EQ(holders(exporter), 0);

  ASSERT_EQ(Peer::code_of(importer.cmd(line("import2 0", kFabric, handle, 0))), kOk);
  EXPECT_EQ(holders(exporter), 1) << "the importer holds the export";
  ASSERT_EQ(importer.rc(line("map 0", size)), kOk);
  // D2H: the exporter's bytes, read on the other server.
  EXPECT_EQ(importer.cmd(line("check 0 0", size, 11)), kSame);
  // H2D across the 4 MiB piece boundary, at an offset that is no page's.
  ASSERT_EQ(importer.rc(line("write 0", 3 * kMiB + 100, 2 * kMiB, 22)), kOk);
  ASSERT_EQ(importer.rc(line("memset 0", 6 * kMiB + 4096, 64 * 1024, 0x5A)), kOk);
  // D2D from the importer's own device memory into the remote memory, and back out of it.
  ASSERT_EQ(importer.rc(line("alloc 1 0", 2 * kMiB)), kOk);
  ASSERT_EQ(importer.rc(line("map 1", 2 * kMiB)), kOk);
  ASSERT_EQ(importer.rc(line("write 1 0", 2 * kMiB, 33)), kOk);
  ASSERT_EQ(importer.rc(line("d2d 0", 7 * kMiB, 1, 0, kMiB)), kOk);
  ASSERT_EQ(importer.rc(line("d2d 1 0 0 0", kMiB)), kOk);
  EXPECT_EQ(importer.cmd(line("check 1 0", kMiB, 11)), kSame) << "D2D out of the remote memory";

  // What the exporter's own memory holds now.
  EXPECT_EQ(exporter.cmd(line("check 0 0", kMiB, 11)), kSame);
  EXPECT_EQ(exporter.cmd(line("check 0", 3 * kMiB + 100, 2 * kMiB, 22)), kSame);
  EXPECT_EQ(exporter.cmd(line("filled 0", 6 * kMiB + 4096, 64 * 1024, 0x5A)), kSame);
  EXPECT_EQ(exporter.cmd(line("filled 0", 6 * kMiB, 4096, 0x5A)),
            (std::vector<std::string>{"0", "0"}))
      << "the fill stayed in its range";
  EXPECT_EQ(exporter.cmd(line("check 0", 7 * kMiB, kMiB, 33)), kSame);
  // Asynchronous copies complete on their stream, the bytes on the other server.
  EXPECT_EQ(importer.cmd(line("async 0", 2 * kMiB, kMiB, 55)), kSame);
  EXPECT_EQ(exporter.cmd(line("check 0", 2 * kMiB, kMiB, 55)), kSame);
  // The exporter writes; the importer reads it at once.
  ASSERT_EQ(exporter.rc(line("write 0", 5 * kMiB, kMiB, 44)), kOk);
  EXPECT_EQ(importer.cmd(line("check 0", 5 * kMiB, kMiB, 44)), kSame);

  // The CPU cannot be given memory that lives on another server (the vendor refuses it too).
  EXPECT_EQ(importer.rc("hostaccess 0"), share_test::kNotSupported);
  // The handle is no export of the importer's: it cannot pass it on.
  EXPECT_NE(Peer::code_of(importer.cmd(line("export2 0", kDisablePids, kFabric))), kOk);

  // The import ends: the exporter's holder goes, the exporter frees its memory.
  ASSERT_EQ(importer.rc("unmap 0"), kOk);
  ASSERT_EQ(importer.rc("free 0"), kOk);
  EXPECT_EQ(holders_become(exporter, 0), 0);
  EXPECT_EQ(importer.finish(), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

// The whitelist as on one server, host memory and unknown handles, in one table.
TEST_F(FabricPod, TheWhitelistAndTheRefusals) {
  start(3);
  Peer& exporter = peer_on(0);
  Peer& listed = peer_on(1);
  Peer& other = peer_on(2);
  const std::string whitelisted = export_fabric(exporter, 0, 2 * kMiB, 1, 0);
  const std::string open = export_fabric(exporter, 1, 2 * kMiB, 2, kDisablePids, 3);
  const std::string unlisted = export_fabric(exporter, 2, 2 * kMiB, 3, 0);
  ASSERT_EQ(exporter.rc(line("setpid2", kFabric, whitelisted, listed.tgid())), kOk);
  ASSERT_EQ(exporter.rc("halloc 3 2097152"), kOk);
  auto host = exporter.cmd(line("export2 3", kDisablePids, kFabric));
  ASSERT_EQ(Peer::code_of(host), kOk);
  // A handle whose share id no export has (the last word's low bits changed).
  std::vector<unsigned char> forged = share_test::bytes_of(open);
  forged[16] ^= 0x40;
  const std::string unknown = share_test::hex_of(forged.data(), forged.size());

  struct Case {
    const char* what;
    Peer* importer;
    std::string handle;
    int expected;
  };
  const Case cases[] = {
      {"a whitelisted process", &listed, whitelisted, kOk},
      {"a process not on the whitelist", &other, whitelisted, share_test::kDrv},
      {"a handle exported without validation, any server's process", &other, open, kOk},
      {"an export nobody was listed for", &listed, unlisted, share_test::kDrv},
      {"host memory (never crosses servers)", &listed, host[1], share_test::kNotSupported},
      {"a share id no export has", &other, unknown, share_test::kBadHandle},
  };
  int slot = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string s = std::to_string(slot++);
    EXPECT_EQ(Peer::code_of(c.importer->cmd(line("import2", s, kFabric, c.handle, 0))), c.expected);
  }
  // What was admitted is the exporter's memory.
  ASSERT_EQ(listed.rc(line("map 0", 2 * kMiB)), kOk);
  EXPECT_EQ(listed.cmd(line("check 0 0", 2 * kMiB, 1)), kSame);
  ASSERT_EQ(other.rc(line("map 2", 2 * kMiB)), kOk);
  EXPECT_EQ(other.cmd(line("check 2 0", 2 * kMiB, 2)), kSame);
  // The same share id named by another server's handle is another export (two servers'
  // exporters may hand out one share id): not the import above again, but server 11's to answer,
  // where nobody exports (107017).
  std::vector<unsigned char> elsewhere = share_test::bytes_of(open);
  uint32_t sdid = 0;
  std::memcpy(&sdid, elsewhere.data() + 4, sizeof sdid);
  sdid = (sdid & 0x3FFFFFu) | (static_cast<uint32_t>(server_of(1)) << 22);
  std::memcpy(elsewhere.data() + 4, &sdid, sizeof sdid);
  EXPECT_EQ(Peer::code_of(other.cmd(line("import2 6", kFabric,
                                         share_test::hex_of(elsewhere.data(), elsewhere.size()), 0))),
            share_test::kBadHandle);
  // Its properties name the exporter's device (3, on server 10), not the importer's (0).
  const auto props = other.cmd("props 2");
  ASSERT_EQ(props.size(), 4u);
  EXPECT_EQ(props[2], std::to_string(ACL_MEM_LOCATION_TYPE_DEVICE));
  EXPECT_EQ(props[3], "3");
  EXPECT_EQ(holders(exporter), 2);
  EXPECT_GE(aclvmm_test::stat_int(exporter.stats(), "ipc.imports_denied"), 2);
}

// The exporter exits while the importer holds and maps its memory: the importer's next copies
// fail with a code, within their bound, and the importer goes on working.
TEST_F(FabricPod, AnExporterThatExitsFailsTheNextCopyNotTheProcess) {
  start(2);
  Peer& exporter = peer_on(0);
  Peer& importer = peer_on(1);
  const std::string handle = export_fabric(exporter, 0, 2 * kMiB, 5, kDisablePids);
  ASSERT_NO_FATAL_FAILURE(import_and_map(importer, 0, handle, 2 * kMiB));
  ASSERT_EQ(importer.cmd(line("check 0 0", 2 * kMiB, 5)), kSame);
  EXPECT_EQ(exporter.kill_and_wait(), 128 + SIGKILL);
  const double t0 = share_test::now_s();
  const int read = Peer::code_of(importer.cmd(line("check 0 0", 2 * kMiB, 5), 30000));
  EXPECT_NE(read, kOk);
  EXPECT_NE(read, share_test::kNoReply) << "the copy hung";
  EXPECT_NE(importer.rc(line("memset 0 0", 4096, 1), 30000), kOk);
  EXPECT_LT(share_test::now_s() - t0, 25.0);
  // The process is fine: its own memory works, the dead import is released.
  ASSERT_EQ(importer.rc(line("alloc 1 0", 2 * kMiB)), kOk);
  ASSERT_EQ(importer.rc(line("map 1", 2 * kMiB)), kOk);
  ASSERT_EQ(importer.rc(line("write 1 0", 2 * kMiB, 6)), kOk);
  EXPECT_EQ(importer.cmd(line("check 1 0", 2 * kMiB, 6)), kSame);
  EXPECT_EQ(importer.rc("unmap 0"), kOk);
  EXPECT_EQ(importer.rc("free 0"), kOk);
  // And a new import of the dead exporter's handle finds nobody.
  EXPECT_EQ(Peer::code_of(importer.cmd(line("import2 2", kFabric, handle, 0))),
            share_test::kBadHandle);
  EXPECT_EQ(importer.finish(), 0);
}

// An importer that dies: the exporter's holder count drops to 0. Memory the exporter freed
// meanwhile stays readable for the holder until then.
TEST_F(FabricPod, AnImporterThatExitsDropsItsHold) {
  start(2);
  Peer& exporter = peer_on(0);
  Peer& importer = peer_on(1);
  const std::string handle = export_fabric(exporter, 0, 2 * kMiB, 7, kDisablePids);
  ASSERT_NO_FATAL_FAILURE(import_and_map(importer, 0, handle, 2 * kMiB));
  EXPECT_EQ(holders(exporter), 1);
  // The exporter lets go of its handle: the importer still holds the bytes (as on hardware).
  ASSERT_EQ(exporter.rc("unmap 0"), kOk);
  ASSERT_EQ(exporter.rc("free 0"), kOk);
  EXPECT_EQ(importer.cmd(line("check 0 0", 2 * kMiB, 7)), kSame);
  EXPECT_EQ(importer.kill_and_wait(), 128 + SIGKILL);
  EXPECT_EQ(holders_become(exporter, 0), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

// The link between the servers is cut under a mapped import: copies answer with a code within
// their bound; the importer's later imports fail likewise instead of hanging.
TEST_F(FabricPod, ACutLinkGivesCodesNotHangs) {
  start(2);
  Peer& exporter = peer_on(0);
  Peer& importer = peer_on(1);
  const std::string handle = export_fabric(exporter, 0, 4 * kMiB, 9, kDisablePids);
  const std::string second = export_fabric(exporter, 1, 2 * kMiB, 10, kDisablePids);
  ASSERT_NO_FATAL_FAILURE(import_and_map(importer, 0, handle, 4 * kMiB));
  ASSERT_EQ(importer.cmd(line("check 0 0", 4 * kMiB, 9)), kSame);
  ASSERT_TRUE(pod_->cut(0));
  const double t0 = share_test::now_s();
  const int read = Peer::code_of(importer.cmd(line("check 0 0", 4 * kMiB, 9), 30000));
  EXPECT_NE(read, kOk);
  EXPECT_NE(read, share_test::kNoReply) << "the copy hung";
  EXPECT_NE(importer.rc(line("write 0 0", kMiB, 3), 30000), kOk);
  const int again = Peer::code_of(importer.cmd(line("import2 1", kFabric, second, 0), 30000));
  EXPECT_NE(again, kOk);
  EXPECT_NE(again, share_test::kNoReply);
  EXPECT_LT(share_test::now_s() - t0, 28.0);
  // The exporter's side: keep-alive finds the importer gone and the holder is dropped.
  EXPECT_EQ(holders_become(exporter, 0), 0);
  EXPECT_EQ(importer.finish(), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

// Four servers: three import one export at once; what one writes the others read.
TEST_F(FabricPod, FourServersShareOneExport) {
  start(4);
  Peer& exporter = peer_on(0);
  std::vector<Peer*> importers = {&peer_on(1), &peer_on(2), &peer_on(3)};
  const std::string handle = export_fabric(exporter, 0, 6 * kMiB, 12, kDisablePids);
  for (Peer* p : importers) {
    ASSERT_NO_FATAL_FAILURE(import_and_map(*p, 0, handle, 6 * kMiB));
  }
  EXPECT_EQ(holders(exporter), 3);
  for (Peer* p : importers) p->send(line("check 0 0", 6 * kMiB, 12));
  for (Peer* p : importers) EXPECT_EQ(p->reply("check"), kSame);
  // Each writes its own 2 MiB; every other one reads all three.
  for (size_t i = 0; i < importers.size(); ++i) {
    ASSERT_EQ(importers[i]->rc(line("write 0", i * 2 * kMiB, 2 * kMiB, 40 + i)), kOk);
  }
  for (Peer* p : importers) {
    for (size_t i = 0; i < importers.size(); ++i) {
      EXPECT_EQ(p->cmd(line("check 0", i * 2 * kMiB, 2 * kMiB, 40 + i)), kSame);
    }
  }
  for (Peer* p : importers) EXPECT_EQ(p->finish(), 0);
  EXPECT_EQ(holders_become(exporter, 0), 0);
  EXPECT_EQ(exporter.finish(), 0);
}

}  // namespace
