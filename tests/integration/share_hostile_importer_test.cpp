// A hostile importer (issue 13, item 1; docs/sharing.md "Trust model"): an importer of another
// user, listed by the exporter, goes past the ACL API and works on the memory's descriptor it
// received. Resizing it or sealing writes off fails with EPERM, so the exporter's copies and its
// CPU reads of host-mapped memory keep working; what it can do (zero a range by punching a hole)
// is what the API lets it do anyway.
#include "api/hostile_util.h"
#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using ShareHostileImporter = AclTest;

// The importer is another user: the peer drops to nobody before it starts the runtime.
std::unique_ptr<Peer> importer_as_other_user() {
  auto im = std::make_unique<Peer>(std::vector<std::string>{}, false);
  EXPECT_EQ(im->rc("user"), 0) << "the peer could not become nobody";
  EXPECT_EQ(im->rc("init"), kOk);
  EXPECT_EQ(im->rc("dev 0"), kOk);
  return im;
}

TEST_F(ShareHostileImporter, CannotResizeOrSealTheExportersMemory) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  Peer e;
  // Device memory (checked with D2H copies) and host memory (checked by the CPU, which a short
  // file would kill with SIGBUS).
  fill_slot(e, 0, 71);
  ASSERT_EQ(e.rc(line("halloc 1", k2M)), kOk);
  ASSERT_EQ(e.rc(line("map 1", k2M)), kOk);
  ASSERT_EQ(e.rc(line("cpuwrite 1 0", k2M, 72)), kOk);
  const uint64_t dev_token = e.export_token(0);
  const uint64_t host_token = e.export_token(1);
  auto im = importer_as_other_user();
  const int32_t ipid = im->tgid();
  ASSERT_EQ(e.rc(line("setpid", hex(dev_token), ipid)), kOk);
  ASSERT_EQ(e.rc(line("setpid", hex(host_token), ipid)), kOk);
  ASSERT_EQ(Peer::code_of(im->cmd(line("import 0", hex(dev_token), 0))), kOk);
  ASSERT_EQ(Peer::code_of(im->cmd(line("import 1", hex(host_token), 0))), kOk);

  // Every try on both descriptors: ftruncate smaller, ftruncate larger, F_SEAL_WRITE,
  // F_SEAL_FUTURE_WRITE, fallocate past the end.
  const std::vector<std::string> r = im->cmd("abuse");
  ASSERT_EQ(r.size(), 2u + 2 * 5) << "one reply word per try";
  EXPECT_EQ(r[1], "2") << "the importer holds the two descriptors it received";
  const std::string eperm = std::to_string(EPERM);
  int tries = 0;
  for (size_t i = 2; i < r.size(); ++i, ++tries) EXPECT_EQ(r[i], eperm) << "try " << (i - 2) % 5;
  std::printf("hostile importer: %d tries on received descriptors, all EPERM\n", tries);

  // The exporter did not notice a thing.
  EXPECT_EQ(e.cmd(line("check 0 0", k2M, 71)), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(e.cmd(line("cpucheck 1 0", k2M, 72)), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(im->rc(line("map 0", k2M)), kOk);
  EXPECT_EQ(im->cmd(line("check 0 0", k2M, 71)), (std::vector<std::string>{"0", "1"}));

  // Zeroing is within the importer's rights through the API too: a punched hole reads as zeros
  // everywhere, and nothing faults.
  ASSERT_EQ(im->rc("punch 4096 4096"), 0);
  EXPECT_EQ(e.cmd("zeros 0 4096 4096"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(e.cmd("check 0 0 4096 71"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(e.cmd("zeros 1 4096 4096"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(e.cmd("cpucheck 1 0 4096 72"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(im->finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

}  // namespace
