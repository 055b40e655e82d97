// The cross-host transport (drivers/emu/fabric/rma_endpoint.h) between real processes in two
// network namespaces (netns_pod.h): bytes read and written exactly, and a cut link or a dead
// exporter ending the wait with a code within its bound.
#include "drivers/emu/fabric/rma_endpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "fabric/fabric_test_util.h"
#include "fabric/netns_pod.h"

namespace aclvmm_test {
namespace {

using aclvmm::dev::emu::fabric::PeerId;
using aclvmm::dev::emu::fabric::RemoteRegion;
using aclvmm::dev::emu::fabric::RmaEndpoint;
using std::chrono::milliseconds;

constexpr size_t kSize = 1 << 20;
constexpr uint16_t kPort = kFabricPort;

std::vector<uint8_t> pattern(uint8_t seed) { return byte_pattern(kSize, seed); }

class FabricRma : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!NetnsPod::available(&why)) GTEST_SKIP() << why;
    pod_ = std::make_unique<NetnsPod>(hosts());
    ASSERT_TRUE(pod_->ok()) << "the namespaces could not be set up";
    ASSERT_EQ(::pipe(offer_), 0);
    ASSERT_EQ(::pipe(go_), 0);
  }
  virtual int hosts() const { return 2; }
  void TearDown() override {
    for (int fd : {offer_[0], offer_[1], go_[0], go_[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }

  // Host 0: registers a buffer of pattern(1), offers it `readers` times, and waits for one byte
  // on go_: 0 ends it, 1 makes it check that the buffer then holds pattern(2).
  pid_t start_exporter(int readers = 1) {
    return pod_->start_in(0, [this, readers] {
      std::unique_ptr<RmaEndpoint> ep;
      std::string why;
      if (!RmaEndpoint::open(NetnsPod::address(0), kPort, &ep, &why).ok()) {
        std::fprintf(stderr, "exporter: %s\n", why.c_str());
        return 2;
      }
      std::vector<uint8_t> memory = pattern(1);
      Offer offer;
      if (!ep->register_memory(memory.data(), kSize, &offer.region).ok()) return 3;
      if (!offer.set_name(ep->name())) return 4;
      for (int i = 0; i < readers; ++i) {
        if (!write_all(offer_[1], &offer, sizeof offer)) return 5;
      }
      uint8_t what = 0;
      if (!read_all(go_[0], &what, 1)) return 6;
      return what == 1 && memory != pattern(2) ? 7 : 0;
    });
  }
  // An importer's endpoint on host 1 with the exporter's offer; false when it cannot be made.
  static bool importer(int offer_fd, std::unique_ptr<RmaEndpoint>* ep, PeerId* peer, Offer* offer,
                       int host = 1) {
    std::string why;
    if (!read_all(offer_fd, offer, sizeof *offer)) return false;
    if (!RmaEndpoint::open(NetnsPod::address(host), kPort, ep, &why).ok()) {
      std::fprintf(stderr, "importer: %s\n", why.c_str());
      return false;
    }
    return (*ep)->add_peer(offer->endpoint_name(), peer).ok();
  }
  // An importer that has read the exporter's memory once and said so on `ready`: 0, or the
  // child's exit code for what failed.
  struct Reader {
    std::unique_ptr<RmaEndpoint> ep;
    PeerId peer = 0;
    Offer offer;
    std::vector<uint8_t> got = std::vector<uint8_t>(kSize, 0);
    int connect(int offer_fd, int ready_fd) {
      if (!importer(offer_fd, &ep, &peer, &offer)) return 2;
      if (!read_once(milliseconds(10000))) return 3;
      const uint8_t one = 1;
      return write_all(ready_fd, &one, 1) ? 0 : 4;
    }
    bool read_once(milliseconds bound) {
      return ep->read(peer, got.data(), kSize, offer.region, 0, bound).ok();
    }
  };
  void go(uint8_t what) { ASSERT_TRUE(write_all(go_[1], &what, 1)); }

  std::unique_ptr<NetnsPod> pod_;
  int offer_[2] = {-1, -1};
  int go_[2] = {-1, -1};
};

TEST_F(FabricRma, ReadAndWriteAnotherHostsMemoryByteExact) {
  const pid_t exporter = start_exporter();
  const int fd = offer_[0];
  const pid_t reader = pod_->start_in(1, [fd] {
    std::unique_ptr<RmaEndpoint> ep;
    PeerId peer = 0;
    Offer offer;
    if (!importer(fd, &ep, &peer, &offer)) return 2;
    std::vector<uint8_t> got(kSize, 0);
    if (!ep->read(peer, got.data(), kSize, offer.region, 0, milliseconds(10000)).ok()) return 3;
    if (got != pattern(1)) return 4;
    // A read at an offset: the second half only.
    std::vector<uint8_t> half(kSize / 2, 0);
    if (!ep->read(peer, half.data(), half.size(), offer.region, kSize / 2, milliseconds(10000))
             .ok()) {
      return 5;
    }
    if (std::memcmp(half.data(), pattern(1).data() + kSize / 2, half.size()) != 0) return 6;
    const std::vector<uint8_t> mine = pattern(2);
    // Delivery complete: the bytes are in the exporter's memory when write returns.
    return ep->write(peer, mine.data(), kSize, offer.region, 0, milliseconds(10000)).ok() ? 0 : 7;
  });
  EXPECT_EQ(wait_for(reader, 60), 0);
  go(1);
  EXPECT_EQ(wait_for(exporter, 30), 0);
}

// The exporter's link is deleted while the importer keeps reading: a read fails within its
// bound (kTimedOut or the provider's error), never hangs.
TEST_F(FabricRma, ACutLinkEndsTheWaitWithACode) {
  const pid_t exporter = start_exporter();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const int fd = offer_[0];
  const pid_t reader = pod_->start_in(1, [fd, ready] {
    Reader r;
    if (const int failed = r.connect(fd, ready[1])) return failed;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
      if (!r.read_once(milliseconds(2000))) {
        const auto took = std::chrono::steady_clock::now() - start;
        return took < std::chrono::seconds(10) ? 0 : 5;
      }
    }
    return 6;  // every read succeeded over a cut link
  });
  uint8_t one = 0;
  ASSERT_TRUE(read_all(ready[0], &one, 1));
  ASSERT_TRUE(pod_->cut(0));
  EXPECT_EQ(wait_for(reader, 30), 0);
  go(0);
  EXPECT_EQ(wait_for(exporter, 30), 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// The exporter exits: the importer's next read fails with a code within its bound.
TEST_F(FabricRma, AnExporterThatExitedGivesACode) {
  const pid_t exporter = start_exporter();
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const int fd = offer_[0];
  const pid_t reader = pod_->start_in(1, [fd, ready, done] {
    Reader r;
    if (const int failed = r.connect(fd, ready[1])) return failed;
    uint8_t gone = 0;
    if (!read_all(done[0], &gone, 1)) return 5;
    return r.read_once(milliseconds(5000)) ? 6 : 0;
  });
  uint8_t one = 0;
  ASSERT_TRUE(read_all(ready[0], &one, 1));
  go(0);
  EXPECT_EQ(wait_for(exporter, 30), 0);
  ASSERT_TRUE(write_all(done[1], &one, 1));
  EXPECT_EQ(wait_for(reader, 30), 0);
  for (int f : {ready[0], ready[1], done[0], done[1]}) ::close(f);
}

// Four hosts: three importers on hosts 1-3 read the one export of host 0 at the same time, each
// byte-exact.
class FabricRma4 : public FabricRma {
 protected:
  int hosts() const override { return 4; }
};

TEST_F(FabricRma4, ThreeHostsReadOneExport) {
  const pid_t exporter = start_exporter(3);
  const int fd = offer_[0];
  std::vector<pid_t> readers;
  for (int host = 1; host <= 3; ++host) {
    readers.push_back(pod_->start_in(host, [fd, host] {
      std::unique_ptr<RmaEndpoint> ep;
      PeerId peer = 0;
      Offer offer;
      if (!importer(fd, &ep, &peer, &offer, host)) return 2;
      std::vector<uint8_t> got(kSize, 0);
      for (int round = 0; round < 4; ++round) {
        if (!ep->read(peer, got.data(), kSize, offer.region, 0, milliseconds(20000)).ok()) return 3;
        if (got != pattern(1)) return 4;
      }
      return 0;
    }));
  }
  for (const pid_t r : readers) EXPECT_EQ(wait_for(r, 90), 0);
  go(0);
  EXPECT_EQ(wait_for(exporter, 30), 0);
}

}  // namespace
}  // namespace aclvmm_test
