// Sharing under load between real processes (behavior.md section 7, docs/sharing.md): the test
// process exports handles, with and without whitelists, and keeps ending and replacing those
// exports while eight importer processes (aclvmm_share_peer, command "stress") import, map, check
// every byte, unmap and free them as fast as they can. An importer gets either its bytes or a
// documented code, never a crash, a hang or someone else's bytes, and no process keeps anything.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/stress_board.h"
#include "api/thread_test_util.h"

namespace {

using namespace share_test;
using namespace share_peer;

constexpr int kImporters = 8;
constexpr size_t kSlots = 4;

// Rounds per importer: ACLVMM_SHARE_STRESS_ROUNDS, else 300 (150 under ASan).
long importer_rounds() {
  if (const char* v = getenv("ACLVMM_SHARE_STRESS_ROUNDS")) {
    if (*v) return std::max(1L, std::atol(v));
  }
  return kAsan ? 150 : 300;
}

int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the DIR's own descriptor
}

// The board file and its mapping in this process.
class Board {
 public:
  Board() {
    char path[] = "/tmp/aclvmm_board_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, kBoardBytes) != 0) {
      ADD_FAILURE() << "cannot create the board";
      if (fd >= 0) close(fd);
      return;
    }
    path_ = path;
    void* m = mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED) words_ = static_cast<uint64_t*>(m);
  }
  ~Board() {
    if (words_) munmap(words_, kBoardBytes);
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void publish(size_t slot, uint64_t word) { __atomic_store_n(&words_[slot], word, __ATOMIC_RELEASE); }
  bool ok() const { return words_ != nullptr; }

 private:
  std::string path_;
  uint64_t* words_ = nullptr;
};

// One export of the churning exporter: a handle mapped at a fixed reservation of its slot.
struct Exported {
  aclrtDrvMemHandle h = nullptr;
  uint64_t token = 0;
};

// The exporter's loop, on its own thread: every few milliseconds one slot's export ends (its
// handle is unmapped and freed while importers may be using the token) and a new one takes its
// place with new bytes and the next kind of access.
class Exporter {
 public:
  Exporter(Board* board, std::vector<int32_t> pids) : board_(board), pids_(std::move(pids)) {}

