// Squatters (issue 13, item 2; docs/sharing.md "Trust model"): a process of another user binds the
// endpoint name of a token that nobody serves and answers imports with memory of its own. The
// importer asks the kernel who listens, sees that it is not the process the token names, and
// gives 107017 (behavior.md §7: unknown or released) without sending it anything; set-pid's probe
// does the same. The squatter's bytes never reach the importer.
#include <random>
#include <set>

#include "api/hostile_util.h"
#include "integration/share_peer/hostile_child.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareHostileSquatter = AclTest;

constexpr unsigned kSquatterSeed = 99;

// A child of another user that binds the endpoint names of `ids` and answers every request as a
// willing exporter would: code 0 and a sealed memfd of its own bytes. It reports 'r' once it
// holds the names, and when stopped what it saw: connections accepted, requests received.
int squat(const std::vector<uint32_t>& ids, int stop, int report) {
  std::vector<pollfd> fds{{stop, POLLIN, 0}};
  std::set<uint32_t> bound;  // ids of one group share an endpoint
  for (uint32_t id : ids) {
    if (!bound.insert(endpoint_id_of(id)).second) continue;
    const int s = bind_endpoint_id(id);
    if (s < 0) return 91;
    fds.push_back({s, POLLIN, 0});
  }
  const int mem = sealed_memfd(share_peer::peer_pattern(k2M, kSquatterSeed));
  if (mem < 0) return 92;
  if (write(report, "r", 1) != 1) return 93;
  long counts[2] = {0, 0};
  for (bool stopping = false; !stopping;) {
    if (poll(fds.data(), fds.size(), 20000) <= 0) return 94;
    if (fds[0].revents) {
      // Told to stop: count what is still queued, then report.
      stopping = true;
      if (poll(fds.data() + 1, fds.size() - 1, 0) <= 0) break;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const int c = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++counts[0];
      pollfd p{c, POLLIN, 0};
      WireRequest req{};
      if (poll(&p, 1, 500) == 1 && recv(c, &req, sizeof req, 0) == sizeof req) {
        ++counts[1];
        const WireReply rep{kWireMagic, 0, k2M, 0, 0, 1, 0};
        send_with_fds(c, std::string(reinterpret_cast<const char*>(&rep), sizeof rep), {mem});
      }
      close(c);
      if (stopping) stopping = poll(fds.data() + 1, fds.size() - 1, 0) <= 0;  // more queued
    }
  }
  return write(report, counts, sizeof counts) == sizeof counts ? 0 : 95;
}

// A pid no process has now.
int32_t unused_pid() {
  for (int32_t pid = 30000; pid > 1000; --pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return pid;
  }
  return 0;
}

TEST_F(ShareHostileSquatter, SquattedNamesGiveUnknownTokenAndNoBytes) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  // A real token whose exporter has exited: its name is free for anyone.
  uint64_t stale = 0;
  {
    Peer e;
    ASSERT_EQ(e.rc(line("alloc 0 0", k2M)), kOk);
    stale = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
    EXPECT_EQ(e.finish(), 0);
  }
  Peer bystander;  // a live process that exports nothing
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  const uint32_t serial = 1 + rng() % 16000;
  struct Case {
    const char* what;
    uint64_t token;
  };
  const Case cases[] = {
      {"the token of an exporter that has exited", stale},
      {"a never-issued token naming no process", share_id_for(static_cast<uint32_t>(unused_pid()), serial)},
      {"a never-issued token naming a live process of another program",
       share_id_for(static_cast<uint32_t>(bystander.pid()), serial)},
      {"a never-issued token naming the importer itself", share_id_for(static_cast<uint32_t>(getpid()), serial)},
      {"the same on device 3", share_id_for(static_cast<uint32_t>(getpid()), serial + 1) | (uint64_t{3} << 32)},
  };
  std::vector<uint32_t> ids;
  for (const Case& c : cases) ids.push_back(static_cast<uint32_t>(c.token));
  HostileChild squatter([&ids](int stop, int report) { return squat(ids, stop, report); });
  ASSERT_EQ(squatter.next_report(10000), 'r') << "the squatter could not bind the names";

  const LiveCounts live0 = live_counts();
  const long long refused0 = stat_int(stats(), "ipc.impostors_refused");
  long attempts = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    aclrtDrvMemHandle h = nullptr;
    for (int i = 0; i < 3; ++i, ++attempts) {
      EXPECT_EQ(aclrtMemImportFromShareableHandle(c.token, 0, &h), kBadHandle);
      EXPECT_EQ(h, nullptr);
    }
    // The exporter-only call probes who serves a token of another process: not this one.
    int32_t pid = bystander.pid();
    EXPECT_EQ(aclrtMemSetPidToShareableHandle(c.token, &pid, 1), kBadHandle);
    ++attempts;
    // Another process imports the same way.
    EXPECT_EQ(Peer::code_of(bystander.cmd(line("import 0", hex(c.token), 0))), kBadHandle);
    ++attempts;
  }
  EXPECT_EQ(live_counts(), live0) << "nothing was created from the squatter's answers";
  EXPECT_EQ(stat_int(stats(), "ipc.impostors_refused") - refused0, attempts - 5) << "one per call here";
  long seen[2] = {-1, -1};
  EXPECT_TRUE(squatter.stop(seen, sizeof seen)) << "the squatter failed";
  const long accepted = seen[0], requests = seen[1];
  std::printf("squatter: %ld imports/probes of %zu squatted names; it accepted %ld connections and "
              "received %ld requests\n",
              attempts, ids.size(), accepted, requests);
  EXPECT_EQ(accepted, attempts) << "every call reached the squatter";
  EXPECT_EQ(requests, 0) << "nothing was asked of the squatter";
  EXPECT_EQ(bystander.finish(), 0);
}

}  // namespace
