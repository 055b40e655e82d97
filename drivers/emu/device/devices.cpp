#include "drivers/emu/device/devices.h"

#include <cerrno>

#include "drivers/emu/device/capacity.h"
#include "drivers/host/process_facts.h"

namespace aclvmm::dev::emu {
namespace {

Result invalid() { return Result::from_errno(EINVAL); }
uint64_t bit(DeviceIndex d) { return uint64_t{1} << d; }

}  // namespace

EmuDevices::EmuDevices(const EmulationOptions& options, CapacityLedger& ledger,
                       HostServices& host)
    : count_(options.device_count),
      soc_(options.soc),
      memory_(options.device_memory),
      server_id_(options.server_id),
      ledger_(ledger),
      host_(host) {}

Result EmuDevices::properties(DeviceIndex device, DeviceProperties* out) const {
  if (!valid(device) || out == nullptr) return invalid();
  out->soc_name = soc_;
  out->physical_id = static_cast<uint32_t>(device);  // no ASCEND_RT_VISIBLE_DEVICES below us
  out->memory_total = memory_;
  out->server_id = server_id_;
  out->super_pod_id = 0;
  return Result::success();
}

Result EmuDevices::open(DeviceIndex device) {
  if (!valid(device)) return invalid();
  if (opened_.fetch_or(bit(device), std::memory_order_acq_rel) & bit(device)) {
    return Result::from_errno(EBUSY);
  }
  return Result::success();
}

Result EmuDevices::close(DeviceIndex device) {
  if (!valid(device)) return invalid();
  if (!(opened_.fetch_and(~bit(device), std::memory_order_acq_rel) & bit(device))) {
    return invalid();  // not open: nothing to close
  }
  return Result::success();
}

// HBM is the ledger's; DDR is the host's memory as the host reports it (what aclrtGetMemInfo
// answers for the DDR attributes today). Page sizes are not pooled apart: the huge and giant
// figures are the same bytes.
Result EmuDevices::memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) {
  if (!valid(device) || out == nullptr) return invalid();
  uint64_t total = 0, free = 0;
  switch (kind) {
    case MemoryKind::kHbm:
    case MemoryKind::kP2pHbm: {
      const Location where = Location::device(device);
      total = ledger_.total(where);
      const uint64_t used = ledger_.used(where);
      free = used < total ? total - used : 0;
      break;
    }
    case MemoryKind::kDdr:
    case MemoryKind::kP2pDdr:
      total = host_.memory_total();
      free = host_.memory_free();
      break;
    default:
      return invalid();
  }
  *out = MemoryInfo{total, free, total, free, total, free};
  return Result::success();
}

Result EmuDevices::enable_peer(DeviceIndex device, DeviceIndex peer) {
  if (!valid(device) || !valid(peer) || device == peer) return invalid();
  peers_[device].fetch_or(bit(peer), std::memory_order_relaxed);
  return Result::success();
}

Result EmuDevices::disable_peer(DeviceIndex device, DeviceIndex peer) {
  if (!valid(device) || !valid(peer) || device == peer) return invalid();
  peers_[device].fetch_and(~bit(peer), std::memory_order_relaxed);
  return Result::success();
}

bool EmuDevices::can_access_peer(DeviceIndex device, DeviceIndex peer) const {
  if (!valid(device) || !valid(peer) || device == peer) return false;
  return (peers_[device].load(std::memory_order_relaxed) & bit(peer)) != 0;
}

int32_t EmuDevices::bare_tgid() const { return host::bare_tgid(); }

}  // namespace aclvmm::dev::emu
