// Freed device memory kept for the next allocation of the same size (issue 19;
// drivers/emu/os/memory_recycler.h, docs/emulation.md "Recycled device memory"), seen through the
// API: a sleep/wake cycle gets its bytes back and the new allocation never shows the old ones,
// and memory another process imported is never handed to a new allocation of the exporter.
#include <string>

#include "api/hostile_util.h"
#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using RecycledMemory = AclTest;

constexpr size_t kBytes = 8 * kMiB;

// vLLM's sleep and wake on the VMM calls: back up, unmap, free; allocate the same size, map at
// the same address: it reads zeros until restored, then the backup.
TEST_F(RecycledMemory, SleepWakeRestoresTheBytesAndFreshMemoryReadsZero) {
  void* va = reserve(kBytes);
  aclrtDrvMemHandle h = make_handle(kBytes);
  ASSERT_EQ(aclrtMapMem(va, kBytes, 0, h, 0), kOk);
  const std::string weights = pattern(kBytes, 41);
  h2d(va, weights);
  const std::string backup = get(va, kBytes);
  ASSERT_EQ(backup, weights);
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  ASSERT_EQ(aclrtFreePhysical(h), kOk);

  h = make_handle(kBytes);
  ASSERT_EQ(aclrtMapMem(va, kBytes, 0, h, 0), kOk);
  EXPECT_EQ(get(va, kBytes), std::string(kBytes, '\0')) << "the freed allocation's bytes showed";
  h2d(va, backup);
  EXPECT_EQ(get(va, kBytes), weights);
  // A partial restore: the part not written yet reads zeros, not the previous bytes.
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  ASSERT_EQ(aclrtFreePhysical(h), kOk);
  h = make_handle(kBytes);
  ASSERT_EQ(aclrtMapMem(va, kBytes, 0, h, 0), kOk);
  h2d(va, backup.substr(0, kBytes / 2));
  const std::string now = get(va, kBytes);
  EXPECT_EQ(now.substr(0, kBytes / 2), weights.substr(0, kBytes / 2));
  EXPECT_EQ(now.substr(kBytes / 2), std::string(kBytes / 2, '\0'));
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  ASSERT_EQ(aclrtFreePhysical(h), kOk);
  ASSERT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// An exported handle's memory may live on in an importer after the exporter frees it: the
// exporter's next allocation of the same size must be other memory, or the importer would see it.
TEST_F(RecycledMemory, ExportedMemoryIsNeverHandedToANewAllocation) {
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  h2d(va, pattern(k2M, 52));
  uint64_t token = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            kOk);
  Peer im;
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(token), 0))), kOk);
  ASSERT_EQ(im.rc(line("map 0", k2M)), kOk);
  EXPECT_EQ(im.cmd(line("check 0 0", k2M, 52)), (std::vector<std::string>{"0", "1"}));
  ASSERT_EQ(aclrtUnmapMem(va), kOk);
  ASSERT_EQ(aclrtFreePhysical(h), kOk);

  // The next allocations of the same size, written all over.
  aclrtDrvMemHandle next[2] = {make_handle(k2M), make_handle(k2M)};
  for (aclrtDrvMemHandle n : next) {
    ASSERT_EQ(aclrtMapMem(va, k2M, 0, n, 0), kOk);
    h2d(va, pattern(k2M, 53));
    ASSERT_EQ(aclrtUnmapMem(va), kOk);
  }
  EXPECT_EQ(im.cmd(line("check 0 0", k2M, 52)), (std::vector<std::string>{"0", "1"}))
      << "the importer's memory changed with the exporter's new allocation";
  EXPECT_EQ(im.finish(), 0);
  for (aclrtDrvMemHandle n : next) ASSERT_EQ(aclrtFreePhysical(n), kOk);
  ASSERT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
