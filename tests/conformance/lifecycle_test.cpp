// Conformance of a backend's destruction (docs/device-interface.md §9, C48; device_backend.h
// "Destruction"): a backend destroyed while it still holds physical objects, mappings, blocks,
// queues with work in them, exports and managed ranges ends its threads and gives everything back
// to the machine: the process is where it was before the backend opened (emu: descriptors,
// memfd mappings and threads; fake: threads and its world's exports), every queued command
// completes exactly once, a block's range is free again (the next backend gets the same place:
// emu's windows are the process's and outlive it), and an export is gone for every other
// process.
#include <dirent.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

using dev::Command;
using dev::CommandKind;
using dev::Condition;
using dev::CopyOutcome;
using dev::kMiB;
using dev::Location;
using dev::Result;

constexpr uint64_t kSize = 4 * kMiB;

// A queued host task's completions.
struct Completions {
  std::atomic<int> calls{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> ran{0};
};

void completed(void* context, const CopyOutcome& outcome) {
  auto* c = static_cast<Completions*>(context);
  if (outcome.result.condition() == Condition::kCancelled) c->cancelled.fetch_add(1);
  c->calls.fetch_add(1);
}

// A task that takes a little while, so that destruction finds it running and more queued.
Result slow_task(void* context) {
  static_cast<Completions*>(context)->ran.fetch_add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return Result::success();
}

class LifecycleConformance : public BackendTest {};

TEST_P(LifecycleConformance, C48_DestructionGivesBackEverythingTheBackendStillHolds) {
  // The harness's ranges, kept until it goes: one for device memory, one for host memory (a
  // reservation belongs to the owner of its first mapping, hal.md §3.2).
  const uint64_t va = harness().reserve_va(dev::kGiB);
  const uint64_t host_va = harness().reserve_va(dev::kGiB);
  ASSERT_NE(va, 0u);
  ASSERT_NE(host_va, 0u);
  backend_.reset();
  const std::string before = harness().machine_resources();
  ASSERT_TRUE(harness().open(setup(), &listener_, &backend_).ok());

  // Physical memory on a device and on the host, mapped, one of them shared.
  const dev::PhysicalId on_device = create(Location::device(0), kSize);
  const dev::PhysicalId on_host = create(Location::host(), kSize);
  ASSERT_TRUE(be().mmu().map(va, kSize, on_device, 0, dev::InitialAccess::kOwnerReadWrite).ok());
  ASSERT_TRUE(
      be().mmu().map(host_va, kSize, on_host, 0, dev::InitialAccess::kOwnerReadWrite).ok());
  const dev::PhysicalId exported = create(Location::device(1), kSize);
  dev::ShareToken token;
  bool shared = false;
  if (be().capabilities().sharing) {
    ASSERT_TRUE(be().sharing().export_memory(exported, &token).ok());
    shared = true;
  }
  // Blocks of both kinds.
  dev::Block device_block, host_block;
  dev::BlockRequest request;
  request.kind = dev::BlockKind::kDevice;
  request.device = 0;
  request.size = 3 * kMiB;
  request.page_type = dev::PageType::kHuge;
  ASSERT_TRUE(be().blocks().allocate(request, &device_block).ok());
  request.kind = dev::BlockKind::kHostPinned;
  request.device = dev::kNoDevice;
  request.page_type = dev::PageType::kNormal;
  request.mem_type = dev::MemType::kDdr;
  ASSERT_TRUE(be().blocks().allocate(request, &host_block).ok());
  // A managed range, where the backend has unified memory.
  if (be().capabilities().managed_memory) {
    uint64_t managed = 0;
    ASSERT_TRUE(be().unified_memory().allocate(kSize, &managed).ok());
  }
  // Two queues, one task running and more queued behind it on each.
  Completions done;
  constexpr int kPerQueue = 5;
  for (int q = 0; q < 2; ++q) {
    dev::QueueConfig config;
    config.device = q;
    dev::QueueId queue;
    ASSERT_TRUE(be().copy_engine().create_queue(config, &queue).ok());
    for (int i = 0; i < kPerQueue; ++i) {
      Command c;
      c.kind = CommandKind::kHostTask;
      c.task.run = &slow_task;
      c.completion = {&completed, &done};
      dev::Fence fence = 0;
      ASSERT_TRUE(be().copy_engine().submit(queue, c, &fence).ok());
    }
  }
  while (done.ran.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  backend_.reset();
  EXPECT_EQ(done.calls.load(), 2 * kPerQueue) << "every queued command completes exactly once";
  EXPECT_EQ(done.ran.load() + done.cancelled.load(), 2 * kPerQueue)
      << "a command either ran or was cancelled";
  EXPECT_EQ(harness().machine_resources(), before);

  // The blocks' ranges went back to their windows: the same requests get the same places.
  ASSERT_TRUE(harness().open(setup(), &listener_, &backend_).ok());
  dev::Block again;
  request = dev::BlockRequest{dev::BlockKind::kDevice, 0, 3 * kMiB, dev::PageType::kHuge};
  ASSERT_TRUE(be().blocks().allocate(request, &again).ok());
  EXPECT_EQ(again.address, device_block.address);
  ASSERT_TRUE(be().blocks().free(again.address).ok());
  request = dev::BlockRequest{dev::BlockKind::kHostPinned, dev::kNoDevice, 3 * kMiB,
                              dev::PageType::kNormal, dev::MemType::kDdr};
  ASSERT_TRUE(be().blocks().allocate(request, &again).ok());
  EXPECT_EQ(again.address, host_block.address);
  ASSERT_TRUE(be().blocks().free(again.address).ok());

  // The export went with its backend: another process cannot import it.
  if (shared) {
    std::unique_ptr<PeerProcess> peer = harness().start_peer(setup(), be());
    ASSERT_NE(peer, nullptr);
    EXPECT_EQ(peer->import(token, 0).condition(), Condition::kBadAddress);
    peer->exit();
  }
}

ACLVMM_CONFORMANCE_SUITE(LifecycleConformance);

}  // namespace
}  // namespace aclvmm::conformance