  void run(const std::atomic<bool>& stop) {
    if (aclrtSetDevice(0) != kOk) return fail("aclrtSetDevice");
    for (size_t s = 0; s < kSlots; ++s) {
      if (aclrtReserveMemAddress(&va_[s], k2M, 0, nullptr, 0) != kOk) return fail("reserve");
    }
    for (unsigned step = 0; !stop.load() && failures_.empty(); ++step) {
      const size_t s = step % kSlots;
      end(s);
      start(s, step);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (size_t s = 0; s < kSlots; ++s) {
      end(s);
      if (aclrtReleaseMemAddress(va_[s]) != kOk) fail("release");
    }
  }
  long exports() const { return exports_; }
  long whitelisted() const { return whitelisted_; }
  const std::string& failures() const { return failures_; }

 private:
  void fail(const std::string& what) { failures_ += what + "; "; }

  // The export ends while importers may be importing or mapping it, and the board keeps showing
  // its token for a moment longer, as a stale copy would.
  void end(size_t s) {
    if (slot_[s].h) {
      if (aclrtUnmapMem(va_[s]) != kOk) fail("unmap");
      if (aclrtFreePhysical(slot_[s].h) != kOk) fail("free");
      slot_[s] = Exported{};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    board_->publish(s, 0);
  }

  void start(size_t s, unsigned step) {
    const unsigned access = kBoardOpen + step % 3;  // open, all listed, even importers listed
    const unsigned seed = 1000 + step % 60000;
    Exported e;
    const aclrtPhysicalMemProp prop = device_prop();
    if (aclrtMallocPhysical(&e.h, k2M, &prop, 0) != kOk) return fail("malloc physical");
    slot_[s] = e;
    if (aclrtMapMem(va_[s], k2M, 0, e.h, 0) != kOk) return fail("map");
    const std::string bytes = share_peer::peer_pattern(k2M, seed);
    if (put(va_[s], bytes) != kOk) return fail("H2D");
    const uint64_t flags = access == kBoardOpen ? ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION : 0;
    if (aclrtMemExportToShareableHandle(e.h, ACL_MEM_HANDLE_TYPE_NONE, flags, &slot_[s].token) != kOk) {
      return fail("export");
    }
    ++exports_;
    if (access != kBoardOpen) {
      std::vector<int32_t> listed;
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (access == kBoardAllListed || i % 2 == 0) listed.push_back(pids_[i]);
      }
      if (aclrtMemSetPidToShareableHandle(slot_[s].token, listed.data(), listed.size()) != kOk) {
        return fail("set pid");
      }
      ++whitelisted_;
    }
    board_->publish(s, board_word(slot_[s].token, seed, access));
  }

  Board* const board_;
  const std::vector<int32_t> pids_;
  void* va_[kSlots] = {};
  Exported slot_[kSlots];
  long exports_ = 0, whitelisted_ = 0;
  std::string failures_;
};

// The wall-clock bound of the whole exchange: well above what the machine needs even with the
// sanitizers, well below ctest's timeout.
constexpr int kBoundMs = 90000;

using StressShare = AclTest;

// One exporter (this process) and eight importer processes; see the top of the file.
TEST_F(StressShare, EightImportersWhileTheExporterChurns) {
  const long rounds = importer_rounds();
  Board board;
  ASSERT_TRUE(board.ok());
  std::vector<std::unique_ptr<Peer>> importers;
  std::vector<int32_t> pids;
  std::vector<std::vector<std::string>> counts_before;
  for (int i = 0; i < kImporters; ++i) {
    importers.emplace_back(new Peer());
    pids.push_back(importers.back()->tgid());
    // A failed call first: the log file opens with the first message and must not count as a leak.
    EXPECT_EQ(Peer::code_of(importers.back()->cmd("import 9 1 0")), kBadHandle);
    counts_before.push_back(importers.back()->cmd("counts"));
  }
  EXPECT_EQ(aclrtFreePhysical(nullptr), kParam);  // the same for this process's log
  const LiveCounts live_before = live_counts();
  const long long denied_before = stat_int(stats(), "ipc.imports_denied");
  const int fds_before = open_fds();

  Exporter exporter(&board, pids);
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::thread churn([&] { exporter.run(stop); });
  for (int i = 0; i < kImporters; ++i) importers[i]->send(line("stress", board.path(), kSlots, rounds, i));
  long ok = 0, unknown = 0, denied = 0, denied_odd = 0;
  for (int i = 0; i < kImporters; ++i) {
    SCOPED_TRACE("importer " + std::to_string(i));
    const auto r = importers[i]->reply("stress", kBoundMs);
    ASSERT_GE(r.size(), 6u);
    EXPECT_EQ(r[0], "0");
    EXPECT_EQ(r[4], "0") << "imports that should have been refused, or wrong bytes";
    EXPECT_EQ(r[5], "0") << "other failures";
    std::string first;
    for (size_t k = 6; k < r.size(); ++k) first += " " + r[k];
    EXPECT_EQ(first, "") << "the importer's first problem";
    ok += std::atol(r[1].c_str());
    unknown += std::atol(r[2].c_str());
    denied += std::atol(r[3].c_str());
    if (i % 2) denied_odd += std::atol(r[3].c_str());
  }
  stop.store(true);
  churn.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(exporter.failures(), "");
  std::printf("share stress: %d importers x %ld rounds in %.1f s; %ld exports (%ld whitelisted); "
              "imports: %ld ok, %ld ended (107017), %ld refused (507899)\n",
              kImporters, rounds, secs, exporter.exports(), exporter.whitelisted(), ok, unknown, denied);
  EXPECT_LT(secs, kBoundMs / 1000.0);
  // Every outcome happened, so the run exercised what it claims to.
  EXPECT_GT(ok, 0);
  EXPECT_GT(unknown, 0);
  EXPECT_GT(denied, 0);
  // Only odd importers are ever unlisted, and the exporter counted each refusal it made.
  EXPECT_EQ(denied, denied_odd);
  EXPECT_EQ(stat_int(stats(), "ipc.imports_denied") - denied_before, denied);

  // Nothing is left in the exporter: live objects, device memory, descriptors (the listener closes
  // the endpoints of ended exports when it is woken for them).
  EXPECT_EQ(live_counts(), live_before);
  int fds_after = open_fds();
  for (int i = 0; i < 50 && fds_after != fds_before; ++i) {
    usleep(20 * 1000);
    fds_after = open_fds();
  }
  EXPECT_EQ(fds_after, fds_before) << "open descriptors of the exporter before / after";
  // Nor in any importer.
  long long kept_links = 0;
  for (int i = 0; i < kImporters; ++i) {
    SCOPED_TRACE("importer " + std::to_string(i));
    std::vector<std::string> counts = importers[i]->cmd("counts");
    const Json j = importers[i]->stats();
    // Connections kept to the exporter's endpoints (docs/sharing.md §5) hold two descriptors
    // each; they are no leak, and the statistics count them.
    const long long links = stat_int(j, "ipc.importer_links");
    kept_links += links;
    if (counts.size() == 3) counts[1] = std::to_string(std::atoll(counts[1].c_str()) - 2 * links);
    EXPECT_EQ(counts, counts_before[i]) << "descriptors and threads";
    for (const char* key : {"physical_handles", "imports", "mappings", "reservations"}) {
      EXPECT_EQ(stat_int(j, std::string("live.") + key), 0) << key;
    }
    EXPECT_EQ(importers[i]->finish(), 0);
  }
  EXPECT_GT(kept_links, 0) << "no importer kept a connection to the exporter";
}

}  // namespace
