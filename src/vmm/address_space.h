// AddressSpace: the device address space of one process as the runtime keeps it (its
// bookkeeping; the device backend's DeviceMmu programs the page tables and CPU views).
//
// The virtual windows are the device backend's (AddressWindows, D9: emu claims them, emulation.md
// section 3); this object copies their layout and takes every range from them. Inside them live
// Regions (VMM
// reservations, aclrtMalloc and aclrtMallocHost allocations), kept in a tree by base address; each
// Region keeps its Mappings in a tree by start address. Every lookup is two O(log n) tree searches
// under shared locks that are dropped before any data moves. Two levels of ReadMostlyMutex:
// the region tree's (exclusive only to add or remove a region) and each region's own (exclusive
// only to change its mappings). So queries and copies on different threads never write a shared
// cache line, and map/unmap on different reservations run in parallel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/read_mostly_mutex.h"
#include "base/status.h"
#include "base/units.h"
#include "drivers/device_backend.h"
#include "vmm/chunk_index.h"
#include "vmm/physical.h"

namespace aclvmm {

// Access flags of one mapping for every location: ACL values 0 (none), 1 (read), 3 (read-write).
// One bit per device: the runtime has at most kMaxDevices; an id outside the masks has no access
// and cannot be granted any (a shift by 64 or more would be undefined).
struct AccessRights {
  static constexpr int kMaxDevices = 64;
  uint8_t host = 0;
  uint64_t dev_read = 0;
  uint64_t dev_write = 0;
  int device(int d) const {
    if (d < 0 || d >= kMaxDevices) return 0;
    return ((dev_read >> d) & 1) ? (((dev_write >> d) & 1) ? 3 : 1) : 0;
  }
  void set_device(int d, int flags) {
    if (d < 0 || d >= kMaxDevices) return;
    uint64_t bit = 1ull << d;
    dev_read = (flags & 1) ? (dev_read | bit) : (dev_read & ~bit);
    dev_write = (flags == 3) ? (dev_write | bit) : (dev_write & ~bit);
  }
};

struct AccessChange {
  bool host = false;
  int device = 0;  // physical device id when !host
  int flags = 0;
};

struct Mapping {
  uint64_t va = 0;
  uint64_t size = 0;
  uint64_t handle = 0;  // the token that was mapped (Retain gives the same value back)
  std::shared_ptr<PhysicalAllocation> phys;
  AccessRights access;
  const char* created_by = "";
};

enum class RegionKind { kReservation, kNoUcReservation, kDeviceMalloc, kHostPinned, kIpcImport };

struct Region {
  RegionKind kind = RegionKind::kReservation;
  uint64_t base = 0;
  uint64_t size = 0;      // what the caller may use (rounded)
  uint64_t span = 0;      // virtual range taken from the window
  uint64_t requested = 0; // what the caller asked for
  bool bound = false;     // a reservation's location is fixed by its first mapping
  Side bound_side = Side::kDevice;
  int bound_device = 0;
  int device = -1;        // aclrtMalloc: the owning physical device
  uint32_t page_size = 0; // aclrtMalloc / aclrtMallocHost / IPC imports: page size reported by queries
  const char* created_by = "";
  dev::PhysicalId block_memory;  // aclrtMalloc: the block's bytes (what an IPC key exports)
  // kIpcImport: the range taken from the window and mapped, whose first chunk `base` may lie
  // inside (a key's range need not start on a chunk).
  uint64_t window_base = 0;
  uint64_t window_size = 0;
  uint64_t mapped_size = 0;  // of the window, from window_base: up to the memory's end
  // Guards `mappings` and `bound*` (the fields above never change after creation). Map and
  // unmap on different reservations therefore never wait for each other.
  using Mutex = RankedReadMostlyMutex<LockRank::kRegionMappings>;
  mutable Mutex mu;
  std::map<uint64_t, Mapping> mappings;
};

// The lock of r's mappings, or no lock when r is null (the caller then only reports an error).
inline std::unique_lock<Region::Mutex> write_mappings(Region* r) {
  return r ? std::unique_lock<Region::Mutex>(r->mu) : std::unique_lock<Region::Mutex>();
}
inline std::shared_lock<Region::Mutex> read_mappings(const Region* r) {
  return r ? std::shared_lock<Region::Mutex>(r->mu) : std::shared_lock<Region::Mutex>();
}

// Who executes a device operation: a physical device and the devices it reaches by peer access.
struct Accessor {
  int device = -1;          // -1: no current context
  uint64_t peer_mask = 0;
};

// What an IPC key may export at an address (runtime-extra.md §3.2): its device memory, where the
// range lies in it, and the allocation it belongs to.
struct IpcSource {
  dev::PhysicalId memory;
  uint64_t offset = 0;        // of the exported address in `memory`
  uint32_t page_size = 0;     // what pointer queries report there
  int device = 0;             // physical id of the device holding it
  uint64_t allocation = 0;    // the block's base or the mapping's start
  uint64_t allocation_size = 0;
};

// An aclrtMalloc / aclrtMallocHost block as vmm_malloc computed it.
struct BlockSpec {
  RegionKind kind = RegionKind::kDeviceMalloc;  // or kHostPinned
  uint64_t size = 0;       // the bytes it holds (padded and rounded to its page)
  uint64_t requested = 0;  // what the application asked for
  uint32_t page_size = 0;  // kDeviceMalloc: what pointer queries report
  int device = 0;          // kDeviceMalloc: the owning physical device
};

struct PointerInfo {
  enum Kind { kDevice, kHost, kUnregistered, kManaged } kind = kUnregistered;
  int device = 0;           // physical device id for kDevice
  uint32_t page_size = 0;
};

struct AddressRange {
  uint64_t base = 0;
  uint64_t size = 0;
};

class AddressSpace {
 public:
  // Gives back every range it still holds (a test's address space; the runtime's lives as long
  // as the process).
  ~AddressSpace() { (void)clear(); }
  // The device backend whose windows hold every range of this object and whose MMU programs every
  // VMM mapping (each runtime start; the runtime passes it, so this object needs no runtime of
  // its own). Set before the first reservation; its layout is copied (the windows are on every
  // translation's path, so no virtual call there), and the pointer index covers its device
  // window, in a table of the backend's host memory.
  void attach_device(std::shared_ptr<dev::DeviceBackend> device);
  // Drops every region and mapping (finalize); returns them so the caller can report leaks.
  std::vector<std::unique_ptr<Region>> clear();

