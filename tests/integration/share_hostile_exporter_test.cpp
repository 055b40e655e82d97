// A hostile exporter (issue 13, item 2; docs/sharing.md "Trust model"): a process of another user
// that really is the process its token names (it binds the name made from its own pid) answers an
// import with a reply or a descriptor this library would never send. The importer checks every
// field and the descriptor before it creates anything: each such reply gives 507899 and leaves no
// handle and no descriptor behind; only the meaningful refusals (107017, 507899) pass through.
#include <random>

#include "api/hostile_util.h"
#include "integration/share_peer/hostile_child.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareHostileExporter = AclTest;

constexpr unsigned kFakeSeed = 88;

struct FakeReply {
  const char* what;
  std::string bytes;                  // the reply message; empty: hang up without one
  std::function<int()> memory;        // the descriptor attached, or nullptr for none
  aclError expected;
};

WireReply good_reply() { return WireReply{kWireMagic, 0, k2M, 0, 0, 1, 0}; }
std::string as_bytes(const WireReply& r) { return std::string(reinterpret_cast<const char*>(&r), sizeof r); }
std::string with(std::function<void(WireReply&)> change) {
  WireReply r = good_reply();
  change(r);
  return as_bytes(r);
}

// A child of another user that binds the endpoint of a share id naming its own pid, reports the
// token (8 bytes), answers the first request with `c`, and exits (the importer may keep its
// connection for a next import: it does not hang up).
int fake_exporter(const FakeReply& c, int report) {
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  int s = -1;
  uint32_t id = 0;
  for (int i = 0; i < 100 && s < 0; ++i) {
    id = share_id_for(static_cast<uint32_t>(getpid()), 1 + rng() % 16000);
    s = bind_endpoint_id(id);
  }
  if (s < 0) return 91;
  const uint64_t token = id;
  if (write(report, &token, sizeof token) != sizeof token) return 92;
  pollfd p{s, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) return 93;
  const int conn = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
  WireRequest req{};
  pollfd q{conn, POLLIN, 0};
  if (conn < 0 || poll(&q, 1, 5000) != 1 || recv(conn, &req, sizeof req, 0) != sizeof req) return 94;
  if (c.bytes.empty()) return 0;  // hangs up
  std::vector<int> fds;
  if (c.memory) fds.push_back(c.memory());
  if (!fds.empty() && fds[0] < 0) return 95;
  if (!send_with_fds(conn, c.bytes, fds)) return 96;
  return 0;  // what was sent stays readable after the exit
}

