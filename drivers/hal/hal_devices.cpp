// HalDevices: hal.md §2 (bring-up and teardown) and §3.10 (memory info, peers, bare tgid).
#include <cstring>

#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {

void UsageBook::add(uint64_t key, DeviceIndex device, uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    entries_[key] = Entry{device, bytes};
  }
  listener_.usage_changed(device, static_cast<int64_t>(bytes));
}

void UsageBook::remove(uint64_t key) {
  Entry e{kNoDevice, 0};
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    e = it->second;
    entries_.erase(it);
  }
  listener_.usage_changed(e.device, -static_cast<int64_t>(e.bytes));
}

std::vector<uint64_t> UsageBook::keys() const {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  out.reserve(entries_.size());
  for (const auto& [key, entry] : entries_) out.push_back(key);
  return out;
}

uint64_t UsageBook::size_of(uint64_t key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.bytes;
}

Result HalDevices::physical_id(DeviceIndex d, uint32_t* out) const {
  return driver_result(ctx_.fn->drvDeviceGetPhyIdByIndex(static_cast<uint32_t>(d), out));
}

Result HalDevices::properties(DeviceIndex device, DeviceProperties* out) const {
  if (!valid(device) || out == nullptr) return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  const HalFunctions& fn = *ctx_.fn;
  const auto d = static_cast<uint32_t>(device);
  DeviceProperties p;
  if (fn.halGetSocVersion != nullptr) {
    char name[64] = {0};
    if (fn.halGetSocVersion(d, name, sizeof name - 1) == DRV_ERROR_NONE) p.soc_name = name;
  }
  if (Result r = physical_id(device, &p.physical_id); !r.ok()) return r;
  // The driver reports capacity only for an opened device (halMemGetInfo); the core takes the
  // product's figure until then.
  p.memory_total = 0;
  int64_t value = 0;
  // INFO_TYPE_SERVER_ID: NOT_SUPPORT or 0x3FF mean "no super-pod" (hal.md §3.5, FABRIC).
  if (fn.halGetDeviceInfo(d, MODULE_TYPE_SYSTEM, INFO_TYPE_SERVER_ID, &value) == DRV_ERROR_NONE &&
      value != 0x3FF && value >= 0) {
    p.server_id = static_cast<int32_t>(value);
  }
  value = 0;
  if (fn.halGetDeviceInfo(d, MODULE_TYPE_SYSTEM, INFO_TYPE_SDID, &value) == DRV_ERROR_NONE) {
    p.super_pod_id = static_cast<uint32_t>(value);
  }
  *out = std::move(p);
  return Result::success();
}

Result HalDevices::open(DeviceIndex device) {
  if (!valid(device)) return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  // Beside the vendor runtime the device is the vendor's: a second open would fail with
  // REPEATED_INIT and a close would destroy the vendor's own memory (hal.md §6.2 rule 2).
  if (!ctx_.standalone) return Result::success();
  const HalFunctions& fn = *ctx_.fn;
  const auto d = static_cast<uint32_t>(device);
  if (fn.halDeviceOpen != nullptr) {
    halDevOpenIn in;
    halDevOpenOut out;
    std::memset(&in, 0, sizeof in);
    std::memset(&out, 0, sizeof out);
    if (Result r = driver_result(fn.halDeviceOpen(d, &in, &out)); !r.ok()) return r;
  } else {
    if (fn.drvMemDeviceOpen == nullptr || fn.drvDeviceOpen == nullptr) return missing();
    if (Result r = driver_result(static_cast<drvError_t>(fn.drvMemDeviceOpen(d, 0))); !r.ok()) {
      return r;
    }
    void* info = nullptr;
    if (Result r = driver_result(fn.drvDeviceOpen(&info, d)); !r.ok()) {
      if (fn.drvMemDeviceClose != nullptr) (void)fn.drvMemDeviceClose(d);
      return r;
    }
  }
  UINT32 ssid = 0;
  if (Result r = driver_result(fn.drvMemSmmuQuery(d, &ssid)); !r.ok()) {
    (void)close(device);
    return r;
  }
  // These queries switch the HAL process-wide: plain host memory is then reported as
  // DV_MEM_USER_MALLOC and host registrations are recorded (hal.md §2 step 3).
  if (fn.halSupportFeature != nullptr) {
    (void)fn.halSupportFeature(d, FEATURE_SVM_GET_USER_MALLOC_ATTR);
    (void)fn.halSupportFeature(d, FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR);
  }
  return Result::success();
}

