// Kept connections between importers and exporters (issue 19; docs/sharing.md §5, "Kept
// connections"): an importer's next import from an exporter goes over the connection of its last
// one; a connection the exporter closed is replaced by a fresh one without the import noticing;
// and neither side believes a kept connection once the process at its other end has exited,
// whoever holds that end now.
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "integration/share_peer/hostile_child.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareLinks = AclTest;

constexpr unsigned kSeed = 510;

long long ipc_stat(Peer& p, const char* key) {
  return stat_int(p.stats(), std::string("ipc.") + key);
}
long long my_ipc_stat(const char* key) { return stat_int(stats(), std::string("ipc.") + key); }

// Waits up to 3 s for this process's statistic `key` to read `want`.
bool my_stat_becomes(const char* key, long long want) {
  for (int i = 0; i < 150; ++i) {
    if (my_ipc_stat(key) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Imports `token` in the peer into slot 7, checks the first 4 KiB and frees it.
void import_in(Peer& im, uint64_t token, unsigned seed) {
  ASSERT_EQ(im.rc(line("import 7", hex(token), 0)), kOk) << hex(token);
  ASSERT_EQ(im.rc(line("map 7", k2M)), kOk);
  EXPECT_EQ(im.cmd(line("check 7 0 4096", seed)), (std::vector<std::string>{"0", "1"}));
  ASSERT_EQ(im.rc("unmap 7"), kOk);
  ASSERT_EQ(im.rc("free 7"), kOk);
}

// A peer importing 20 exports of this process one after the other asks all of them over the
// connection of its first import from each endpoint (one, or two when the 20 share ids run over
// the end of a group of 256), and this process's listener holds those connections; with
// ACLVMM_SHARE_LINKS=0 every import connects afresh and nothing stays.
TEST_F(ShareLinks, ImportsFromOneExporterShareOneConnection) {
  const struct {
    const char* env;
    bool keeps;
  } cases[] = {{"ACLVMM_SHARE_LINKS=64", true}, {"ACLVMM_SHARE_LINKS=0", false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.env);
    std::vector<LocalExport> exports;
    std::set<uint32_t> endpoints;
    for (unsigned i = 0; i < 20; ++i) {
      exports.push_back(export_local(kSeed + i, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION));
      endpoints.insert(endpoint_id_of(static_cast<uint32_t>(exports.back().token)));
    }
    const long long groups = static_cast<long long>(endpoints.size());
    Peer im({c.env});
    const long long wakeups0 = my_ipc_stat("listener_wakeups");
    for (unsigned i = 0; i < exports.size(); ++i) import_in(im, exports[i].token, kSeed + i);
    if (c.keeps) {
      // One wake-up of this process's listener per import on a kept connection (the request),
      // as the raw descriptor pass; a fresh connection may cost one more (its accept).
      EXPECT_LE(my_ipc_stat("listener_wakeups") - wakeups0, 20 + groups);
    }
    EXPECT_EQ(ipc_stat(im, "links_reused"), c.keeps ? 20 - groups : 0);
    EXPECT_EQ(ipc_stat(im, "importer_links"), c.keeps ? groups : 0);
    EXPECT_TRUE(my_stat_becomes("exporter_links", c.keeps ? groups : 0))
        << my_ipc_stat("exporter_links");
    EXPECT_EQ(im.finish(), 0);
    // The importer is gone: its connection ends with it.
    EXPECT_TRUE(my_stat_becomes("exporter_links", 0)) << my_ipc_stat("exporter_links");
    for (LocalExport& e : exports) e.release();
  }
}

// The exporter's listener ends with its last export and closes the connections it kept. The
// importer still holds its end; its next import from that exporter finds it closed, closes it
// and connects afresh: the import succeeds, and is the only one not counted as reused.
TEST_F(ShareLinks, AConnectionTheExporterClosedIsReplaced) {
  Peer e;
  fill_slot(e, 0, kSeed);
  const uint64_t first = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  void* va = nullptr;
  {
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMemImportFromShareableHandle(first, 0, &h), kOk);
    ASSERT_EQ(aclrtFreePhysical(h), kOk);
  }
  ASSERT_EQ(my_ipc_stat("importer_links"), 1);
  const long long reused0 = my_ipc_stat("links_reused");
  // The export ends, the listener lingers 200 ms and ends, closing the kept connection.
  ASSERT_EQ(e.rc("unmap 0"), kOk);
  ASSERT_EQ(e.rc("free 0"), kOk);
  bool closed = false;
  for (int i = 0; i < 150 && !closed; ++i) {
    closed = ipc_stat(e, "exporter_links") == 0 && endpoints_of(e.tgid()).empty();
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(closed) << "the exporter's listener did not end";
  EXPECT_EQ(my_ipc_stat("importer_links"), 1) << "this end is only found closed when used";

  fill_slot(e, 1, kSeed + 1);
  const uint64_t second = e.export_token(1, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  // Share ids go on from the last one, so the new export is in the old one's group (the group of
  // 256 changes only when the first one ended at its last serial).
  const bool same_group =
      endpoint_id_of(static_cast<uint32_t>(first)) == endpoint_id_of(static_cast<uint32_t>(second));
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(second, 0, &h), kOk);
  va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_TRUE(get(va, k2M) == share_peer::peer_pattern(k2M, kSeed + 1));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  if (same_group) {
    EXPECT_EQ(my_ipc_stat("links_reused"), reused0) << "an answer came over the closed connection";
    EXPECT_EQ(my_ipc_stat("importer_links"), 1) << "the closed connection was not replaced";
  }
  // The new connection serves the next import.
  ASSERT_EQ(aclrtMemImportFromShareableHandle(second, 1, &h), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(my_ipc_stat("links_reused"), reused0 + 1);
  EXPECT_EQ(e.finish(), 0);
}

// ---- a connection whose process exited, held by another one

WireReply memory_reply() { return WireReply{kWireMagic, 0, k2M, 0, 0, 1, 0}; }
std::string bytes_of(const WireReply& r) {
  return std::string(reinterpret_cast<const char*>(&r), sizeof r);
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

// A forked child (raw system calls only) that binds the endpoint of a share id naming its own
// pid, reports the token, answers the first request with `first`'s memory, and on a byte from
// `go` forks a holder of the connection and exits. The holder closes the endpoint and answers
// the next request on the connection with `second`'s memory.
int handing_exporter(int report, int go, const std::string& reply, const std::vector<int>& first,
                     const std::vector<int>& second) {
  int s = -1;
  uint32_t id = 0;
  for (uint32_t serial = 1; serial < 200 && s < 0; ++serial) {
    id = share_id_for(static_cast<uint32_t>(getpid()), serial);
    s = bind_endpoint_id(id);
  }
  const uint64_t token = id;
  if (s < 0 || write(report, &token, sizeof token) != sizeof token) return 91;
  if (!readable(s, 10000)) return 92;
  const int conn = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
  WireRequest req{};
  if (conn < 0 || !readable(conn, 5000) || recv(conn, &req, sizeof req, 0) != sizeof req) return 93;
  if (!send_with_fds(conn, reply, first)) return 94;
  char b = 0;
  if (!readable(go, 10000) || read(go, &b, 1) != 1) return 95;
  if (fork() == 0) {
    close(s);  // nobody serves the name any more
    if (readable(conn, 5000) && recv(conn, &req, sizeof req, 0) == sizeof req) {
      (void)send_with_fds(conn, reply, second);
      (void)readable(conn, 5000);  // until the importer hangs up
    }
    _exit(0);
  }
  return 0;
}

// The importer pinned the exporter when it connected: once that process has exited, a reply on
// the kept connection is not read (whoever sends it is not the process the token names), the
// import connects afresh and finds nobody: 107017, never the holder's memory.
TEST_F(ShareLinks, AnExportersConnectionHeldByAnotherProcessIsNotBelieved) {
  const std::string first = share_peer::peer_pattern(k2M, kSeed);
  // Everything the child sends is made here: after a fork of this multithreaded process the child
  // makes system calls only.
  const std::string reply = bytes_of(memory_reply());
  const std::vector<int> first_memory{sealed_memfd(first)};
  const std::vector<int> second_memory{sealed_memfd(share_peer::peer_pattern(k2M, kSeed + 1))};
  ASSERT_GE(first_memory[0], 0);
  ASSERT_GE(second_memory[0], 0);
  int report[2], go[2];
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  fflush(nullptr);
  const pid_t exporter = fork();
  if (exporter == 0) _exit(handing_exporter(report[1], go[0], reply, first_memory, second_memory));
  close(report[1]);
  close(go[0]);
  close(first_memory[0]);
  close(second_memory[0]);
  uint64_t token = 0;
  ASSERT_TRUE(readable(report[0], 10000));
  ASSERT_EQ(read(report[0], &token, sizeof token), static_cast<ssize_t>(sizeof token));

  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(token, 0, &h), kOk);
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_TRUE(get(va, 4096) == first.substr(0, 4096));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  ASSERT_EQ(my_ipc_stat("importer_links"), 1);

  // The exporter hands the connection on and exits; it is reaped, so its pid may be anyone's.
  ASSERT_EQ(write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(exporter, &status, 0), exporter);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const long long reused0 = my_ipc_stat("links_reused");
  h = nullptr;
  EXPECT_EQ(aclrtMemImportFromShareableHandle(token, 0, &h), kBadHandle);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(my_ipc_stat("links_reused"), reused0);
  EXPECT_EQ(my_ipc_stat("importer_links"), 0);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  close(report[0]);
  close(go[1]);
}

// The exporter's side of the same: a whitelisted importer's connection, kept, handed to another
// process when the importer exits. Its pid listed again after that (as for a new process that
// got the pid) is not the holder's to use: the request is dropped unanswered, no memory.
TEST_F(ShareLinks, AnImportersConnectionHeldByAnotherProcessIsNotAnswered) {
  LocalExport e = export_local(kSeed);
  int go[2], report[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
  const std::string req = request(e.token);
  fflush(nullptr);
  const pid_t importer = fork();
  if (importer == 0) {
    // Raw calls only: connect when told, import once, then fork the holder and exit.
    char b = 0;
    if (!readable(go[0], 10000) || read(go[0], &b, 1) != 1) _exit(91);
    const int s = connect_endpoint(e.token);
    if (s < 0 || !send_message(s, req)) _exit(92);
    Answer a;
    await(s, 5000, &a);
    const char got = a.kind == Answer::kReply && a.fd >= 0 ? 'm' : 'n';
    if (write(report[1], &got, 1) != 1) _exit(93);
    if (!readable(go[0], 10000) || read(go[0], &b, 1) != 1) _exit(94);
    if (fork() == 0) {
      // The holder: asks on the importer's connection when told, and reports what came.
      if (!readable(go[0], 10000) || read(go[0], &b, 1) != 1) _exit(0);
      Answer again;
      char what = 'x';
      if (send_message(s, req)) {
        await(s, 3000, &again);
        what = again.kind == Answer::kReply    ? (again.fd >= 0 ? 'm' : 'r')
               : again.kind == Answer::kHangUp ? 'h'
                                               : 's';
      }
      (void)write(report[1], &what, 1);
      _exit(0);
    }
    _exit(0);
  }
  close(go[0]);
  close(report[1]);
  int32_t pid = importer;
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
  ASSERT_EQ(write(go[1], "c", 1), 1);
  char got = 0;
  ASSERT_TRUE(readable(report[0], 10000));
  ASSERT_EQ(read(report[0], &got, 1), 1);
  EXPECT_EQ(got, 'm') << "the listed importer got no memory";
  ASSERT_TRUE(my_stat_becomes("exporter_links", 1));
  ASSERT_EQ(write(go[1], "f", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(importer, &status, 0), importer);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // Listed again now, after the importer exited: for whichever process has the pid next.
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
  const long long dropped0 = my_ipc_stat("connections_dropped");
  ASSERT_EQ(write(go[1], "a", 1), 1);
  ASSERT_TRUE(readable(report[0], 10000));
  ASSERT_EQ(read(report[0], &got, 1), 1);
  EXPECT_EQ(got, 'h') << "m: memory, r: a refusal, s: silence, x: the request could not be sent";
  EXPECT_EQ(my_ipc_stat("connections_dropped"), dropped0 + 1);
  EXPECT_TRUE(my_stat_becomes("exporter_links", 0));
  close(go[1]);
  close(report[0]);
  e.release();
}

// An import of a token the exporter no longer has, over a kept connection: the "unknown" answer
// is asked again on a fresh connection (the kept one may lead to a process that has given the
// group up), then believed. Neither answer is counted as reused, and no connection stays.
TEST_F(ShareLinks, AnUnknownAnswerIsAskedAgainOnAFreshConnection) {
  Peer e;
  fill_slot(e, 0, kSeed);
  fill_slot(e, 1, kSeed + 1);
  const uint64_t kept = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const uint64_t gone = e.export_token(1, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(endpoint_id_of(static_cast<uint32_t>(kept)),
            endpoint_id_of(static_cast<uint32_t>(gone)))
      << "two share ids in a row of one process are in one group but at a group's end";
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(kept, 0, &h), kOk);
  ASSERT_EQ(aclrtFreePhysical(h), kOk);
  ASSERT_EQ(my_ipc_stat("importer_links"), 1);
  ASSERT_EQ(e.rc("unmap 1"), kOk);
  ASSERT_EQ(e.rc("free 1"), kOk);  // its export ends
  const long long reused0 = my_ipc_stat("links_reused");
  const long long accepted0 = ipc_stat(e, "listener_wakeups");
  h = nullptr;
  EXPECT_EQ(aclrtMemImportFromShareableHandle(gone, 0, &h), kBadHandle);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(my_ipc_stat("links_reused"), reused0);
  EXPECT_EQ(my_ipc_stat("importer_links"), 0);
  // Two requests reached the exporter: over the kept connection, then over a new one.
  EXPECT_GE(ipc_stat(e, "listener_wakeups") - accepted0, 2);
  // The export still live is imported as before.
  ASSERT_EQ(aclrtMemImportFromShareableHandle(kept, 0, &h), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(e.finish(), 0);
}

// Another user's process that some export admits (one without pid validation) may have
// connections kept too, but at most 64 of them, however many it makes: kept connections have
// no deadline. This process's own user's importers are not limited by it.
TEST_F(ShareLinks, AnotherUsersKeptConnectionsAreCapped) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  LocalExport e = export_local(kSeed, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const std::string probe = request(e.token, kWireProbe);
  constexpr int kConnections = 100;
  HostileChild other([&](int stop, int report) {
    std::vector<int> conns;
    conns.reserve(kConnections);
    char answered = 0;
    for (int i = 0; i < kConnections; ++i) {
      const int s = connect_endpoint(e.token);
      if (s < 0 || !send_message(s, probe)) return 91;
      Answer a;
      await(s, 5000, &a);
      if (a.kind == Answer::kReply && a.reply.code == 0) ++answered;
      conns.push_back(s);
    }
    if (write(report, &answered, 1) != 1) return 92;
    char b;
    (void)read(stop, &b, 1);  // holds them until told to stop
    return 0;
  });
  const char answered = other.next_report(30000);
  EXPECT_EQ(answered, kConnections) << "every probe is answered";
  EXPECT_TRUE(my_stat_becomes("exporter_links", 64)) << my_ipc_stat("exporter_links");
  Peer im;
  import_in(im, e.token, kSeed);
  EXPECT_TRUE(my_stat_becomes("exporter_links", 65)) << my_ipc_stat("exporter_links");
  EXPECT_TRUE(other.stop());
  EXPECT_TRUE(my_stat_becomes("exporter_links", 1)) << my_ipc_stat("exporter_links");
  EXPECT_EQ(im.finish(), 0);
  e.release();
}

// Where kept connections cannot be moved above the soft descriptor limit (here hard == soft ==
// 512), they would take the application's own descriptors: at most a sixteenth of its range is
// theirs (32 connections of two descriptors here), whoever asks.
TEST_F(ShareLinks, KeptConnectionsInTheApplicationsRangeAreFew) {
  Peer e;
  ASSERT_EQ(e.rc("limit nofile 512 512"), kOk);
  fill_slot(e, 0, kSeed);
  const uint64_t token = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const std::string probe = request(token, kWireProbe);
  std::vector<int> conns;
  for (int i = 0; i < 50; ++i) {
    const int s = connect_endpoint(token);
    ASSERT_GE(s, 0);
    ASSERT_TRUE(send_message(s, probe));
    Answer a;
    await(s, 5000, &a);
    ASSERT_EQ(a.kind, Answer::kReply) << i;
    EXPECT_EQ(a.reply.code, 0) << i;
    conns.push_back(s);
  }
  EXPECT_EQ(ipc_stat(e, "exporter_links"), 32);
  for (int s : conns) close(s);
  EXPECT_EQ(e.finish(), 0);
}

}  // namespace
