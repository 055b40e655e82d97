// Devices (hal.md §2, §3.10, §5 "host facts"): the stub-test answers, id conversions, opening
// and closing (halDeviceOpen, or drvMemDeviceOpen + drvDeviceOpen, and halMemAgentOpen), feature
// queries, device information, P2P, memory information, halMemCtl and halMapErrorCode.
//
// Each device has two "opened" bits: its memory agent (the SVM part: halDeviceOpen,
// drvMemDeviceOpen, halMemAgentOpen) and the device itself (halDeviceOpen, drvDeviceOpen). Memory
// calls need some memory agent open (INVALID_HANDLE before, and again once every agent is
// closed, §7.1 #7). Closing a memory agent destroys the device's halMemAlloc blocks and its VMM
// records (recycle_device). Physical ids are the logical ones; the host id 65 converts to itself
// so that a V1 import of a host-memory token, which asks for it (§3.5 step 2, §7), succeeds.
#include <cstring>

#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

constexpr uint32_t kDriverIds = 1124;  // the id range of 910B host builds (§2)
constexpr int kApiVersion = 0x072418;  // 7.36.24, every public snapshot (§1.2)

// The memory agent of d (p.mu held): set up the process's SVM state at the first one. v2 keeps
// no count: opening again re-runs the set-up and succeeds.
drvError_t open_memory(Process& p, uint32_t d) {
  if (p.backend() == nullptr) return DRV_ERROR_INVALID_HANDLE;  // the set-up failed (§5)
  if (!p.mem_open[d]) {
    p.mem_open[d] = true;
    p.open_count.fetch_add(1, std::memory_order_release);
  }
  return DRV_ERROR_NONE;
}

void close_memory(Process& p, uint32_t d) {
  if (!p.mem_open[d]) return;
  recycle_device(p, static_cast<int32_t>(d));
  p.mem_open[d] = false;
  p.open_count.fetch_sub(1, std::memory_order_release);
}

drvError_t device_open(uint32_t d, halDevOpenOut* out) {
  if (out == nullptr || d >= kDriverIds) return DRV_ERROR_PARA_ERROR;
  if (!valid_device(d)) return DRV_ERROR_INVALID_DEVICE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (p.mem_open[d] || p.dev_open[d]) return DRV_ERROR_REPEATED_INIT;
  if (drvError_t e = open_memory(p, d)) return e;
  p.dev_open[d] = true;
  return DRV_ERROR_NONE;
}

drvError_t device_close(uint32_t d, const halDevCloseIn* in) {
  if (in == nullptr || d >= kDriverIds) return DRV_ERROR_PARA_ERROR;
  if (!valid_device(d)) return DRV_ERROR_INVALID_DEVICE;
  // No device replacement on an emulated host (§2).
  if (in->close_type == DEV_CLOSE_ONLY_HOST) return DRV_ERROR_NOT_SUPPORT;
  if (in->close_type > DEV_CLOSE_HOST_USER) return DRV_ERROR_PARA_ERROR;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.mem_open[d] && !p.dev_open[d]) return DRV_ERROR_UNINIT;
  p.dev_open[d] = false;
  close_memory(p, d);
  return DRV_ERROR_NONE;
}

bool support_feature(uint32_t dev, uint32_t feature) {
  if (!valid_device(dev)) return false;
  Process& p = Process::get();
  switch (feature) {
    case FEATURE_SVM_GET_USER_MALLOC_ATTR:
      // The query itself switches the process's HAL: plain host memory reads USER_MALLOC.
      p.user_malloc_attr.store(true, std::memory_order_relaxed);
      return true;
    case FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR:
      return true;  // host-register records: nothing registers host memory here
    case FEATURE_SVM_VMM_NORMAL_GRANULARITY: {  // HOST_NUMA physical memory
      dev::DeviceBackend* b = p.backend();
      return b != nullptr && b->capabilities().host_numa;
    }
    default:
      return false;
  }
}

