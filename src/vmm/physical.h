// PhysicalAllocation: one piece of device or host memory behind an aclrtDrvMemHandle.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "vmm/device_memory.h"

namespace aclvmm {

// Where memory lives, in the driver's terms (behavior.md section 1: "side").
enum class Side : uint32_t { kDevice = 0, kHost = 1, kHostNuma = 2 };
enum PageType : uint32_t { kNormalPage = 0, kHugePage = 1, kHuge1GPage = 2 };
enum MemType : uint32_t { kHbm = 0, kDdr = 1, kP2PHbm = 2, kP2PDdr = 3 };

// A copy of a pool's usage that monitors read (runtime/smi_publisher.h): a counter in shared memory
// that `keep` keeps mapped for as long as the pool exists. Empty: nobody watches.
struct UsageMirror {
  std::shared_ptr<void> keep;
  std::atomic<uint64_t>* used = nullptr;
};

// Where a pool's charges go when something else keeps the capacity (D8). Since migration step 6
// nothing of the core charges a pool: blocks, physical memory and managed pages are charged by
// the device backend when it makes or moves them, and every charge comes back to the pool as a
// usage_changed delta (mirror()). Kept for the pools' own unit tests.
class CapacityAuthority {
 public:
  virtual ~CapacityAuthority() = default;
  virtual bool charge(uint64_t bytes) = 0;
  virtual void uncharge(uint64_t bytes) = 0;
};

// What one memory pool (a device's HBM, the host) holds, as the device backend's ledger reports
// it (mirror(), fed by usage_changed: D8, the ledger is the authority and refuses first), and
// the counter monitors read. A pool without an authority (unit tests' stand-ins) keeps its own
// count for charge(), as pools did before D8.
class MemoryPool {
 public:
  explicit MemoryPool(uint64_t total, UsageMirror mirror = {})
      : total_(total), mirror_(std::move(mirror)) {}
  // Once, before the pool is used (the runtime's start).
  void attach(std::shared_ptr<CapacityAuthority> authority) { authority_ = std::move(authority); }

  // Managed pages: charged into the authority (whose report then reaches mirror()).
  bool charge(uint64_t bytes) {
    if (authority_) return authority_->charge(bytes);
    uint64_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > total_ - cur) return false;
    } while (!used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
    // An add rather than a store of cur + bytes: concurrent charges may finish out of order.
    if (mirror_.used) mirror_.used->fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  void uncharge(uint64_t bytes) {
    if (authority_) {
      authority_->uncharge(bytes);
      return;
    }
    mirror(-static_cast<int64_t>(bytes));
  }
  // A change the backend reports (usage_changed): the pool and the monitors' counter follow it.
  void mirror(int64_t delta) {
    used_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
    if (mirror_.used) mirror_.used->fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  }
  uint64_t total() const { return total_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const uint64_t total_;
  std::atomic<uint64_t> used_{0};
  const UsageMirror mirror_;
  std::shared_ptr<CapacityAuthority> authority_;
};

struct PhysicalAllocation {
  Side side = Side::kDevice;
  int device = 0;            // physical device id (kDevice) or NUMA node (kHostNuma)
  PageType page_type = kHugePage;
  MemType mem_type = kHbm;
  uint64_t reserve = 0;      // copied from the caller's prop
  uint64_t size = 0;         // rounded size; 0 for an import whose size the driver does not
                             // report (hal): the driver checks mappings against it then
  uint32_t link = 0xffffffffu;  // map route set by aclrtMemMapSetLink (none yet)
  bool imported = false;
  int reported_device = -1;  // imported: the exporter's device, which property queries report
  const char* created_by = "";
  // The backend's object (VMM handles and imports; aclrtMalloc blocks are the backend's blocks,
  // freed with their region). Its release gives the backend's charge back.
  DeviceMemory device_memory;

  // Vendor reference counts (behavior.md sections 1, 3, 6). Changed under the handle table's
  // lock: exclusively, except by map and unmap, which only count under the shared lock (atomics,
  // so that mapping threads do not serialise on the table) and take it exclusively to remove.
  std::atomic<int> ref{1};
  std::atomic<int> map_ref{0};

  bool on_device() const { return side == Side::kDevice; }
};

}  // namespace aclvmm
