#include "drivers/emu/device/capacity.h"

#include <cerrno>

namespace aclvmm::dev::emu {

CapacityLedger::CapacityLedger(BackendListener& listener, int32_t device_count,
                               uint64_t device_bytes, uint64_t host_bytes)
    : listener_(listener), device_count_(device_count) {
  for (int32_t d = 0; d < device_count_; ++d) devices_[d].total = device_bytes;
  host_.total = host_bytes;
}

CapacityLedger::Pool* CapacityLedger::pool(Location location) {
  return const_cast<Pool*>(static_cast<const CapacityLedger*>(this)->pool(location));
}

const CapacityLedger::Pool* CapacityLedger::pool(Location location) const {
  switch (location.kind) {
    case Location::Kind::kDevice:
      return location.id >= 0 && location.id < device_count_ ? &devices_[location.id] : nullptr;
    case Location::Kind::kHost:
    case Location::Kind::kHostNuma:
      return &host_;
    default:
      return nullptr;
  }
}

DeviceIndex CapacityLedger::reported_device(Location location) {
  return location.kind == Location::Kind::kDevice ? location.id : kNoDevice;
}

Result CapacityLedger::charge(Location location, uint64_t bytes) {
  Pool* p = pool(location);
  if (p == nullptr) return Result::from_errno(EINVAL);
  uint64_t cur = p->used.load(std::memory_order_relaxed);
  do {
    if (bytes > p->total - cur) return Result::from_errno(ENOMEM);
  } while (!p->used.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
  listener_.usage_changed(reported_device(location), static_cast<int64_t>(bytes));
  return Result::success();
}

void CapacityLedger::uncharge(Location location, uint64_t bytes) {
  Pool* p = pool(location);
  if (p == nullptr) return;
  p->used.fetch_sub(bytes, std::memory_order_relaxed);
  listener_.usage_changed(reported_device(location), -static_cast<int64_t>(bytes));
}

uint64_t CapacityLedger::total(Location location) const {
  const Pool* p = pool(location);
  return p ? p->total : 0;
}

uint64_t CapacityLedger::used(Location location) const {
  const Pool* p = pool(location);
  return p ? p->used.load(std::memory_order_relaxed) : 0;
}

}  // namespace aclvmm::dev::emu
