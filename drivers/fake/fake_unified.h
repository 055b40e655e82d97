// FakeUnified: UnifiedMemory of the fake backend (docs/device-interface.md §8): managed ranges in
// byte stores with the residency policy emu has (unified_memory.h, docs/managed-memory.md): a
// residency per 2 MiB page, read copies for READ_MOSTLY pages, preferred location and
// accessed-by, LRU eviction when a device is full, prefetch, the attributes in the vendor's
// encodings. Deterministic, without a fault thread: the CPU is the test's cpu_access(), which
// does what emu's fault thread does when a CPU touches a page (a revoked page comes back to the
// host, a write to a write-protected read-copy page drops the copies) and then moves the bytes.
//
// Device accesses are the copy engine's kManaged endpoints (fake_copy_engine.cpp): reach_locked()
// applies the policy for the executing device and hands out the range's byte store.
//
// The managed window is the fake windows' layout().managed (FakeConfig::managed_window /
// managed_window_size); ranges are placed first fit, so the same calls give the
// same addresses. Residency is tracked when FakeConfig::managed_residency says so (tracking()
// answers it from the first allocation on, as emu learns it then); without it every page stays
// on the host. Device pages are charged to the machine (usage_changed); the host side is the
// byte store, which costs nothing until written, so only the window limits an allocation.
//
// Violations (counted, kInvalidArgument): a size that is not whole 2 MiB pages, a free of
// anything but a range's base, an unknown advice or attribute, a device out of range, no result
// slot.
//
// Threading: the machine's lock for every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "drivers/device_backend.h"
#include "drivers/fake/byte_store.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/unified_memory.h"

namespace aclvmm::dev::fake {

class FakeUnified final : public UnifiedMemory {
 public:
  static constexpr uint64_t kPage = 2 * kMiB;

  explicit FakeUnified(FakeMachine& machine) : machine_(machine) {}
  ~FakeUnified() override;

  Result allocate(uint64_t size, uint64_t* address) override;
  Result free(uint64_t address, FreeMode mode) override;
  Result advise(uint64_t address, uint64_t size, ManagedAdvice advice, Location where) override;
  Result prefetch(uint64_t address, uint64_t size, Location target) override;
  Result attribute(ManagedAttribute attribute, uint64_t address, uint64_t size, int32_t* values,
                   size_t slots) override;
  ManagedTracking tracking() const override;

  // Under the machine's lock, for the copy engine: a device access of `left` bytes from va by
  // `who`; the policy applied to the pages it covers up to its range's end, and the bytes there:
  // *bytes, *offset, and how many of `left` (*length). kBadAddress outside every range;
  // kOutOfMemory when a migration finds the device full with nothing to evict.
  Result reach_locked(uint64_t va, uint64_t left, bool write, const Executor& who,
                      ByteStore** bytes, uint64_t* offset, uint64_t* length);
  // Whether va lies in the managed window (configuration only: no lock).
  bool in_window(uint64_t va) const;
  // The test's CPU on managed memory (takes the lock): kBadAddress outside every range.
  Result cpu_access(uint64_t va, void* buffer, size_t n, bool write);
  // The "managed" statistics group (takes the lock).
  void visit_statistics(StatisticsVisitor& visitor) const;

 private:
  struct Page {
    DeviceIndex resident = kNoDevice;  // kNoDevice: the host
    uint64_t read_copies = 0;          // devices holding a read copy (READ_MOSTLY)
    bool read_mostly = false;
    Location preferred;                // kind kNone: no preference
    uint64_t accessed_by = 0;
    bool accessed_by_host = false;
    Location last_prefetch;
    uint64_t lru_stamp = 0;            // its entry in the resident device's LRU (0: none)
    bool cpu_revoked = false;          // the CPU's next access brings the page back
    bool write_protected = false;      // the CPU's next write drops the read copies
  };
  struct Range {
    Range(uint64_t b, uint64_t s) : base(b), bytes(s), pages(s / kPage) {}
    uint64_t base;
    ByteStore bytes;
    std::vector<Page> pages;
  };
  struct PageRef {
    Range* range;
    size_t index;
  };
  using Pages = std::vector<PageRef>;
  struct Counters {
    uint64_t host_faults = 0, device_faults = 0, bytes_to_device = 0, bytes_to_host = 0,
             evictions = 0, prefetch_bytes = 0, read_copy_invalidations = 0;
  };

  Range* find(uint64_t va) const;
  // The pages of [va, va+size); kBadAddress (nothing in *out) if any is not allocated.
  Result pages_of(uint64_t va, uint64_t size, Pages* out) const;
  bool residency() const { return tracked_ && machine_.config().managed_residency; }
  bool cpu_writes() const { return residency() && machine_.config().managed_write_tracking; }
  bool cpu_keeps_access(const Page& p) const;
  void sync_cpu_access(Page& p);
  void add_read_copy(Page& p, uint64_t va, DeviceIndex device);
  void drop_read_copies(Page& p) { p.read_copies = 0; p.write_protected = false; }
  Result to_device(Range& r, size_t index, DeviceIndex device);
  void to_host(Range& r, size_t index, bool eviction);
  void event(const char* what, uint64_t va, DeviceIndex device);
  Result bad_device(DeviceIndex device);

  FakeMachine& machine_;
  std::map<uint64_t, std::unique_ptr<Range>> ranges_;
  std::map<uint64_t, PageRef> lru_[kMaxDevices];  // per device: stamp -> page, oldest first
  uint64_t clock_ = 0;
  bool tracked_ = false;  // learnt at the first allocation
  Counters counters_;
};

}  // namespace aclvmm::dev::fake
