// The units of the hal backend (device_backend.h), each a thin translation of the device
// interface onto the driver library's calls with the argument values of hal.md §3: what the
// vendor runtime passes is what these pass, so the driver's records, per-module accounting and
// side effects are the same whoever made the call (hal.md §6.2 rule 6).
//
// Shared rules
// - A driver result goes back unchanged as a positive Result (device_result.h); the core maps it
//   with hal.md §3.0's table. A function the library lacks answers NOT_SUPPORT (207000), the
//   vendor runtime's answer for a missing weak symbol.
// - PhysicalId is the drv_mem_handle_t* itself, unwrapped (hal.md §6.2 rule 4); device ids are
//   the driver's logical ids (the core converted them).
// - Standalone (no vendor runtime in the process), the backend opens and closes devices itself
//   (hal.md §2); coexisting with the vendor runtime it never does (§6.2 rule 2).
//
// Threading: the driver locks internally (hal.md §1.4); the units keep only the sizes of what
// they made (for BackendListener::usage_changed) under their own small locks.
#pragma once

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "drivers/copy_engine_base.h"
#include "drivers/device_backend.h"
#include "drivers/hal/hal_library.h"

namespace aclvmm::dev::hal {

// What every unit needs: the functions, the listener, the process's mode.
struct HalContext {
  const HalFunctions* fn = nullptr;
  BackendListener* listener = nullptr;
  bool standalone = true;  // no vendor runtime in the process (hal.md §6)
  int32_t device_count = 0;
};

inline Result driver_result(drvError_t e) {
  return e == DRV_ERROR_NONE ? Result::success() : Result::from_driver(e);
}
inline Result missing() { return Result::from_driver(DRV_ERROR_NOT_SUPPORT); }
inline drv_mem_handle_t* handle_of(PhysicalId id) {
  return reinterpret_cast<drv_mem_handle_t*>(static_cast<uintptr_t>(id.value));
}
inline PhysicalId id_of(drv_mem_handle_t* h) {
  return PhysicalId{static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h))};
}
inline void* va_ptr(uint64_t va) { return reinterpret_cast<void*>(static_cast<uintptr_t>(va)); }

// Bytes this backend made, by address or handle, so that usage_changed can give them back (the
// driver does not say how large a handle is).
class UsageBook {
 public:
  explicit UsageBook(BackendListener& listener) : listener_(listener) {}
  void add(uint64_t key, DeviceIndex device, uint64_t bytes);
  void remove(uint64_t key);
  uint64_t size_of(uint64_t key) const;
  // What is still booked (the backend's destruction releases it).
  std::vector<uint64_t> keys() const;

 private:
  struct Entry {
    DeviceIndex device;
    uint64_t bytes;
  };
  BackendListener& listener_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> entries_;
};

class HalDevices final : public DeviceManager {
 public:
  explicit HalDevices(const HalContext& ctx) : ctx_(ctx) {}
  int32_t device_count() const override { return ctx_.device_count; }
  Result properties(DeviceIndex device, DeviceProperties* out) const override;
  Result open(DeviceIndex device) override;
  Result close(DeviceIndex device) override;
  Result memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) override;
  Result enable_peer(DeviceIndex device, DeviceIndex peer) override;
  Result disable_peer(DeviceIndex device, DeviceIndex peer) override;
  bool can_access_peer(DeviceIndex device, DeviceIndex peer) const override;
  int32_t bare_tgid() const override;

 private:
  bool valid(DeviceIndex d) const { return d >= 0 && d < ctx_.device_count; }
  Result physical_id(DeviceIndex d, uint32_t* out) const;
  const HalContext& ctx_;
};

class HalWindows final : public AddressWindows {
 public:
  HalWindows(const HalContext& ctx, FakeLayoutFn fake_layout);
  const WindowLayout& layout() const override { return layout_; }
  Result reserve(const ReserveRequest& request, uint64_t* address) override;
  Result release(uint64_t address, uint64_t size) override;

