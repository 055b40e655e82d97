// ManagedMemory: the core's side of aclrtMemAllocManaged allocations (behavior.md §10). The
// residency model (where each page lives, migration, read copies, eviction, CPU faults) is the
// device backend's UnifiedMemory (drivers/unified_memory.h; emu: drivers/emu/unified/), as it
// is the driver's on hardware; device accesses reach it through the copy engine's kManaged
// endpoints (vmm/memory_ops.cpp).
//
// The core keeps what the ACL layer needs of it: the record of the live ranges (base, rounded
// size, the size asked for) for pointer queries, aclrtFree dispatch and the leak report; the
// size checks and their 207001 words; the conversion of locations (user device ids to driver
// ids on the way in, driver ids to user ids in attributes); and the "managed" object of
// aclvmmStatsJson, built from the backend's statistics.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/lock_rank.h"
#include "base/status.h"
#include "drivers/device_backend.h"
#include "vmm/address_space.h"
#include "vmm/device_directory.h"

namespace aclvmm {

inline constexpr uint64_t kManagedPage = kChunk;  // managed memory migrates in 2 MiB pages

// A location as the managed-memory calls name it (aclrtMemManagedLocationType values).
struct ManagedLocation {
  int type = 0;  // 0 invalid, 1 device, 2 host, 3 host NUMA
  int id = 0;    // physical device id (type 1) or NUMA node (type 3)
};

// One counter of the statistics' "managed" group (ManagedMemory::stats_json).
struct ManagedCount {
  const char* name = nullptr;
  uint64_t value = 0;
};
inline constexpr size_t kManagedCounters = 16;

class ManagedMemory {
 public:
  // `devices`: the device backend whose UnifiedMemory holds the pages, and the user ids
  // attributes report; it outlives this object (the runtime that owns both).
  explicit ManagedMemory(const DeviceDirectory& devices) : devices_(devices) {}
  // The UVM window (the device backend's, WindowLayout::managed). Each runtime start, before the
  // first allocation.
  void attach(dev::VaRange window) { window_ = window; }
  bool in_window(uint64_t va) const { return window_.contains(va); }

  StatusOr<uint64_t> allocate(uint64_t size);
  // `teardown`: the range goes even when its CPU mapping cannot be removed (nothing can be
  // reported back); otherwise that failure leaves the allocation as it was.
  Status free(uint64_t base, bool teardown = false);
  StatusOr<AddressRange> range_of(uint64_t va) const;
  // 507899 naming the first page of [va, va+size) outside every live range.
  Status covered(uint64_t va, uint64_t size) const;

  Status advise(uint64_t va, uint64_t size, int advice, const ManagedLocation& where);
  // Executed on a stream: migrates [va, va+size) to `where` (a device or the host).
  Status prefetch(uint64_t va, uint64_t size, const ManagedLocation& where);
  // A location as the backend's unified memory takes it (device ids stay driver ids).
  static dev::Location driver_location(const ManagedLocation& where);
  // The int32 results of one range attribute (behavior.md §10 encodings), device ids as the
  // application knows them.
  StatusOr<std::vector<int32_t>> attribute(int attribute, uint64_t va, uint64_t size,
                                           size_t slots);

  // aclFinalize / exit: every range is released; returns them (base, rounded size) for the leak
  // report.
  std::vector<AddressRange> release_all();
  size_t live() const;
  // The "managed" object of aclvmmStatsJson.
  std::string stats_json() const;

 private:
  struct Range {
    uint64_t size = 0;
    uint64_t requested = 0;
  };
  using RangesMutex = RankedMutex<LockRank::kManagedRanges>;
  using Lock = std::unique_lock<RangesMutex>;
  static Status not_allocated(uint64_t va);
  // The backend's answer for [va, va+size) as the application sees it.
  Status answer(dev::Result r, uint64_t va, uint64_t size, const char* what) const;
  StatusOr<std::shared_ptr<dev::DeviceBackend>> backend() const;

  const DeviceDirectory& devices_;
  dev::VaRange window_;
  // Allocations and frees take it across the backend's call and the change of the records, so
  // the records always match the backend's ranges (and the "in use" words the window).
  RankedMutex<LockRank::kManagedLifetime> change_mu_;
  mutable RangesMutex mu_;
  // Managed counters of the backends earlier runtime starts closed (under mu_): the statistics
  // are process totals, and each start opens a new backend counting from 0. Names are the
  // backends' string literals: reading the statistics allocates nothing but the JSON text (a
  // forked child reads them too).
  std::array<ManagedCount, kManagedCounters> carried_{};
  size_t carried_count_ = 0;
  std::map<uint64_t, Range> ranges_;
  uint64_t reserved_total_ = 0;
};

}  // namespace aclvmm
