// Devices: selection, reset, count, synchronisation, peer access, memory info, identity.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/device_ids.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

// The six id conversions (runtime-extra.md §4) share their checks: the output pointer, then a
// negative id, then the conversion against one configuration snapshot. No context is needed.
aclError convert_id(const char* api, int32_t in, int32_t* out,
                    StatusOr<int> (*convert)(const Config&, int)) {
  ACLVMM_REQUIRE_NOT_NULL(api, out);
  if (in < 0) {
    return api::finish(api, Error(ACL_ERROR_RT_PARAM_INVALID,
                                  "device id " + std::to_string(in) + " is negative"));
  }
  StatusOr<int> converted = convert(Runtime::get().config(), in);
  if (!converted.ok()) return api::finish(api, converted.status());
  *out = *converted;
  return ACL_SUCCESS;
}

}  // namespace

namespace {

// The process id in the outermost PID namespace /proc can see (the first NSpid entry), which is
// what the vendor driver compares against the pid whitelist; plain getpid() where unavailable.
int32_t bare_tgid() {
  static pid_t cached_for = -1;
  static int32_t cached = -1;
  pid_t self = getpid();
  if (cached_for == self) return cached;
  int32_t tgid = self;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) == 0) {
      long v = std::strtol(line.c_str() + 6, nullptr, 10);
      if (v > 0) tgid = static_cast<int32_t>(v);
      break;
    }
  }
  cached = tgid;
  cached_for = self;
  return tgid;
}

