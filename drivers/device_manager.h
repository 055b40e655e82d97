// DeviceManager: the devices themselves: how many, what they are, opening and closing them, their
// memory, and peer access between them (hal.md §2, §3.10; halDeviceOpen/Close, halGetDeviceInfo,
// halGetSocVersion, halMemGetInfo, halDeviceEnableP2P, drvDeviceGetBareTgid).
//
// Contract
// - device_count() and properties() work before any device is opened (as their HAL functions
//   do); the core builds its device table and picks the product from them.
// - open(d): the first aclrtSetDevice of d in this process (the core counts references; a
//   backend sees one open per device until the matching close). Creates the per-process device
//   state the memory groups need; before the first open of any device, the memory groups may
//   answer kBadAddress (INVALID_HANDLE on hardware) as the driver does. Results: kInvalidArgument
//   for an id out of range, kBusy for a second open without close.
// - Every method taking a device id answers kInvalidArgument for one out of range (properties,
//   memory_info, the peer calls; can_access_peer: false), and close() for a device that is not
//   open.
// - close(d): the last aclrtResetDevice. What it does to memory of d that is still allocated is
//   the driver's (the HAL destroys every block of d; emu keeps them until released); the core
//   does not rely on either and releases what it holds first when it tears down.
// - memory_info(): capacity and free bytes as the backend accounts them. Capacity is the
//   backend's alone: physical allocations, blocks and managed pages resident on a device are
//   charged by the backend, which refuses with kOutOfMemory when the device is full. kHbm and
//   kP2pHbm are the device's memory; kDdr and kP2pDdr the DDR the driver reports (emu: the host's
//   memory as the host reports it, what aclrtGetMemInfo answers for DDR today). A backend that
//   does not pool page sizes apart reports the same bytes as huge and giant.
// - enable_peer(d, peer) lets d reach peer's memory (one direction); disable_peer() ends it;
//   both are idempotent. d == peer is kInvalidArgument. The core keeps the peer masks that copies
//   check (they are read on every copy) and calls this when a mask bit is set.
// - bare_tgid(): this process's pid in the initial pid namespace: what another process passes to
//   Sharing::set_pids to admit this one (-1 when the driver cannot tell).
//
// Threading: every method may be called from any thread; open/close of one device are
// serialized by the core (its runtime lock). May block: open and close (device set-up).
// Lifetime: owned by the DeviceBackend.
#pragma once

#include <cstdint>
#include <string>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

struct DeviceProperties {
  std::string soc_name;         // "Ascend910B1": the core's product table keys on it
  uint32_t physical_id = 0;     // drvDeviceGetPhyIdByIndex
  uint64_t memory_total = 0;    // HBM bytes
  int32_t server_id = -1;       // INFO_TYPE_SERVER_ID; -1 when there is none (no FABRIC)
  uint32_t super_pod_id = 0;    // INFO_TYPE_SDID
};

// Which memory halMemGetInfo reports on (MEM_INFO_TYPE_*; the core maps aclrtMemAttr to it).
enum class MemoryKind : uint8_t { kDdr = 1, kHbm = 2, kP2pDdr = 3, kP2pHbm = 4 };

// struct MemPhyInfo of hal.md §4.
struct MemoryInfo {
  uint64_t total = 0, free = 0;
  uint64_t huge_total = 0, huge_free = 0;
  uint64_t giant_total = 0, giant_free = 0;
};

class DeviceManager {
 public:
  virtual ~DeviceManager() = default;

  virtual int32_t device_count() const = 0;
  virtual Result properties(DeviceIndex device, DeviceProperties* out) const = 0;

  virtual Result open(DeviceIndex device) = 0;
  virtual Result close(DeviceIndex device) = 0;

  virtual Result memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) = 0;

  virtual Result enable_peer(DeviceIndex device, DeviceIndex peer) = 0;
  virtual Result disable_peer(DeviceIndex device, DeviceIndex peer) = 0;
  virtual bool can_access_peer(DeviceIndex device, DeviceIndex peer) const = 0;

  virtual int32_t bare_tgid() const = 0;
};

}  // namespace aclvmm::dev
