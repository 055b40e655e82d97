// Exhaustion (issue 13, items 3 and 8; docs/sharing.md §9): other processes decide how many
// connections they open to an exporter, so the exporter holds only a capped number of them and
// never lets them starve its own work; an exporter out of descriptors does not spin; an export
// whose listener thread cannot start fails with 207005 and leaves nothing behind.
#include <algorithm>
#include <deque>

#include "api/hostile_util.h"
#include "integration/share_peer/hostile_child.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareHostileFlood = AclTest;

int fd_count(Peer& p) {
  const auto r = p.cmd("counts");
  return r.size() == 3 ? std::atoi(r[1].c_str()) : -1;
}

// What a flood did: connection attempts, those that went through, those that found the backlog
// full, and those the exporter was seen hanging up on.
struct FloodTotals {
  long attempts = -1, connected = 0, backlog_full = 0, dropped = 0;
};

// A child of another user that opens connection after connection to one endpoint, holding up to
// `hold` of them and never saying a word; it reconnects whenever the exporter drops one. It
// reports 'r' once it has made `warm` connections, 'd' once it has made `attempts` attempts (it
// goes on until stopped), and its FloodTotals when stopped.
int flood(uint32_t share_id, size_t hold, long warm, long attempts, int stop, int report) {
  FloodTotals t;
  t.attempts = 0;
  std::deque<int> held;
  for (;;) {
    pollfd s{stop, POLLIN, 0};
    if (t.attempts % 16 == 0 && poll(&s, 1, 0) == 1) break;
    ++t.attempts;
    const int c = connect_endpoint_id(share_id, SOCK_NONBLOCK);
    if (c >= 0) {
      ++t.connected;
      held.push_back(c);
    } else if (errno == EAGAIN) {
      ++t.backlog_full;  // the exporter is not accepting as fast as this connects
      usleep(200);
    } else {
      return 91;  // the endpoint is gone
    }
    if (held.size() > hold) {
      close(held.front());
      held.pop_front();
    }
    // What the exporter hung up on.
    for (auto it = held.begin(); it != held.end();) {
      pollfd p{*it, POLLIN, 0};
      if (poll(&p, 1, 0) == 1) {
        ++t.dropped;
        close(*it);
        it = held.erase(it);
      } else {
        ++it;
      }
    }
    if ((t.connected == warm && c >= 0 && write(report, "r", 1) != 1) ||
        (t.attempts == attempts && write(report, "d", 1) != 1)) {
      return 92;
    }
  }
  for (int c : held) close(c);
  return write(report, &t, sizeof t) == sizeof t ? 0 : 93;
}

// A flood from another user against a live export, while the exporter, under a low descriptor
// limit, keeps allocating physical memory and opening files: its own calls keep succeeding, a
// listed importer still imports during the flood, and the exporter held only a handful of the
// flooder's connections at any time (it dropped the rest at once).
TEST_F(ShareHostileFlood, AnotherUsersFloodDoesNotStarveTheExporter) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  Peer e, im;
  fill_slot(e, 0, 81);
  const uint64_t token = e.export_token(0);
  ASSERT_EQ(e.rc(line("setpid", hex(token), im.tgid())), kOk);
  ASSERT_EQ(e.rc("free 31"), kParam);  // opens the exporter's log file now
  const int base = fd_count(e);
  ASSERT_GT(base, 0);
  // Room for what it does below and a few descriptors of the listener; far fewer than the flood.
  constexpr int kSlots = 30, kOpens = 20, kSpare = 16;
  const int limit = base + kSlots + kOpens + kSpare;
  ASSERT_EQ(e.rc(line("limit nofile", limit, limit)), 0);

  HostileChild flooder([token](int stop, int report) {
    return flood(static_cast<uint32_t>(token), 300, 200, 5000, stop, report);
  });
  ASSERT_EQ(flooder.next_report(20000), 'r') << "the flooder did not get 200 connections through";
  bool done = false;
  // Rounds of the exporter's own work until the flooder has made its attempts: fill every slot
  // with an allocation and open files, then give them all back.
  long calls = 0, failed = 0, imports = 0, rounds = 0, most = 0;
  while (!(done = done || flooder.next_report(0) == 'd') && rounds < 1000) {
    ++rounds;
    for (int k = 1; k <= kSlots; ++k) {
      failed += e.rc(line("alloc", k, 0, k2M)) != kOk;
      if (k <= kOpens) failed += e.rc("open /dev/null") != 0;
      calls += k <= kOpens ? 2 : 1;
    }
    most = std::max<long>(most, fd_count(e) - base - kSlots - kOpens);
    if (rounds % 4 == 1) {
      // A listed importer, mid-flood.
      ++imports;
      EXPECT_EQ(Peer::code_of(im.cmd(line("import 0", hex(token), 0))), kOk);
      EXPECT_EQ(im.rc(line("map 0", k2M)), kOk);
      EXPECT_EQ(im.cmd(line("check 0 0", k2M, 81)), (std::vector<std::string>{"0", "1"}));
      EXPECT_EQ(im.rc("unmap 0"), kOk);
      EXPECT_EQ(im.rc("free 0"), kOk);
    }
    for (int k = 1; k <= kSlots; ++k) failed += e.rc(line("free", k)) != kOk;
    failed += e.cmd("closeall")[0] != "0";
  }
  FloodTotals t;
  EXPECT_TRUE(flooder.stop(&t, sizeof t)) << "the flooder failed";
  const long long dropped = stat_int(e.stats(), "ipc.connections_dropped");
  std::printf("flood: %ld connection attempts as nobody, %ld connected, %ld found the backlog full, "
              "%ld seen dropped (the exporter dropped %lld); meanwhile the exporter made %ld calls "
              "(%ld failed) in %ld rounds, %ld imports by a listed process; at most %ld descriptors "
              "beyond its own\n",
              t.attempts, t.connected, t.backlog_full, t.dropped, dropped, calls, failed, rounds, imports,
              most);
  EXPECT_GE(t.attempts, 5000);
  EXPECT_EQ(failed, 0) << "the exporter's own calls failed during the flood";
  EXPECT_GT(t.connected, 1000);
  EXPECT_GT(dropped, 1000);
  EXPECT_LE(most, 8) << "the exporter holds the flooder's connections";
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