uint64_t fnv1a(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

extern "C" {

aclError aclrtSetDevice(int32_t deviceId) {
  ACLVMM_API_ENTER("aclrtSetDevice");
  Runtime& rt = Runtime::get();
  if (rt.beside_vendor()) {
    // The vendor opens the device (hal.md §6.2 rule 2); aclvmm counts the reference.
    ACLVMM_VENDOR_FUNCTION(aclrtSetDevice);
    const aclError code =
        api::call_vendor<decltype(&aclrtSetDevice)>(api, aclvmm_vendor_, deviceId);
    return code != ACL_SUCCESS ? code : api::finish(api, rt.forwarded_set_device(deviceId));
  }
  return api::finish(api, rt.set_device(deviceId));
  ACLVMM_API_EXIT();
}

aclError aclrtResetDevice(int32_t deviceId) {
  ACLVMM_API_ENTER("aclrtResetDevice");
  Runtime& rt = Runtime::get();
  if (rt.beside_vendor()) {
    ACLVMM_VENDOR_FUNCTION(aclrtResetDevice);
    const aclError code =
        api::call_vendor<decltype(&aclrtResetDevice)>(api, aclvmm_vendor_, deviceId);
    return code != ACL_SUCCESS ? code
                               : api::finish(api, rt.forwarded_reset_device(deviceId, false));
  }
  return api::finish(api, rt.reset_device(deviceId, false));
  ACLVMM_API_EXIT();
}

aclError aclrtResetDeviceForce(int32_t deviceId) {
  ACLVMM_API_ENTER("aclrtResetDeviceForce");
  Runtime& rt = Runtime::get();
  if (rt.beside_vendor()) {
    ACLVMM_VENDOR_FUNCTION(aclrtResetDeviceForce);
    const aclError code =
        api::call_vendor<decltype(&aclrtResetDeviceForce)>(api, aclvmm_vendor_, deviceId);
    return code != ACL_SUCCESS ? code : api::finish(api, rt.forwarded_reset_device(deviceId, true));
  }
  return api::finish(api, rt.reset_device(deviceId, true));
  ACLVMM_API_EXIT();
}

aclError aclrtGetDevice(int32_t* deviceId) {
  ACLVMM_API_ENTER("aclrtGetDevice");
  ACLVMM_FORWARD(aclrtGetDevice, deviceId);
  ACLVMM_REQUIRE_NOT_NULL(api, deviceId);
  Runtime& rt = Runtime::get();
  auto dev = rt.current_device();
  if (!dev.ok()) return api::finish(api, dev.status());
  *deviceId = rt.user_device(*dev);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  ACLVMM_API_ENTER("aclrtGetDeviceCount");
  ACLVMM_FORWARD(aclrtGetDeviceCount, count);
  ACLVMM_REQUIRE_NOT_NULL(api, count);
  Runtime& rt = Runtime::get();
  if (!rt.config().visible_error.empty()) {
    return api::fail(api, ACL_ERROR_RT_INVALID_DEVICEID, rt.config().visible_error);
  }
  *count = static_cast<uint32_t>(rt.visible_count());
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtSynchronizeDevice(void) {
  ACLVMM_API_ENTER("aclrtSynchronizeDevice");
  ACLVMM_FORWARD(aclrtSynchronizeDevice);
  return api::finish(api, Runtime::get().synchronize_device());
  ACLVMM_API_EXIT();
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  ACLVMM_API_ENTER("aclrtSynchronizeDeviceWithTimeout");
  ACLVMM_FORWARD(aclrtSynchronizeDeviceWithTimeout, timeout);
  // The vendor's ACL layer answers this one with 107000 itself, not 100000.
  if (timeout < -1) {
    return api::finish(api, Error(ACL_ERROR_RT_PARAM_INVALID,
                                  "the timeout must be -1 (none) or a positive number of "
                                  "milliseconds, not " + std::to_string(timeout)));
  }
  return api::finish(api, Runtime::get().synchronize_device(timeout));
  ACLVMM_API_EXIT();
}

aclError aclrtDeviceCanAccessPeer(int32_t* canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
  ACLVMM_API_ENTER("aclrtDeviceCanAccessPeer");
  ACLVMM_FORWARD(aclrtDeviceCanAccessPeer, canAccessPeer, deviceId, peerDeviceId);
  ACLVMM_REQUIRE_NOT_NULL(api, canAccessPeer);
  if (deviceId == peerDeviceId) return api::invalid(api, "deviceId and peerDeviceId must differ");
  Runtime& rt = Runtime::get();
  auto a = rt.physical_device(deviceId);
  if (!a.ok()) return api::finish(api, a.status());
  auto b = rt.physical_device(peerDeviceId);
  if (!b.ok()) return api::finish(api, b.status());
  *canAccessPeer = 1;  // emulated devices share one HCCS fabric
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

static aclError peer_access(const char* api, int32_t peerDeviceId, bool enable) {
  Runtime& rt = Runtime::get();
  auto cur = rt.current_device();
  if (!cur.ok()) return api::finish(api, cur.status());
  if (rt.user_device(*cur) == peerDeviceId) {
    return api::invalid(api, "peerDeviceId " + std::to_string(peerDeviceId) + " is the current device");
  }
  auto peer = rt.physical_device(peerDeviceId);
  if (!peer.ok()) return api::finish(api, peer.status());
  return api::finish(api, rt.enable_peer(*peer, enable));
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  ACLVMM_API_ENTER("aclrtDeviceEnablePeerAccess");
  if (Runtime::get().beside_vendor()) {
    // The vendor enables the link; aclvmm's copy checks learn of it (peer_access below).
    ACLVMM_VENDOR_FUNCTION(aclrtDeviceEnablePeerAccess);
    const aclError code = api::call_vendor<decltype(&aclrtDeviceEnablePeerAccess)>(
        api, aclvmm_vendor_, peerDeviceId, flags);
    if (code != ACL_SUCCESS) return code;
  }
  if (flags != 0) {
    return api::fail(api, ACL_ERROR_FEATURE_UNSUPPORTED, "flags must be 0, got " + std::to_string(flags));
  }
  return peer_access(api, peerDeviceId, true);
  ACLVMM_API_EXIT();
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  ACLVMM_API_ENTER("aclrtDeviceDisablePeerAccess");
  if (Runtime::get().beside_vendor()) {
    ACLVMM_VENDOR_FUNCTION(aclrtDeviceDisablePeerAccess);
    const aclError code = api::call_vendor<decltype(&aclrtDeviceDisablePeerAccess)>(
        api, aclvmm_vendor_, peerDeviceId);
    if (code != ACL_SUCCESS) return code;
  }
  return peer_access(api, peerDeviceId, false);
  ACLVMM_API_EXIT();
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  ACLVMM_API_ENTER("aclrtGetMemInfo");
  ACLVMM_REQUIRE_NOT_NULL(api, free);
  ACLVMM_REQUIRE_NOT_NULL(api, total);
  Runtime& rt = Runtime::get();
  const int kind = api::raw(attr);
  if (kind < ACL_DDR_MEM || kind > ACL_MEM_P2P_HUGE1G) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "attr " + std::to_string(kind) + " is not an aclrtMemAttr");
  }
  auto dev = rt.current_device();
  if (!dev.ok()) return api::finish(api, dev.status());
  Status asked;
  if (rt.driver_memory_info(*dev, kind, free, total, &asked)) return api::finish(api, asked);
  switch (kind) {
    case ACL_DDR_MEM: case ACL_DDR_MEM_HUGE: case ACL_DDR_MEM_NORMAL:
    case ACL_DDR_MEM_P2P_HUGE: case ACL_DDR_MEM_P2P_NORMAL:
    {
      dev::HostServices& host = rt.device()->host();
      *total = host.memory_total();
      *free = host.memory_free();
      return ACL_SUCCESS;
    }
    default: {
      uint64_t pool_total = 0, pool_free = 0;
      if (!rt.pool_space(*dev, &pool_total, &pool_free)) {
        return api::fail(api, ACL_ERROR_RT_CONTEXT_NULL, "the runtime has no device pools");
      }
      *total = pool_total;
      *free = pool_free;
      return ACL_SUCCESS;
    }
  }
  ACLVMM_API_EXIT();
}

aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid* uuid) {
  ACLVMM_API_ENTER("aclrtDeviceGetUuid");
  ACLVMM_FORWARD(aclrtDeviceGetUuid, deviceId, uuid);
  ACLVMM_REQUIRE_NOT_NULL(api, uuid);
  auto dev = Runtime::get().physical_device(deviceId);
  if (!dev.ok()) return api::finish(api, dev.status());
  // Stable for a device of this host, different between devices and hosts.
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string key = std::string(host) + "/aclvmm-npu/" + std::to_string(*dev);
  uint64_t a = fnv1a(key, 0), b = fnv1a(key, 0x9e3779b97f4a7c15ull);
  std::memcpy(uuid->bytes, &a, 8);
  std::memcpy(uuid->bytes + 8, &b, 8);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtDeviceGetBareTgid(int32_t* pid) {
  ACLVMM_API_GUARD("aclrtDeviceGetBareTgid");
  ACLVMM_REQUIRE_NOT_NULL(api, pid);
  if (!Runtime::get().driver_bare_tgid(pid)) *pid = bare_tgid();
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t* const logicDevId) {
  ACLVMM_API_ENTER("aclrtGetLogicDevIdByUserDevId");
  ACLVMM_FORWARD(aclrtGetLogicDevIdByUserDevId, userDevid, logicDevId);
  return convert_id(api, userDevid, logicDevId, &device_ids::logical_from_user);
  ACLVMM_API_EXIT();
}

aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t* const userDevid) {
  ACLVMM_API_ENTER("aclrtGetUserDevIdByLogicDevId");
  ACLVMM_FORWARD(aclrtGetUserDevIdByLogicDevId, logicDevId, userDevid);
  return convert_id(api, logicDevId, userDevid, &device_ids::user_from_logical);
  ACLVMM_API_EXIT();
}

// The vendor's documented quirk: the "logic <-> phy" pair takes and returns user ids.
aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t* const phyDevId) {
  ACLVMM_API_ENTER("aclrtGetPhyDevIdByLogicDevId");
  ACLVMM_FORWARD(aclrtGetPhyDevIdByLogicDevId, logicDevId, phyDevId);
  return convert_id(api, logicDevId, phyDevId, &device_ids::physical_from_user);
  ACLVMM_API_EXIT();
}

aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t* const logicDevId) {
  ACLVMM_API_ENTER("aclrtGetLogicDevIdByPhyDevId");
  ACLVMM_FORWARD(aclrtGetLogicDevIdByPhyDevId, phyDevId, logicDevId);
  return convert_id(api, phyDevId, logicDevId, &device_ids::user_from_physical);
  ACLVMM_API_EXIT();
}

aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t* const phyDevId) {
  ACLVMM_API_ENTER("aclrtGetPhyDevIdByUserDevId");
  ACLVMM_FORWARD(aclrtGetPhyDevIdByUserDevId, userDevId, phyDevId);
  return convert_id(api, userDevId, phyDevId, &device_ids::physical_from_user);
  ACLVMM_API_EXIT();
}

aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t* const userDevId) {
  ACLVMM_API_ENTER("aclrtGetUserDevIdByPhyDevId");
  ACLVMM_FORWARD(aclrtGetUserDevIdByPhyDevId, phyDevId, userDevId);
  return convert_id(api, phyDevId, userDevId, &device_ids::user_from_physical);
  ACLVMM_API_EXIT();
}

}  // extern "C"