Result HalDevices::close(DeviceIndex device) {
  if (!valid(device)) return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  if (!ctx_.standalone) return Result::success();
  const HalFunctions& fn = *ctx_.fn;
  const auto d = static_cast<uint32_t>(device);
  if (fn.halDeviceClose != nullptr) {
    halDevCloseIn in;
    std::memset(&in, 0, sizeof in);
    in.close_type = DEV_CLOSE_HOST_DEVICE;
    return driver_result(fn.halDeviceClose(d, &in));
  }
  if (fn.drvDeviceClose == nullptr || fn.drvMemDeviceClose == nullptr) return missing();
  const Result closed = driver_result(fn.drvDeviceClose(d));
  const Result memory = driver_result(static_cast<drvError_t>(fn.drvMemDeviceClose(d)));
  return !closed.ok() ? closed : memory;
}

Result HalDevices::memory_info(DeviceIndex device, MemoryKind kind, MemoryInfo* out) {
  if (!valid(device) || out == nullptr) return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  MemInfo info;
  std::memset(&info, 0, sizeof info);
  const Result r = driver_result(
      ctx_.fn->halMemGetInfo(static_cast<uint32_t>(device), static_cast<unsigned>(kind), &info));
  if (!r.ok()) return r;
  // The driver keeps its page pools apart and reports the normal one in total/free; the device
  // interface's total/free are the whole device (device_manager.h), as the runtime adds them for
  // ACL_HBM_MEM (hal.md §3.10).
  out->total = info.phy_info.total + info.phy_info.huge_total;
  out->free = info.phy_info.free + info.phy_info.huge_free;
  out->huge_total = info.phy_info.huge_total;
  out->huge_free = info.phy_info.huge_free;
  out->giant_total = info.phy_info.giant_total;
  out->giant_free = info.phy_info.giant_free;
  return Result::success();
}

Result HalDevices::enable_peer(DeviceIndex device, DeviceIndex peer) {
  if (!valid(device) || !valid(peer) || device == peer) {
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  }
  uint32_t phy = 0;
  if (Result r = physical_id(peer, &phy); !r.ok()) return r;
  return driver_result(ctx_.fn->halDeviceEnableP2P(static_cast<uint32_t>(device), phy, 0));
}

Result HalDevices::disable_peer(DeviceIndex device, DeviceIndex peer) {
  if (!valid(device) || !valid(peer) || device == peer) {
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  }
  uint32_t phy = 0;
  if (Result r = physical_id(peer, &phy); !r.ok()) return r;
  return driver_result(ctx_.fn->halDeviceDisableP2P(static_cast<uint32_t>(device), phy, 0));
}

bool HalDevices::can_access_peer(DeviceIndex device, DeviceIndex peer) const {
  if (!valid(device) || !valid(peer) || device == peer) return false;
  uint32_t phy = 0;
  if (!physical_id(peer, &phy).ok()) return false;
  int can = 0;
  return ctx_.fn->halDeviceCanAccessPeer(&can, static_cast<uint32_t>(device), phy) ==
             DRV_ERROR_NONE &&
         can != 0;
}

int32_t HalDevices::bare_tgid() const { return ctx_.fn->drvDeviceGetBareTgid(); }

}  // namespace aclvmm::dev::hal
