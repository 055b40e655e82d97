#include "drivers/fake/fake_machine.h"

#include <cerrno>

namespace aclvmm::dev::fake {
namespace {

DeviceIndex reported_device(Location location) {
  return location.kind == Location::Kind::kDevice ? location.id : kNoDevice;
}

}  // namespace

FakeMachine::FakeMachine(const FakeConfig& config, BackendListener& listener)
    : config_(config), listener_(listener) {}

Result FakeMachine::violation(const char* what) {
  ++violations_;
  last_violation_ = what;
  return Result::from_errno(EINVAL);
}

uint64_t FakeMachine::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

std::string FakeMachine::last_violation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_violation_;
}

const uint64_t* FakeMachine::used_slot(Location location) const {
  if (location.kind == Location::Kind::kDevice) {
    return valid_device(location.id) ? &device_used_[location.id] : nullptr;
  }
  return &host_used_;
}

uint64_t* FakeMachine::used_slot(Location location) {
  return const_cast<uint64_t*>(static_cast<const FakeMachine*>(this)->used_slot(location));
}

uint64_t FakeMachine::total(Location location) const {
  if (location.kind == Location::Kind::kDevice) {
    return valid_device(location.id) ? config_.device_memory : 0;
  }
  return config_.host_memory;
}

uint64_t FakeMachine::used(Location location) const {
  const uint64_t* used = used_slot(location);
  return used ? *used : 0;
}

Result FakeMachine::charge(Location location, uint64_t bytes) {
  uint64_t* used = used_slot(location);
  if (used == nullptr) return Result::from_errno(EINVAL);
  if (bytes > total(location) - *used) return Result::from_errno(ENOMEM);
  *used += bytes;
  listener_.usage_changed(reported_device(location), static_cast<int64_t>(bytes));
  return Result::success();
}

void FakeMachine::uncharge(Location location, uint64_t bytes) {
  uint64_t* used = used_slot(location);
  if (used == nullptr) return;
  *used -= bytes;
  listener_.usage_changed(reported_device(location), -static_cast<int64_t>(bytes));
}

}  // namespace aclvmm::dev::fake
