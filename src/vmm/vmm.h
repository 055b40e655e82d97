// The virtual-memory operations of the runtime and driver layers (behavior.md sections 1-9).
// The ACL layer (src/api) has already done its own checks; these do the runtime's and the
// driver's, in the vendor's order, and return the vendor's codes.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/handle_table.h"
#include "base/status.h"
#include "vmm/address_space.h"
#include "vmm/host_registrations.h"
#include "vmm/ipc_keys.h"
#include "vmm/managed.h"
#include "vmm/physical.h"
#include "vmm/runtime_services.h"
#include "vmm/share.h"

namespace aclvmm::vmm {

struct PhysicalSpec {
  Side side = Side::kDevice;
  int device = 0;  // physical device id (kDevice) or NUMA node (kHostNuma); 0 for kHost
  PageType page_type = kHugePage;
  MemType mem_type = kHbm;
  uint64_t reserve = 0;
};

// The operations, given the runtime's pieces at construction (one object, owned by the
// Runtime; the API façade reaches it through Runtime::vmm()). Nothing here takes a lock of its
// own: the tables and the address space lock what they hold, as before.
class Vmm {
 public:
  // `registrations`: the runtime's host registrations (pointer queries report their memory as
  // HOST, aclrtFreeHost drops those inside the block); none in tests that need none.
  // `ipc`: the process's IPC keys, told when memory they name is freed or unmapped.
  Vmm(RuntimeServices& runtime, AddressSpace& space, HandleTable<PhysicalAllocation>& physical,
      ShareService& sharing, ManagedMemory& managed, HostRegistrations* registrations = nullptr,
      IpcKeys* ipc = nullptr)
      : rt_(runtime),
        space_(space),
        physical_(physical),
        sharing_(sharing),
        managed_(managed),
        registrations_(registrations),
        ipc_(ipc) {}
  Vmm(const Vmm&) = delete;
  Vmm& operator=(const Vmm&) = delete;

  StatusOr<uint64_t> malloc_physical(uint64_t size, const PhysicalSpec& spec);
  // aclrtMemGetAllocationGranularity where the driver decides (a backend that reports the
  // machine, hal): the driver's answer in *out. Elsewhere *out stays 0 and the core's rule of
  // behavior.md §5 applies.
  Status driver_granularity(const PhysicalSpec& spec, int option, uint64_t* out);
  Status free_physical(uint64_t handle);
  StatusOr<PhysicalSpec> properties(uint64_t handle);
  StatusOr<uint64_t> retain(uint64_t va);

  StatusOr<uint64_t> reserve(uint64_t size, uint64_t alignment, uint64_t expect, bool no_uc);
  Status release(uint64_t va);
  Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle, bool no_access);
  Status unmap(uint64_t va);
  Status set_access(uint64_t va, uint64_t size, const std::vector<AccessChange>& changes);
  StatusOr<int> get_access(uint64_t va, bool host, int device);

  StatusOr<AddressRange> address_range(uint64_t ptr);
  // aclrtMemP2PMap: the peer device `device` reaches [ptr, ptr+size) of another device's memory.
  Status p2p_map(uint64_t ptr, uint64_t size, int device);
  StatusOr<PointerInfo> pointer_info(uint64_t ptr);

  // aclrtMalloc / aclrtMallocHost and their frees. `align32`: aclrtMallocAlign32, which adds no
  // 32-byte padding (runtime-extra.md §6) except where the product says the two are one call.
  StatusOr<uint64_t> device_malloc(uint64_t size, int policy, bool align32 = false);
  Status device_free(uint64_t ptr);
  StatusOr<uint64_t> host_malloc(uint64_t size);
  Status host_free(uint64_t ptr);
  // Whether aclrtFree (host: aclrtFreeHost) of `ptr` is aclvmm's to do: a block it allocated
  // (beside the vendor runtime, other pointers are the vendor's).
  bool owns_block(uint64_t ptr, bool host) const;

  // Host memory registration (runtime-extra.md §5), after the ACL layer's checks, each in the
  // spec's order from the context check on. `reserved`: the request has IOMEMORY or READONLY
  // (207000 in aclvmm); `v2_pinned`: aclrtHostRegisterV2's PINNED (107000 inside aclrtMallocHost
  // memory).
  struct HostRegisterRequest {
    uint64_t ptr = 0;
    uint64_t size = 0;
    bool mapped = false;
    bool pinned = false;
    bool reserved = false;
  };
  Status host_register(const HostRegisterRequest& request);
  Status host_unregister(uint64_t ptr);
  StatusOr<uint64_t> host_device_pointer(uint64_t ptr);

 private:
  // Drops one mapping's references to `handle`; the last reference removes it from the table.
  void release_ref(uint64_t handle);
  // The runtime asks the driver whether host NUMA memory exists before the driver sees it: the
  // host's NUMA node count, or why there is no host NUMA memory.
  StatusOr<int> host_numa_nodes();
  // The host's page size, asked of the backend once: pointer queries report it for host memory,
  // and a virtual call through the injection decorator on every query cost them 10 % of their
  // time. It never changes within a process, whichever backend a restart opens.
  size_t host_page();

  RuntimeServices& rt_;
  AddressSpace& space_;
  HandleTable<PhysicalAllocation>& physical_;
  ShareService& sharing_;
  ManagedMemory& managed_;
  HostRegistrations* const registrations_;
  IpcKeys* const ipc_;
  std::atomic<size_t> host_page_{0};
  // The current device of a host-registration call after the context and product checks.
  StatusOr<int> host_register_device();
};

}  // namespace aclvmm::vmm
