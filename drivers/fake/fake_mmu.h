// FakeMmu: DeviceMmu of the fake backend: a page table as a map of mappings (start → what is
// mapped, the rights of every location), under the machine's lock, with every precondition of
// device_mmu.h checked and counted as a violation (a dead id, a range that is not whole
// granules, runs past the memory, overlaps a mapping, is not exactly one mapping for unmap and
// set_access). No CPU views: the CPU cannot dereference fake memory (no cpu_visible_*
// capability); cpu_access() is the test's CPU, reading and writing through the page table with
// the HOST rights a real CPU mapping would have. Blocks (fake_blocks.h) are entries too, of
// their own kind.
//
// A mapping holds its physical object (FakePhysical::hold_locked), so a released object keeps
// its bytes and its charge until it is unmapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "drivers/device_mmu.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_physical.h"

namespace aclvmm::dev::fake {

class FakeMmu final : public DeviceMmu {
 public:
  FakeMmu(FakeMachine& machine, FakePhysical& physical) : machine_(machine), physical_(physical) {}
  ~FakeMmu() override;

  Result map(uint64_t va, uint64_t size, PhysicalId memory, uint64_t offset,
             InitialAccess initial) override;
  Result unmap(uint64_t va, uint64_t size) override;
  Result set_access(uint64_t va, uint64_t size, const AccessGrant* grants, size_t count,
                    size_t* applied) override;
  Result access(uint64_t va, Location location, Access* out) const override;
  Result grant_peer(uint64_t va, uint64_t size, DeviceIndex device) override;
  Result query(uint64_t va, AddressInfo* out) const override;
  // The fake keeps each registration (va, device) to check that unregister_host undoes exactly
  // one (a violation otherwise); kBadAddress for a range the CPU cannot reach (below).
  Result register_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  Result unregister_host(uint64_t va, uint64_t size, DeviceIndex device, bool pin) override;
  size_t host_registrations() const;

  // The test's CPU at va: n bytes read (or written) through the mapping there when the HOST may
  // (kBadAddress, -EFAULT, when it may not or nothing is mapped: where a real CPU faults).
  Result cpu_access(uint64_t va, void* buffer, size_t n, bool write);
  // Mappings and blocks.
  size_t live_mappings() const;

  // For the fake blocks (fake_blocks.h), under the machine's lock: a block's entry over
  // [va, va+size) showing `memory` from offset 0, its owner read-write (the host: the CPU);
  // `span` bytes from va unmapped (a violation otherwise; fake_blocks.h checks the alignment). Holds the object as a mapping does. unmap() and set_access() never reach a
  // block; unmap_block_locked() does and answers the object it held.
  Result map_block_locked(uint64_t va, uint64_t size, uint64_t span, PhysicalId memory,
                          AddressInfo::Kind kind, uint32_t page_size);
  Result unmap_block_locked(uint64_t va, PhysicalId* memory);

  // For the copy engine (fake_copy_engine.h), under the machine's lock: the bytes the entry at
  // va holds for `who` (copy_rights.h), from *offset, and how many of `left` bytes it holds
  // there (*length); kBadAddress (-EFAULT) when nothing is mapped at va, kNotPermitted
  // (-EACCES) without the right.
  Result reach_locked(uint64_t va, uint64_t left, bool write, const Executor& who,
                      ByteStore** bytes, uint64_t* offset, uint64_t* length);
  // Under the lock: whether [address, +n) is process memory the CPU reaches: not the null page
  // and no fake entry (the CPU cannot dereference fake memory); else the first address it
  // cannot reach in *bad.
  bool host_reaches_locked(uint64_t address, uint64_t n, uint64_t* bad) const;

 private:
  struct Registration {
    uint64_t size = 0;
    bool pinned = false;
  };
  std::map<std::pair<uint64_t, DeviceIndex>, Registration> registered_;  // under the machine's lock
  struct Entry {
    uint64_t size = 0;
    PhysicalId memory;
    uint64_t offset = 0;
    Location owner;
    uint8_t host = 0;
    uint64_t dev_read = 0;
    uint64_t dev_write = 0;
    uint32_t granule = 0;
    AddressInfo::Kind kind = AddressInfo::Kind::kMapping;  // or a block's
    uint32_t page_size = 2 * kMiB;                         // what queries report
  };
  // Under the lock: whether [va, va+size) overlaps an entry.
  bool overlaps(uint64_t va, uint64_t size) const;
  // Under the lock: records e at va (its owner read-write if asked) and holds its memory.
  Result insert_locked(uint64_t va, Entry e, bool owner_read_write);
  // Under the lock: the mapping containing va, or nullptr.
  const Entry* containing(uint64_t va, uint64_t* start) const;
  static Access flags_of(const Entry& e, Location location);
  static void set_flags(Entry& e, Location location, Access flags);

  FakeMachine& machine_;
  FakePhysical& physical_;
  std::map<uint64_t, Entry> mappings_;
};

}  // namespace aclvmm::dev::fake
