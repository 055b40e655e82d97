#include "drivers/fake/fake_devices.h"

#include <cerrno>

namespace aclvmm::dev::fake {
namespace {

uint64_t bit(DeviceIndex d) { return uint64_t{1} << d; }

}  // namespace

Result FakeDevices::properties(DeviceIndex device, DeviceProperties* out) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device) || out == nullptr) {
    return machine_.violation("properties: no such device");
  }
  out->soc_name = machine_.config().soc;
  out->physical_id = static_cast<uint32_t>(device);
  out->memory_total = machine_.config().device_memory;
  out->server_id = machine_.config().server_id;
  out->super_pod_id = 0;
  return Result::success();
}

Result FakeDevices::open(DeviceIndex device) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device)) return machine_.violation("open: no such device");
  if (opened_ & bit(device)) return Result::from_errno(EBUSY);
  opened_ |= bit(device);
  return Result::success();
}

Result FakeDevices::close(DeviceIndex device) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device)) return machine_.violation("close: no such device");
  if (!(opened_ & bit(device))) return machine_.violation("close: the device is not open");
  opened_ &= ~bit(device);
  return Result::success();
}

Result FakeDevices::memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device) || out == nullptr) {
    return machine_.violation("memory_info: no such device");
  }
  Location where;
  switch (kind) {
    case MemoryKind::kHbm: case MemoryKind::kP2pHbm: where = Location::device(device); break;
    case MemoryKind::kDdr: case MemoryKind::kP2pDdr: where = Location::host(); break;
    default: return machine_.violation("memory_info: no such memory kind");
  }
  const uint64_t total = machine_.total(where);
  const uint64_t free = total - machine_.used(where);
  *out = MemoryInfo{total, free, total, free, total, free};
  return Result::success();
}

Result FakeDevices::set_peer(DeviceIndex device, DeviceIndex peer, bool enabled) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device) || !machine_.valid_device(peer)) {
    return machine_.violation("peer: no such device");
  }
  if (device == peer) return machine_.violation("peer: a device is not its own peer");
  if (enabled) {
    peers_[device] |= bit(peer);
  } else {
    peers_[device] &= ~bit(peer);
  }
  return Result::success();
}

Result FakeDevices::enable_peer(DeviceIndex device, DeviceIndex peer) {
  return set_peer(device, peer, true);
}

Result FakeDevices::disable_peer(DeviceIndex device, DeviceIndex peer) {
  return set_peer(device, peer, false);
}

bool FakeDevices::can_access_peer(DeviceIndex device, DeviceIndex peer) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (!machine_.valid_device(device) || !machine_.valid_device(peer) || device == peer) {
    return false;
  }
  return (peers_[device] & bit(peer)) != 0;
}

}  // namespace aclvmm::dev::fake
