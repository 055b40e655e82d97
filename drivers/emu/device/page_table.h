// EmuPageTable: the emulated NPU's device page table: one word per 2 MiB of virtual address
// space, each naming the mapping (MmuEntry) that covers it, as the hardware's page-table entries
// name physical pages. DeviceMmu::map writes the words, unmap clears them; pointer queries and,
// from migration step 3, the copy engine's translation read them (D4).
//
// Layout: a two-level radix table over the 47-bit user address space: a top level of one
// pointer per GiB (1 MiB, zero pages until touched), leaves of 512 words made on first use and
// kept until the table goes (as the core's chunk index keeps its words), so a lookup is two
// loads and never takes a lock.
//
// Threading: lookups from any thread, lock-free (acquire loads; an entry is published whole
// before its words). Writes to disjoint ranges run concurrently (a leaf is installed with one
// compare-and-swap; words are per range); the caller (DeviceMmu, serialized per range by the
// core) never writes one range from two threads. An entry is freed only after its words are
// cleared, by the thread that cleared them, and once no hazard slot names it (hazard.h): a
// reader that may race an unmap of the range it reads (the copy engine) finds the entry with
// protect(), takes its own reference on the physical object (EmuPhysical::retain) and releases
// the slot; find() is for callers the core serializes with every unmap of the range.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "drivers/device_mmu.h"
#include "drivers/device_result.h"
#include "drivers/device_types.h"
#include "drivers/emu/os/physical_memory.h"

namespace aclvmm::dev::emu {

class EmuPhysical;

// One mapping: what DeviceMmu::map made, with the rights of every location. Blocks
// (blocks.h) are entries too, so that the device (and from step 3 the copy engine) translates
// their addresses like any other: `kind` says which, and a block's size may end inside its last
// word (blocks are whole host pages at a 2 MiB aligned start, alone in their words).
struct MmuEntry {
  EmuPhysical* memory = nullptr;  // one reference held for the mapping's life
  uint64_t va = 0;
  uint64_t size = 0;
  uint64_t offset = 0;            // into `memory`
  Location owner;                 // where the memory lives
  // Access per location, ACL values (0, 1, 3); devices as read / write masks.
  std::atomic<uint64_t> dev_read{0};
  std::atomic<uint64_t> dev_write{0};
  // The small fields share the last word (an entry per live mapping: 64 bytes, not 80).
  std::atomic<uint8_t> host{0};
  // What the kernel mapping at va allows (cpu_view.h); changed only by the range's caller.
  os::CpuAccess cpu = os::CpuAccess::kNone;
  AddressInfo::Kind kind = AddressInfo::Kind::kMapping;  // or kDeviceBlock / kHostBlock
  uint32_t page_size = 2 * kMiB;                         // what pointer queries report

  // The first address after the words this entry occupies.
  uint64_t words_end() const { return (va + size + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB); }
  Access access(Location location) const;
  void set_access(Location location, Access flags);
};
static_assert(sizeof(MmuEntry) <= 64, "one entry per live mapping: keep it within a cache line");

class EmuPageTable {
 public:
  static constexpr uint64_t kGranule = 2 * kMiB;
  static constexpr uint64_t kLimit = uint64_t{1} << 47;  // the user address space

  EmuPageTable();
  ~EmuPageTable();
  EmuPageTable(const EmuPageTable&) = delete;
  EmuPageTable& operator=(const EmuPageTable&) = delete;

  // The entry covering va, or nullptr.
  MmuEntry* find(uint64_t va) const;
  // The same, announced in the calling thread's hazard slot k: it stays allocated until
  // hazard::release(k), even if an unmap clears its words meanwhile.
  MmuEntry* protect(size_t k, uint64_t va) const;
  // Makes the leaves [va, va+size) needs and checks that no word there is set: kOutOfMemory,
  // kInvalidArgument (outside the address space, or mapped). Nothing is published.
  Result prepare(uint64_t va, uint64_t size);
  // Publishes `entry` over [entry->va, +size) (prepare() succeeded for it).
  void publish(MmuEntry* entry);
  // Clears the words of [va, va+size).
  void clear(uint64_t va, uint64_t size);
  // The published entry with the lowest address at or above va, or nullptr (teardown and tests:
  // walks the leaves).
  MmuEntry* first_from(uint64_t va) const;
  // Mappings published and not cleared, counted by a walk: no counter is shared by the mappers,
  // whose disjoint ranges would otherwise contend for its cache line on every map and unmap.
  size_t live() const;

 private:
  static constexpr uint64_t kLeafWords = 512;  // 1 GiB per leaf
  struct Leaf {
    std::atomic<MmuEntry*> words[kLeafWords];
  };
  std::atomic<MmuEntry*>* word(uint64_t va) const;

  std::atomic<Leaf*>* top_ = nullptr;  // kLimit / 1 GiB pointers
};

}  // namespace aclvmm::dev::emu