  // Reservations (VMM). `expect` 0: anywhere in the device window.
  StatusOr<uint64_t> reserve(uint64_t size, uint64_t expect, bool no_uc, const char* api);
  Status release(uint64_t base);

  // aclrtMalloc / aclrtMallocHost: a block from the device backend (BlockAllocator: its memory,
  // page-table words and, for host blocks, CPU view in one call, D10) placed in the device or
  // host pinned window, recorded as a region with its single whole-region mapping. `phys` is the
  // core's record of it (side, device, size, charge); its memory is set to the block's bytes.
  // Rolls back on failure: no range, no block. `refused` (if given) gets the backend's reason when
  // it was the backend that refused (kOutOfMemory: its ledger is full, D8).
  StatusOr<uint64_t> add_block(const BlockSpec& spec, std::shared_ptr<PhysicalAllocation> phys,
                               dev::Condition* refused = nullptr);
  // Removes a malloc region whose base is `base` and whose kind is `kind`.
  StatusOr<std::unique_ptr<Region>> remove_allocation(uint64_t base, RegionKind kind);
  // Whether a malloc region of `kind` starts at `base` (remove_allocation would find it).
  bool has_allocation(uint64_t base, RegionKind kind) const;

  // VMM mappings.
  Status map(uint64_t va, uint64_t size, uint64_t handle, std::shared_ptr<PhysicalAllocation> phys,
             bool no_access);
  StatusOr<Mapping> unmap(uint64_t va);
  // Exact mapping start -> the mapped handle.
  StatusOr<uint64_t> mapping_handle(uint64_t va) const;
  // (va,size) must be exactly one mapping; all changes apply or none does.
  Status set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes,
                    bool quirks);
  StatusOr<int> get_access(uint64_t va, bool host, int device) const;
  // aclrtMemP2PMap: `device` gets read-write access to every device mapping overlapping
  // [va, va+size). Returns the owner of an aclrtMalloc block there (the caller opens peer access
  // to it), or -1.
  StatusOr<int> grant_peer(uint64_t va, uint64_t size, int device);

  // Queries.
  StatusOr<AddressRange> address_range(uint64_t ptr) const;
  StatusOr<PointerInfo> pointer_info(uint64_t ptr, size_t host_page) const;
  // Why a device operation of `who` may not reach [va, va+n) (Ok when it may, and for process
  // memory outside the windows): the core's records, in the words and codes the vendor runtime
  // reports. The device's MMU decides a copy; this explains one it refused (MemoryOps::refused).
  Status check_device_access(uint64_t va, uint64_t n, bool write, const Accessor& who) const;

  // The managed window (the backend's, WindowLayout::managed).
  uint64_t uvm_window() const { return layout_.managed.base; }
  uint64_t uvm_window_size() const { return layout_.managed.size; }

  // Host registrations (runtime-extra.md §5): whether va lies in an aclrtMallocHost block, and
  // whether [base, base+size) reaches into the device or managed window or a no-UC reservation
  // (host memory only can be registered; aclrtMallocHost's window is host memory).
  bool is_host_block(uint64_t va) const;
  bool overlaps_device_windows(uint64_t base, uint64_t size) const;

  // IPC memory by key (address_space_ipc.cpp). ipc_source: [va, va+size) as §3.2 allows it,
  // else 507899 with the reason. add_ipc_import maps what the backend imported (its object,
  // held by `phys`) at a new address of the device window for `device`, read-write for it;
  // rolls back on failure. remove_ipc_import undoes it (the address add_ipc_import returned).
  StatusOr<IpcSource> ipc_source(uint64_t va, uint64_t size) const;
  StatusOr<uint64_t> add_ipc_import(const dev::IpcImported& imported,
                                    std::shared_ptr<PhysicalAllocation> phys, int device);
  Status remove_ipc_import(uint64_t base);

  // Statistics.
  size_t region_count(RegionKind kind) const;
  size_t mapping_count() const;

 private:
  const Region* find_region(uint64_t va) const;
  Region* find_region(uint64_t va);
  bool in_windows(uint64_t va) const;

  std::shared_ptr<dev::DeviceBackend> device_;
  dev::DeviceMmu* mmu_ = nullptr;  // device_'s, fetched once
  // Publishes what pointer queries answer for the mappings of r (or all of r, a malloc block).
  void index_mapping(const Mapping& m);
  void index_malloc(const Region& r);
  void unindex(const Region& r);

  // The region tree; ranked below a Region's mu (base/lock_rank.h). Its writer lock also
  // serialises every reserve and release of the backend's windows (address_windows.h, D9).
  mutable RankedReadMostlyMutex<LockRank::kRegionTree> mu_;
  ChunkIndex index_;            // lock-free answers for the device window (chunk_index.h)
  std::map<uint64_t, std::unique_ptr<Region>> regions_;
  dev::AddressWindows* windows_ = nullptr;  // device_'s, fetched once
  dev::WindowLayout layout_;                // its layout, copied at attach
};

}  // namespace aclvmm
