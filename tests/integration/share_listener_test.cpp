// The exporter's listener is event-driven (issue 13, item 4; docs/sharing.md §2): it sleeps until a
// connection, a request, a deadline or its wake object needs it, so an idle exporter costs no
// wake-up at all and a fresh export is served at once. Also: concurrent imports of one token
// give one handle (item 5), and a forked child holds nothing of the parent's listener.
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "api/hostile_util.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareListener = AclTest;

struct ListenerCounts {
  long long wakeups = -1, timeouts = -1;
};
ListenerCounts listener_counts(const Json& j) {
  return {stat_int(j, "ipc.listener_wakeups"), stat_int(j, "ipc.listener_timeouts")};
}

// Counts, not times: an exporter with live exports that nobody talks to does not wake up; an
// import right after an export is served by a handful of wake-ups and no poll timeout (the old
// listener found new endpoints only at its 100 ms poll timeout).
TEST_F(ShareListener, IdleExporterSleepsAndAFreshExportIsServedAtOnce) {
  Peer e, im;
  fill_slot(e, 0, 61);
  fill_slot(e, 1, 62);
  const uint64_t first = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(first), 0))), kOk);
  const ListenerCounts c0 = listener_counts(e.stats());
  ASSERT_GE(c0.wakeups, 0) << "the statistics have no ipc.listener_wakeups";
  ASSERT_GE(c0.timeouts, 0) << "the statistics have no ipc.listener_timeouts";

  // Idle, with a live export, for 300 ms (three of the old listener's wake-ups).
  usleep(300 * 1000);
  const ListenerCounts c1 = listener_counts(e.stats());
  EXPECT_EQ(c1.wakeups, c0.wakeups) << "an idle exporter woke up";
  EXPECT_EQ(c1.timeouts, c0.timeouts);

  // Export and import at once: the new endpoint wakes the listener, the connection (with its
  // request) wakes it again; a request that trails its connection may take one more.
  const uint64_t second = e.export_token(1, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 1", hex(second), 0))), kOk);
  ASSERT_EQ(im.rc(line("map 1", k2M)), kOk);
  EXPECT_EQ(im.cmd(line("check 1 0", k2M, 62)), (std::vector<std::string>{"0", "1"}));
  const ListenerCounts c2 = listener_counts(e.stats());
  std::printf("listener: %lld wake-ups for an export and its import\n", c2.wakeups - c1.wakeups);
  EXPECT_GE(c2.wakeups - c1.wakeups, 1);
  EXPECT_LE(c2.wakeups - c1.wakeups, 4);
  EXPECT_EQ(c2.timeouts, c1.timeouts) << "the import waited for a poll timeout";

  usleep(300 * 1000);
  EXPECT_EQ(listener_counts(e.stats()).wakeups, c2.wakeups) << "woke up after serving";
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

// Item 5: threads of one process importing the same token onto the same device at once get one
// handle with one reference per import (the vendor's "same handle value, ref++"), however the
// requests to the exporter interleave.
TEST_F(ShareListener, ConcurrentImportsOfOneTokenGiveOneHandle) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 10;
  Peer e;
  fill_slot(e, 0, 63);
  const uint64_t token = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const long long handles0 = live_count("physical_handles");
  int duplicated_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<aclrtDrvMemHandle> got(kThreads, nullptr);
    std::vector<aclError> rc(kThreads, -1);
    std::atomic<int> arrived{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        EXPECT_EQ(aclrtSetDevice(0), kOk);
        // All at once, so that every thread is past the "imported already?" check before any
        // exchange with the exporter ends.
        arrived.fetch_add(1);
        while (arrived.load() < kThreads) std::this_thread::yield();
        rc[i] = aclrtMemImportFromShareableHandle(token, 0, &got[i]);
      });
    }
    for (auto& t : threads) t.join();
    std::set<aclrtDrvMemHandle> distinct;
    for (int i = 0; i < kThreads; ++i) {
      EXPECT_EQ(rc[i], kOk) << "thread " << i;
      distinct.insert(got[i]);
    }
    EXPECT_EQ(distinct.size(), 1u) << "one token, one device, one handle";
    if (distinct.size() > 1) ++duplicated_rounds;
    EXPECT_EQ(live_count("physical_handles") - handles0, static_cast<long long>(distinct.size()));
    EXPECT_EQ(live_count("imports"), 1);
    // One reference per import: freed that many times, then gone.
    for (int i = 0; i < kThreads; ++i) EXPECT_EQ(aclrtFreePhysical(got[i]), kOk) << "free " << i;
    EXPECT_EQ(live_count("physical_handles"), handles0);
    EXPECT_EQ(live_count("imports"), 0);
  }
  std::printf("import race: %d threads x %d rounds, %d rounds with more than one handle\n", kThreads,
              kRounds, duplicated_rounds);
  EXPECT_EQ(e.finish(), 0);
}

// A forked child is not the exporter: it holds none of what the listener had open when it forked
// (the endpoint, the wake object, a connection still waiting for its request).
TEST_F(ShareListener, ForkedChildDropsTheListenersDescriptors) {
  const auto before = open_links();
  LocalExport e = export_local(64, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  const int silent = connect_endpoint(e.token);
  ASSERT_GE(silent, 0);
  usleep(100 * 1000);  // the listener has accepted it and waits for its request
  std::map<int, std::string> listeners;
  for (const auto& [fd, link] : open_links()) {
    // (The exported handle's memory is new too, and stays: the child may keep the parent's memory.)
    const bool machinery = link.rfind("socket:", 0) == 0 || link.rfind("anon_inode:", 0) == 0;
    if (fd != silent && !before.count(fd) && machinery) listeners[fd] = link;
  }
  std::string what;
  for (const auto& [fd, link] : listeners) what += std::to_string(fd) + " " + link + "; ";
  EXPECT_EQ(listeners.size(), 3u) << "the endpoint, the wake object and the accepted connection: " << what;
  const aclvmm_test::TimedChildResult child = aclvmm_test::run_in_child_for(20000, [&] {
    const auto now = open_links();
    int kept = 0;
    for (const auto& [fd, link] : listeners) {
      auto it = now.find(fd);
      if (it != now.end() && it->second == link) {
        std::fprintf(stderr, "the child still holds %d (%s)\n", fd, link.c_str());
        ++kept;
      }
    }
    return kept;
  });
  EXPECT_CHILD_DONE_OK(child);
  close(silent);
  e.release();
}

}  // namespace