 private:
  const HalContext& ctx_;
  WindowLayout layout_;
};

class HalPhysical final : public PhysicalAllocator {
 public:
  HalPhysical(const HalContext& ctx, bool giant_pages)
      : ctx_(ctx), book_(*ctx.listener), giant_pages_(giant_pages) {}
  Result create(const PhysicalSpec& spec, PhysicalId* out) override;
  Result release(PhysicalId memory) override;
  Result properties(PhysicalId memory, PhysicalProperties* out) const override;
  Result granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const override;
  Result set_map_route(PhysicalId memory, uint32_t route) override;
  Result map_route(PhysicalId memory, uint32_t* route) const override;
  // The backend's end: every handle this backend created and nobody released.
  void release_all();

 private:
  const HalContext& ctx_;
  UsageBook book_;
  const bool giant_pages_;
};

class HalBlocks final : public BlockAllocator {
 public:
  explicit HalBlocks(const HalContext& ctx) : ctx_(ctx), book_(*ctx.listener) {}
  Result allocate(const BlockRequest& request, Block* out) override;
  Result free(uint64_t address) override;
  void free_all();  // the backend's end

 private:
  const HalContext& ctx_;
  UsageBook book_;
};

class HalMmu final : public DeviceMmu {
 public:
  explicit HalMmu(const HalContext& ctx) : ctx_(ctx) {}
  Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
             InitialAccess initial) override;
  Result unmap(uint64_t va, uint64_t size) override;
  Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                    size_t* applied) override;
  Result access(uint64_t va, Location location, Access* out) const override;
  Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) override;
  Result query(uint64_t va, AddressInfo* out) const override;
  Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  void unmap_all();  // the backend's end

 private:
  void remember(uint64_t va, uint64_t size);
  const HalContext& ctx_;
  std::mutex mu_;
  std::map<uint64_t, uint64_t> mapped_;  // what this backend mapped: va -> size
};

// Synchronous copies through drvMemcpy / drvMemsetD8 (the kind is not passed: the driver infers
// the direction from the addresses, hal.md §3.11); queues are host threads (hal.md §6.3).
class HalCopyEngine final : public CopyEngineBase {
 public:
  HalCopyEngine(const HalContext& ctx, UnifiedMemory* unified);
  ~HalCopyEngine() override { destroy_queues(); }
  // The backend's end: no queue runs a copy while the backend gives memory back.
  void destroy_all_queues() { destroy_queues(); }
  CopyOutcome copy(const CopyRequest& request) override;
  CopyOutcome fill(const FillRequest& request) override;

 private:
  const HalContext& ctx_;
};

class HalSharing final : public Sharing {
 public:
  explicit HalSharing(const HalContext& ctx) : ctx_(ctx) {}
  Result export_memory(PhysicalId memory, ShareToken* out) override;
  Result export_fabric(PhysicalId memory, FabricToken* inout) override;
  Result disable_validation(ShareToken token) override;
  Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) override;
  Result token_of_fabric(const FabricToken& fabric, ShareToken* out) override;
  Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) override;
  Result import_fabric(const FabricToken& fabric, DeviceIndex device, ImportedMemory* out) override;

 private:
  Result enable_p2p_with_exporter(uint64_t token, DeviceIndex device);
  Result describe_import(drv_mem_handle_t* h, uint64_t token, ImportedMemory* out) const;
  const HalContext& ctx_;
};

class HalUnified final : public UnifiedMemory {
 public:
  explicit HalUnified(const HalContext& ctx) : ctx_(ctx) {}
  Result allocate(uint64_t size, uint64_t* address) override;
  Result free(uint64_t address, FreeMode mode) override;
  Result advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) override;
  Result prefetch(uint64_t address, uint64_t size, Location target) override;
  Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size, int32_t* values,
                   size_t slots) override;
  ManagedTracking tracking() const override;
  void free_all();  // the backend's end

 private:
  const HalContext& ctx_;
  std::mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;  // what this backend allocated: address -> size
};

}  // namespace aclvmm::dev::hal