TEST_F(ShareHostileExporter, EveryFieldOfTheReplyIsChecked) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  const std::string bytes = share_peer::peer_pattern(k2M, kFakeSeed);
  auto sealed = [&] { return sealed_memfd(bytes); };
  auto sealed_with = [&](int seals) { return [&bytes, seals] { return sealed_memfd(bytes, seals); }; };
  constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  const std::vector<FakeReply> cases = {
      {"a reply as the library sends it (control)", as_bytes(good_reply()), sealed, kOk},
      {"host memory as the library sends it (control)", with([](WireReply& r) { r.side = 1; }), sealed, kOk},
      {"memory side 4", with([](WireReply& r) { r.side = 4; }), sealed, kDrv},
      {"device 200", with([](WireReply& r) { r.device = 200; }), sealed, kDrv},
      {"device 8, one past the device count", with([](WireReply& r) { r.device = 8; }), sealed, kDrv},
      {"device -1", with([](WireReply& r) { r.device = -1; }), sealed, kDrv},
      {"host memory on node 64", with([](WireReply& r) { r.side = 2, r.device = 64; }), sealed, kDrv},
      {"a size larger than the memory", with([](WireReply& r) { r.size = 2 * k2M; }), sealed, kDrv},
      {"size 0", with([](WireReply& r) { r.size = 0; }), sealed, kDrv},
      {"a size that is no allocation's (4 KiB, memory of 4 KiB)", with([](WireReply& r) { r.size = 4096; }),
       [] { return sealed_memfd(std::string(4096, 'x')); }, kDrv},
      {"page type 7", with([](WireReply& r) { r.page_type = 7; }), sealed, kDrv},
      {"memory type 9", with([](WireReply& r) { r.mem_type = 9; }), sealed, kDrv},
      {"result code 12345", with([](WireReply& r) { r.code = 12345; }), sealed, kDrv},
      {"result code 0 and no memory", as_bytes(good_reply()), nullptr, kDrv},
      {"a wrong magic", with([](WireReply& r) { r.magic ^= 1; }), sealed, kDrv},
      {"a 16-byte reply", as_bytes(good_reply()).substr(0, 16), sealed, kDrv},
      {"an unsealed memfd", as_bytes(good_reply()), sealed_with(0), kDrv},
      {"a memfd whose writes are sealed off", as_bytes(good_reply()), sealed_with(kSeals | F_SEAL_WRITE), kDrv},
      {"a memfd that may be sealed later", as_bytes(good_reply()), sealed_with(F_SEAL_SHRINK | F_SEAL_GROW), kDrv},
      {"a read-only descriptor of sealed memory", as_bytes(good_reply()),
       [&] {
         const int fd = sealed_memfd(bytes);
         const int ro = open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
         close(fd);
         return ro;
       },
       kDrv},
      {"a pipe", as_bytes(good_reply()),
       [] {
         int p[2];
         if (pipe2(p, O_CLOEXEC) != 0) return -1;
         close(p[1]);
         return p[0];
       },
       kDrv},
      {"\"unknown\" (meaningful), memory attached anyway", with([](WireReply& r) { r.code = 107017; }), sealed,
       kBadHandle},
      {"\"refused\" (meaningful)", with([](WireReply& r) { r.code = 507899; }), nullptr, kDrv},
      {"a hang-up without a reply", "", nullptr, kBadHandle},
  };
  // A failed call opens this process's log file now, so that the first refusal logged later is
  // not mistaken for a kept descriptor.
  EXPECT_EQ(aclrtFreePhysical(nullptr), kParam);
  const long long refused0 = stat_int(stats(), "ipc.replies_refused");
  long malformed = 0;
  for (const FakeReply& c : cases) {
    SCOPED_TRACE(c.what);
    HostileChild fake([&c](int, int report) { return fake_exporter(c, report); });
    uint64_t token = 0;
    ASSERT_TRUE(fake.read_report(&token, sizeof token, 10000)) << "the fake exporter did not start";
    const size_t fds0 = open_links().size();
    const LiveCounts live0 = live_counts();
    aclrtDrvMemHandle h = nullptr;
    const aclError rc = aclrtMemImportFromShareableHandle(token, 0, &h);
    EXPECT_EQ(rc, c.expected);
    if (rc == kOk) {
      // The control: it is the exporter its token names, so its memory is what the import gets.
      void* va = reserve(k2M);
      ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
      EXPECT_TRUE(get(va, k2M) == bytes);
      EXPECT_EQ(aclrtUnmapMem(va), kOk);
      EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
      EXPECT_EQ(aclrtFreePhysical(h), kOk);
    } else {
      EXPECT_EQ(h, nullptr);
      EXPECT_EQ(live_counts(), live0) << "a refused reply created something";
      EXPECT_EQ(open_links().size(), fds0) << "a refused descriptor was kept";
      if (c.expected == kDrv && std::string(c.what).find("meaningful") == std::string::npos) ++malformed;
    }
    EXPECT_TRUE(fake.stop()) << "the fake exporter failed";
  }
  EXPECT_EQ(stat_int(stats(), "ipc.replies_refused") - refused0, malformed);
  std::printf("hostile exporter: %zu replies (%ld malformed), one import each\n", cases.size(), malformed);
}

}  // namespace
