// The vocabulary every group of the device interface shares: ids of backend objects, locations,
// page and memory types, access flags, and who executes a device operation.
//
// Contract
// - Ids are opaque values a backend hands out; 0 is never a valid id. An id is valid from the call
//   that returned it until the call that ends it (release, destroy), and the core passes only live
//   ids: a backend may trust them as the vendor's HAL trusts its handle pointers (the emu backend's
//   PhysicalId is its object's address, the hal backend's is the drv_mem_handle_t*, hal.md §6.2
//   rule 4). The fake backend validates every id and answers a dead or forged one with
//   kInvalidArgument (-EINVAL, what the kernel answers for a handle it does not know) and counts
//   it, so that a core bug fails a unit test instead of corrupting memory.
// - Device ids are the driver's logical ids (after ASCEND_RT_VISIBLE_DEVICES; the core converts
//   user ids), 0 .. DeviceManager::device_count()-1. kNoDevice is "no device": the host, or a
//   thread without a current context.
// - Numeric values of PageType, MemType, Access and the Location kinds equal the vendor's
//   (behavior.md §1, hal.md §4), so a hal backend passes them through and tests can compare.
//
// Threading: plain values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aclvmm::dev {

using DeviceIndex = int32_t;
inline constexpr DeviceIndex kNoDevice = -1;
inline constexpr int kMaxDevices = 64;  // peer masks and access tables are 64-bit

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// A physical allocation: device HBM/DDR or host memory (drv_mem_handle_t* on hardware).
struct PhysicalId {
  uint64_t value = 0;
  explicit constexpr operator bool() const { return value != 0; }
  friend constexpr bool operator==(PhysicalId a, PhysicalId b) { return a.value == b.value; }
  friend constexpr bool operator!=(PhysicalId a, PhysicalId b) { return a.value != b.value; }
};

// A hardware queue (or the host thread that stands in for one): where a stream's work runs.
struct QueueId {
  uint64_t value = 0;
  explicit constexpr operator bool() const { return value != 0; }
  friend constexpr bool operator==(QueueId a, QueueId b) { return a.value == b.value; }
  friend constexpr bool operator!=(QueueId a, QueueId b) { return a.value != b.value; }
};

// Completion fence of one queue: the n-th command submitted to a queue has fence n (from 1);
// fence f has passed when every command up to f has completed. Fences of different queues are
// unrelated.
using Fence = uint64_t;

// Where memory lives or who accesses it. Kind values are the vendor's drv_mem_side plus kNone.
struct Location {
  enum class Kind : uint8_t { kHost = 0, kDevice = 1, kHostNuma = 2, kNone = 0xff };
  Kind kind = Kind::kNone;
  int32_t id = 0;  // device id (kDevice), NUMA node (kHostNuma), 0 (kHost)

  static constexpr Location host() { return Location{Kind::kHost, 0}; }
  static constexpr Location device(DeviceIndex d) { return Location{Kind::kDevice, d}; }
  static constexpr Location host_numa(int32_t node) { return Location{Kind::kHostNuma, node}; }
  friend constexpr bool operator==(Location a, Location b) {
    return a.kind == b.kind && a.id == b.id;
  }
  friend constexpr bool operator!=(Location a, Location b) { return !(a == b); }
};

enum class PageType : uint8_t { kNormal = 0, kHuge = 1, kGiant = 2 };  // 4 KiB, 2 MiB, 1 GiB
enum class MemType : uint8_t { kHbm = 0, kDdr = 1, kP2pHbm = 2, kP2pDdr = 3 };

// Access of one location to one mapping; the ACL values ACL_RT_MEM_ACCESS_FLAGS_*.
enum class Access : uint8_t { kNone = 0, kRead = 1, kReadWrite = 3 };

// Who executes a device operation: the device whose engine runs it and the devices it reaches
// by peer access (aclrtDeviceEnablePeerAccess), as the core's Accessor snapshot holds them.
struct Executor {
  DeviceIndex device = kNoDevice;
  uint64_t peer_mask = 0;
};

// A piece of a physical allocation: what a virtual range resolves to through the device MMU (a
// backend's own translation; the copy engine takes virtual addresses, copy_engine.h).
struct PhysicalExtent {
  PhysicalId memory;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct VaRange {
  uint64_t base = 0;
  uint64_t size = 0;
  constexpr bool contains(uint64_t va) const { return va - base < size; }
};

}  // namespace aclvmm::dev