// An exporter with no descriptor left cannot accept; it leaves the importer queued in the kernel
// and tries again later instead of spinning on the readable endpoint (counted in wake-ups), and
// the importer is served once the application frees descriptors.
TEST_F(ShareHostileFlood, ExporterOutOfDescriptorsDoesNotSpin) {
  Peer e, im;
  fill_slot(e, 0, 82);
  const uint64_t token = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(e.rc("free 31"), kParam);  // opens the exporter's log file now
  const int base = fd_count(e);
  ASSERT_EQ(e.rc(line("limit nofile", base + 8, base + 8)), 0);
  const auto filled = e.cmd("fill /dev/null");
  ASSERT_EQ(filled.size(), 3u);
  EXPECT_EQ(filled[2], std::to_string(EMFILE));
  const long long w0 = stat_int(e.stats(), "ipc.listener_wakeups");
  const std::string imp = line("import 0", hex(token), 0);
  im.send(imp);
  usleep(400 * 1000);
  const long long w1 = stat_int(e.stats(), "ipc.listener_wakeups");
  std::printf("out of descriptors: %lld listener wake-ups in 400 ms with a connection it cannot accept\n",
              w1 - w0);
  EXPECT_GE(w0, 0);
  EXPECT_LE(w1 - w0, 10) << "the listener spins on an endpoint it cannot accept from";
  EXPECT_EQ(e.cmd("closeall")[0], "0");
  EXPECT_EQ(Peer::code_of(im.reply(imp)), kOk) << "the queued importer is served once there is room";
  ASSERT_EQ(im.rc(line("map 0", k2M)), kOk);
  EXPECT_EQ(im.cmd(line("check 0 0", k2M, 82)), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

// Item 8: the first export starts the listener thread; when no thread can be created (the uid is
// at RLIMIT_NPROC; root ignores the limit, so the exporter becomes nobody) the export returns
// 207005 and rolls back: no endpoint, no record, no descriptor. Once threads can be created again
// the same handle exports.
TEST_F(ShareHostileFlood, ExportWhoseListenerCannotStartRollsBack) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  Peer e;
  ASSERT_EQ(e.rc(line("alloc 0 0", k2M)), kOk);
  ASSERT_EQ(e.rc("free 31"), kParam);  // opens the exporter's log file now, as root
  ASSERT_EQ(e.rc("user"), 0);
  const int base = fd_count(e);
  ASSERT_EQ(e.rc("limit nproc 1"), 0);
  const auto r = e.cmd("export 0 0");
  EXPECT_EQ(Peer::code_of(r), ACL_ERROR_RT_RESOURCE_ALLOC_FAIL);
  EXPECT_EQ(stat_int(e.stats(), "live.exports"), 0);
  EXPECT_EQ(fd_count(e), base) << "descriptors left by the failed export";
  EXPECT_EQ(endpoints_of(e.pid()).size(), 0u) << "an endpoint left by the failed export";
  ASSERT_EQ(e.rc("limit nproc max"), 0);
  const uint64_t token = e.export_token(0);
  EXPECT_EQ(token & 0x3ffff, static_cast<uint64_t>(e.pid()) & 0x3ffff) << "the token names its exporter";
  EXPECT_EQ(endpoints_of(e.pid()).size(), 1u);
  EXPECT_EQ(stat_int(e.stats(), "live.exports"), 1);
  EXPECT_EQ(e.finish(), 0);
}

}  // namespace