drvError_t device_info(uint32_t dev, int32_t module, int32_t info, int64_t* value) {
  if (value == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
  if (module != MODULE_TYPE_SYSTEM) return DRV_ERROR_NOT_SUPPORT;
  const Config& c = config();
  switch (info) {
    case INFO_TYPE_SDID:
      *value = 0;  // one emulated super-pod per host
      return DRV_ERROR_NONE;
    case INFO_TYPE_SERVER_ID:
      if (!super_pod(c.family)) return DRV_ERROR_NOT_SUPPORT;
      *value = c.server_id;
      return DRV_ERROR_NONE;
    default:
      return DRV_ERROR_NOT_SUPPORT;
  }
}

drvError_t soc_version(uint32_t dev, char* name, uint32_t len) {
  if (name == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
  const std::string& soc = config().soc;
  if (len < soc.size() + 1) return DRV_ERROR_INVALID_VALUE;
  std::memcpy(name, soc.c_str(), soc.size() + 1);
  return DRV_ERROR_NONE;
}

drvError_t mem_ctl(int type, void* in, size_t in_size, void* out, size_t* out_size) {
  if (type != CTRL_TYPE_SUPPORT_FEATURE) return DRV_ERROR_NOT_SUPPORT;
  if (in == nullptr || in_size < sizeof(supportFeaturePara)) return DRV_ERROR_INVALID_VALUE;
  supportFeaturePara para;
  std::memcpy(&para, in, sizeof para);
  // Only the giant-page query is answered; the runtime looks at the result, not the output.
  if (para.support_feature != CTRL_SUPPORT_GIANT_PAGE_MASK || !giant_pages(config().family)) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  if (out != nullptr && out_size != nullptr && *out_size >= sizeof(uint64_t)) {
    const uint64_t mask = CTRL_SUPPORT_GIANT_PAGE_MASK;
    std::memcpy(out, &mask, sizeof mask);
    *out_size = sizeof mask;
  }
  return DRV_ERROR_NONE;
}

drvError_t p2p(uint32_t dev, uint32_t peer_phy, uint32_t flags, bool enable) {
  if (flags != 0) return DRV_ERROR_INVALID_VALUE;
  if (dev == kHostId || peer_phy == kHostId) return DRV_ERROR_NONE;  // the host reaches everything
  uint32_t peer = 0;
  if (!valid_device(dev) || !logical_of(peer_phy, &peer)) return DRV_ERROR_INVALID_DEVICE;
  if (dev == peer) return DRV_ERROR_INVALID_VALUE;
  dev::DeviceBackend* b = Process::get().backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  dev::DeviceManager& m = b->devices();
  const auto d = static_cast<int32_t>(dev), q = static_cast<int32_t>(peer);
  return from_result(enable ? m.enable_peer(d, q) : m.disable_peer(d, q));
}

drvError_t mem_info(DVdevice dev, unsigned type, MemInfo* info) {
  if (dev >= kMaxDeviceIds || info == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (type < MEM_INFO_TYPE_DDR_SIZE || type > MEM_INFO_TYPE_HBM_P2P_SIZE) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  Process* p = Process::peek();
  if (p == nullptr || !p->svm_open()) return DRV_ERROR_INVALID_HANDLE;
  if (!valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
  dev::DeviceBackend* b = p->backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  dev::MemoryInfo m;
  if (dev::Result r = b->devices().memory_info(static_cast<int32_t>(dev),
                                               static_cast<dev::MemoryKind>(type), &m);
      !r.ok()) {
    return from_result(r);
  }
  std::memset(info, 0, sizeof *info);
  // The emulator keeps one pool and reports it whole as each page size. A driver keeps its pools
  // apart and the runtime adds the normal and the huge one for ACL_HBM_MEM (hal.md §3.10), so
  // the bytes go to the huge pool alone, where every ACL request lands (§3.1: normal requests
  // are promoted to 2 MiB pages); the normal pool is empty. 1 GiB pages come out of the same
  // bytes, as on the emulator.
  info->phy_info = MemPhyInfo{0, 0, m.huge_total, m.huge_free, m.giant_total, m.giant_free};
  return DRV_ERROR_NONE;
}

// The memory agent alone (drvMemDeviceOpen, halMemAgentOpen) and its close.
drvError_t agent_open(uint32_t d) {
  if (!valid_device(d)) return DRV_ERROR_INVALID_DEVICE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  return open_memory(p, d);
}

drvError_t agent_close(uint32_t d) {
  if (!valid_device(d)) return DRV_ERROR_INVALID_DEVICE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.mem_open[d]) return DRV_ERROR_UNINIT;
  close_memory(p, d);
  return DRV_ERROR_NONE;
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::raw;
using aclvmm::fakehal::Fn;
namespace fh = aclvmm::fakehal;

FAKE_HAL_API drvError_t halGetAPIVersion(int* version) {
  return entry(Fn::halGetAPIVersion, [&] {
    if (version == nullptr) return DRV_ERROR_INVALID_VALUE;
    *version = fh::kApiVersion;
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API drvError_t drvGetDevNum(uint32_t* count) {
  return entry(Fn::drvGetDevNum, [&] {
    if (count == nullptr) return DRV_ERROR_INVALID_VALUE;
    *count = static_cast<uint32_t>(fh::config().device_count);
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API drvError_t drvDeviceGetPhyIdByIndex(uint32_t logicId, uint32_t* phyId) {
  return entry(Fn::drvDeviceGetPhyIdByIndex, [&] {
    if (phyId == nullptr) return DRV_ERROR_INVALID_VALUE;
    if (logicId != fh::kHostId && !fh::valid_device(logicId)) return DRV_ERROR_INVALID_DEVICE;
    *phyId = fh::physical_of(logicId);
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API drvError_t drvDeviceGetIndexByPhyId(uint32_t phyId, uint32_t* logicId) {
  return entry(Fn::drvDeviceGetIndexByPhyId, [&] {
    if (logicId == nullptr) return DRV_ERROR_INVALID_VALUE;
    return fh::logical_of(phyId, logicId) ? DRV_ERROR_NONE : DRV_ERROR_INVALID_DEVICE;
  });
}

FAKE_HAL_API drvError_t halGetHostID(uint32_t* hostId) {
  return entry(Fn::halGetHostID, [&] {
    if (hostId == nullptr) return DRV_ERROR_INVALID_VALUE;
    *hostId = fh::kHostId;
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API drvError_t halDeviceOpen(uint32_t dev, halDevOpenIn* in, halDevOpenOut* out) {
  (void)in;  // all zero from the runtime; nothing in it is read
  return entry(Fn::halDeviceOpen, [&] { return fh::device_open(dev, out); });
}

FAKE_HAL_API drvError_t halDeviceClose(uint32_t dev, halDevCloseIn* in) {
  return entry(Fn::halDeviceClose, [&] { return fh::device_close(dev, in); });
}

FAKE_HAL_API drvError_t drvDeviceOpen(void** info, uint32_t dev) {
  return entry(Fn::drvDeviceOpen, [&] {
    static char device_info[fh::kMaxDeviceIds];  // what *info points to: opaque to callers
    if (info == nullptr) return DRV_ERROR_PARA_ERROR;
    if (!fh::valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
    fh::Process& p = fh::Process::get();
    std::lock_guard lock(p.mu);
    if (p.dev_open[dev]) return DRV_ERROR_REPEATED_INIT;
    p.dev_open[dev] = true;
    *info = &device_info[dev];
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API drvError_t drvDeviceClose(uint32_t dev) {
  return entry(Fn::drvDeviceClose, [&] {
    if (!fh::valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
    fh::Process& p = fh::Process::get();
    std::lock_guard lock(p.mu);
    if (!p.dev_open[dev]) return DRV_ERROR_UNINIT;
    p.dev_open[dev] = false;
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API int drvMemDeviceOpen(uint32_t dev, int unusedFd) {
  (void)unusedFd;
  return entry(Fn::drvMemDeviceOpen, [&] { return fh::agent_open(dev); });
}

FAKE_HAL_API int drvMemDeviceClose(uint32_t dev) {
  return entry(Fn::drvMemDeviceClose, [&] { return fh::agent_close(dev); });
}

FAKE_HAL_API drvError_t halMemAgentOpen(uint32_t dev, uint32_t agentKind) {
  return entry(Fn::halMemAgentOpen, [&] {
    if (agentKind > SVM_AGENT_DEVICE) return DRV_ERROR_NOT_SUPPORT;
    if (dev >= 66) return DRV_ERROR_INVALID_VALUE;
    return fh::agent_open(dev);
  });
}

FAKE_HAL_API drvError_t halMemAgentClose(uint32_t dev, uint32_t agentKind) {
  return entry(Fn::halMemAgentClose, [&] {
    if (agentKind > SVM_AGENT_DEVICE) return DRV_ERROR_NOT_SUPPORT;
    if (dev >= 66) return DRV_ERROR_INVALID_VALUE;
    return fh::agent_close(dev);
  });
}

FAKE_HAL_API DVresult drvMemSmmuQuery(DVdevice dev, UINT32* ssid) {
  return entry(Fn::drvMemSmmuQuery, [&] {
    if (ssid == nullptr) return DRV_ERROR_INVALID_VALUE;
    if (!fh::valid_device(dev)) return DRV_ERROR_INVALID_DEVICE;
    *ssid = 0;  // one address space per process: nothing to tell apart
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API bool halSupportFeature(uint32_t dev, drvFeature_t feature) {
  if (fh::injected(Fn::halSupportFeature) != 0) return false;
  try {
    return fh::support_feature(dev, raw(feature));
  } catch (...) {
    return false;
  }
}

FAKE_HAL_API drvError_t halGetDeviceInfo(uint32_t dev, int32_t moduleType, int32_t infoType,
                                         int64_t* value) {
  return entry(Fn::halGetDeviceInfo,
               [&] { return fh::device_info(dev, moduleType, infoType, value); });
}

FAKE_HAL_API drvError_t halGetSocVersion(uint32_t dev, char* name, uint32_t nameLen) {
  return entry(Fn::halGetSocVersion, [&] { return fh::soc_version(dev, name, nameLen); });
}

FAKE_HAL_API drvError_t halMemCtl(int ctlType, void* in, size_t inSize, void* out,
                                  size_t* outSize) {
  return entry(Fn::halMemCtl, [&] { return fh::mem_ctl(ctlType, in, inSize, out, outSize); });
}

FAKE_HAL_API drvError_t halDeviceEnableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
  return entry(Fn::halDeviceEnableP2P, [&] { return fh::p2p(dev, peerPhyId, flags, true); });
}

FAKE_HAL_API drvError_t halDeviceDisableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
  return entry(Fn::halDeviceDisableP2P, [&] { return fh::p2p(dev, peerPhyId, flags, false); });
}

FAKE_HAL_API drvError_t halDeviceCanAccessPeer(int* canAccess, uint32_t dev, uint32_t peerPhyId) {
  return entry(Fn::halDeviceCanAccessPeer, [&] {
    if (canAccess == nullptr) return DRV_ERROR_INVALID_VALUE;
    uint32_t peer = 0;
    if (!fh::valid_device(dev) || !fh::logical_of(peerPhyId, &peer))
      return DRV_ERROR_INVALID_DEVICE;
    *canAccess = dev != peer ? 1 : 0;  // every emulated device reaches every other (HCCS)
    return DRV_ERROR_NONE;
  });
}

FAKE_HAL_API int32_t halMapErrorCode(drvError_t code) {
  // The message code EL<nnnn> the runtime prints: the error's own number (0 <= n < 9999).
  const uint32_t value = raw(code);
  return value < 9999 ? static_cast<int32_t>(value) : 9998;
}

FAKE_HAL_API DVresult halMemGetInfo(DVdevice dev, unsigned int type, struct MemInfo* info) {
  return entry(Fn::halMemGetInfo, [&] { return fh::mem_info(dev, type, info); });
}
