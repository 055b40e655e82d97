// Memory shared across hosts at emu's physical-memory level (drivers/emu/fabric/remote_memory.h):
// an exporter's memfd memory registered on host 0, used on host 1 as an os::PhysicalMemory whose
// read, write, fill and copy_to go over the fabric in pieces; the bytes checked on both hosts.
#include "drivers/emu/fabric/remote_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "drivers/emu/os/memfd_memory.h"
#include "fabric/fabric_test_util.h"
#include "fabric/netns_pod.h"

namespace aclvmm_test {
namespace {

using aclvmm::dev::emu::fabric::ExportedRegion;
using aclvmm::dev::emu::fabric::PeerId;
using aclvmm::dev::emu::fabric::RemoteMemory;
using aclvmm::dev::emu::fabric::RmaEndpoint;
using aclvmm::dev::emu::os::MemfdMemory;
using aclvmm::dev::emu::os::PhysicalMemory;
using std::chrono::milliseconds;

// Three pieces and a bit: pieces of RemoteMemory::kPiece are stitched together.
constexpr size_t kSize = 3 * RemoteMemory::kPiece + (size_t{1} << 20);

TEST(FabricRemoteMemory, ReadWriteFillAndCopyAcrossHostsByteExact) {
  std::string why;
  if (!NetnsPod::available(&why)) GTEST_SKIP() << why;
  NetnsPod pod(2);
  ASSERT_TRUE(pod.ok()) << "the namespaces could not be set up";
  int offer[2], go[2];
  ASSERT_EQ(::pipe(offer), 0);
  ASSERT_EQ(::pipe(go), 0);

  // Host 0: memory of pattern 1, exported; after the importer is done it must hold what the
  // importer wrote and filled.
  const pid_t exporter = pod.start_in(0, [&] {
    std::shared_ptr<RmaEndpoint> ep;
    {
      std::unique_ptr<RmaEndpoint> opened;
      if (!RmaEndpoint::open(NetnsPod::address(0), kFabricPort, &opened, &why).ok()) return 2;
      ep = std::move(opened);
    }
    std::shared_ptr<PhysicalMemory> memory;
    if (MemfdMemory::create(kSize, &memory) != 0) return 3;
    const std::vector<uint8_t> start = byte_pattern(kSize, 1);
    if (memory->write(0, start.data(), kSize) != 0) return 4;
    std::unique_ptr<ExportedRegion> exported;
    if (!ExportedRegion::create(ep, memory, &exported).ok()) return 5;
    Offer o;
    if (!o.set_name(ep->name())) return 6;
    o.region = exported->region();
    o.size = kSize;
    if (!write_all(offer[1], &o, sizeof o)) return 7;
    uint8_t done = 0;
    if (!read_all(go[0], &done, 1)) return 8;
    std::vector<uint8_t> now(kSize);
    if (memory->read(0, now.data(), kSize) != 0) return 9;
    std::vector<uint8_t> want = start;
    const std::vector<uint8_t> written = byte_pattern(kSize, 2);
    std::copy(written.begin() + 4096, written.begin() + 4096 + 5 * (size_t{1} << 20),
              want.begin() + 4096);
    std::fill(want.begin() + RemoteMemory::kPiece - 100, want.begin() + RemoteMemory::kPiece + 100,
              0x5a);
    return now == want ? 0 : 10;
  });

  // Host 1: the same bytes through RemoteMemory.
  const pid_t importer = pod.start_in(1, [&] {
    Offer o;
    if (!read_all(offer[0], &o, sizeof o)) return 2;
    std::shared_ptr<RmaEndpoint> ep;
    {
      std::unique_ptr<RmaEndpoint> opened;
      if (!RmaEndpoint::open(NetnsPod::address(1), kFabricPort, &opened, &why).ok()) return 3;
      ep = std::move(opened);
    }
    PeerId peer = 0;
    if (!ep->add_peer(o.endpoint_name(), &peer).ok()) return 4;
    RemoteMemory remote(ep, peer, o.region, o.size, milliseconds(20000));
    std::vector<uint8_t> got(kSize);
    if (remote.read(0, got.data(), kSize) != 0 || got != byte_pattern(kSize, 1)) return 5;
    // A write across piece boundaries at an unaligned offset, and a fill across one.
    const std::vector<uint8_t> written = byte_pattern(kSize, 2);
    if (remote.write(4096, written.data() + 4096, 5 * (size_t{1} << 20)) != 0) return 6;
    if (remote.fill(RemoteMemory::kPiece - 100, 0x5a, 200) != 0) return 7;
    // copy_to a local memory: the whole range as it now is.
    std::shared_ptr<PhysicalMemory> local;
    if (MemfdMemory::create(kSize, &local) != 0) return 8;
    if (remote.copy_to(0, *local, 0, kSize) != 0) return 9;
    std::vector<uint8_t> copied(kSize), again(kSize);
    if (local->read(0, copied.data(), kSize) != 0) return 10;
    if (remote.read(0, again.data(), kSize) != 0 || copied != again) return 11;
    // Past the end: -EINVAL, nothing sent. No descriptor, nothing to populate.
    if (remote.read(kSize - 1, got.data(), 2) != -EINVAL) return 12;
    if (remote.fd() != -1 || remote.populate(0, 4096) != -EOPNOTSUPP) return 13;
    return 0;
  });
  EXPECT_EQ(wait_for(importer, 120), 0);
  const uint8_t done = 1;
  ASSERT_TRUE(write_all(go[1], &done, 1));
  EXPECT_EQ(wait_for(exporter, 60), 0);
  for (int fd : {offer[0], offer[1], go[0], go[1]}) ::close(fd);
}

}  // namespace
}  // namespace aclvmm_test
