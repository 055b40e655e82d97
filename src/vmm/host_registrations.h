// HostRegistrations: host memory registered for a device (aclrtHostRegister[V2],
// runtime-extra.md §5), kept by the core as the vendor's runtime keeps it (its
// register_memory.cc): per device, identified by its base address. The device's own part (the
// pages are the process's and mapped; pinning) is DeviceMmu::register_host.
//
// What a registration gives: the registering device's kernels reach those host pages at their
// own address (aclvmmKernelRead / Write, kernel_context.h: plain process memory is otherwise out
// of a kernel's reach), aclrtPointerGetAttributes reports them as HOST instead of UNREGISTERED,
// and aclrtHostGetDevicePointer answers for MAPPED ones. Copies are not policed (the address is a
// host address and aclrtMemcpy treats it as one).
//
// Lifetime: until aclrtHostUnregister, the release of the device's last reference
// (release_device), aclrtFreeHost of the block it lies in (release_inside), the runtime's
// teardown (release_all: the leak report's lines). free() or munmap() of other memory is not
// seen: the registration stays, as on hardware.
//
// Threading: every method from any thread; one lock (base/lock_rank.h, kHostRegistrations),
// held across the backend's register_host so that two overlapping registrations of one device
// cannot both pass the overlap check. Pointer queries of unregistered process memory look here
// only when a registration exists (an atomic count first). Each change of the count is published
// for aclvmm-smi (observability/live_counts.h) before the lock is released, so the monitor's
// last value is the current one.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/read_mostly_mutex.h"
#include "base/status.h"
#include "vmm/device_directory.h"

namespace aclvmm {

struct HostRegistration {
  uint64_t base = 0;    // the application's pointer (4 KiB aligned)
  uint64_t size = 0;    // whole 4 KiB pages
  int device = 0;       // physical id of the registering device
  bool mapped = false;  // MAPPED: the device reaches it (at the same address)
  bool pinned = false;  // PINNED: kept resident
};

class HostRegistrations {
 public:
  explicit HostRegistrations(const DeviceDirectory& devices) : devices_(devices) {}

  // The backend's register_host, then the record. 507910 when it overlaps a registration of the
  // same device; 507899 when the backend finds a page that is not mapped.
  Status add(const HostRegistration& r);
  // aclrtHostUnregister: 507911 unless `base` is the base of a registration of `device`.
  Status remove(uint64_t base, int device);
  // aclrtHostGetDevicePointer: the device address of `ptr` inside a MAPPED registration of
  // `device` (ptr itself in the emulator); 107000 outside one.
  StatusOr<uint64_t> device_pointer(uint64_t ptr, int device) const;
  // Whether [address, address+size) lies in MAPPED registrations of `device` (kernels).
  bool reachable(uint64_t address, uint64_t size, int device) const;
  // Whether any registration covers `address` (pointer attributes).
  bool registered(uint64_t address) const;
  size_t size() const { return count_.load(std::memory_order_relaxed); }

  // Drop registrations (the backend's unregister_host for each) and answer them.
  std::vector<HostRegistration> release_device(int device);
  std::vector<HostRegistration> release_inside(uint64_t base, uint64_t size);
  std::vector<HostRegistration> release_all();

 private:
  using Key = std::pair<int, uint64_t>;  // (device, base)
  template <typename Pred>
  std::vector<HostRegistration> release_if(Pred drop);
  void unregister_in_backend(const HostRegistration& r);

  const DeviceDirectory& devices_;
  mutable RankedReadMostlyMutex<LockRank::kHostRegistrations> mu_;
  std::map<Key, HostRegistration> by_base_;
  std::atomic<size_t> count_{0};
};

}  // namespace aclvmm
