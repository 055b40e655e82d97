// Map routes (links) and peer mapping.
#include "api/api_common.h"
#include "core/runtime.h"
#include "core/vmm.h"

using namespace aclvmm;

namespace {

aclError gate(const char* api, Feature f) {
  const Product& p = Runtime::get().config().product;
  if (!p.supports(f)) return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, std::string(api) + " is not supported on " + p.soc);
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMemMapSetLink(aclrtDrvMemHandle handle, aclrtMemLinkType adviceLink) {
  const char* api = "aclrtMemMapSetLink";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  const uint32_t link = static_cast<uint32_t>(api::raw(adviceLink));
  if (link > 3) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "adviceLink must be 0..3");
  if (aclError e = gate(api, Feature::kSetLink)) return e;
  Runtime& rt = Runtime::get();
  auto& table = rt.physical();
  std::lock_guard<std::mutex> lock(table.mutex());
  auto phys = table.find_locked(api::token(handle));
  if (!phys) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "the handle is not a live physical memory handle");
  if (!rt.config().product.supports_link(link)) {
    return api::fail(api, ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED,
                     "link type " + std::to_string(link) + " is not offered by " + rt.config().product.soc);
  }
  phys->link = link;
  return ACL_SUCCESS;
}

aclError aclrtMemMapSelectedLink(void* virPtrDst, size_t size, void* virPtrSrc, uint32_t linkIdx) {
  const char* api = "aclrtMemMapSelectedLink";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, virPtrDst);
  ACLVMM_REQUIRE_NOT_NULL(api, virPtrSrc);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (linkIdx > 1) return api::invalid(api, "linkIdx must be ACL_RT_MEM_LINK_IDX_0 or _1");
  if (aclError e = gate(api, Feature::kSelectedLink)) return e;
  const uint64_t dst = api::addr(virPtrDst), src = api::addr(virPtrSrc);
  auto first = vmm::address_range(src);
  if (!first.ok() || first->base != src) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "virPtrSrc must be the start of a mapping");
  }
  // Map each block of the source again at the same offset of the destination; on failure undo
  // what was mapped so the call leaves nothing behind.
  uint64_t off = 0;
  Status st;
  while (off < size && st.ok()) {
    auto range = vmm::address_range(src + off);
    if (!range.ok()) {
      st = range.status();
      break;
    }
    auto h = vmm::retain(src + off);
    if (!h.ok()) {
      st = h.status();
      break;
    }
    st = vmm::map(dst + off, range->size, 0, *h, false);
    (void)vmm::free_physical(*h);
    if (st.ok()) off += range->size;
  }
  if (!st.ok()) {
    for (uint64_t undo = 0; undo < off;) {
      auto range = vmm::address_range(dst + undo);
      (void)vmm::unmap(dst + undo);
      undo += range.ok() ? range->size : off;
    }
  }
  return api::finish(api, st);
}

aclError aclrtMemP2PMap(void* devPtr, size_t size, int32_t dstDevId, uint64_t flags) {
  const char* api = "aclrtMemP2PMap";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  auto dev = Runtime::get().physical_device(dstDevId);
  if (!dev.ok()) return api::finish(api, dev.status());
  if (aclError e = gate(api, Feature::kP2PMap)) return e;
  auto info = vmm::pointer_info(api::addr(devPtr));
  if (!info.ok() || info->kind != PointerInfo::kDevice) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "devPtr is not device memory");
  }
  // The peer's page tables gain the range: device memory mappings there become read-write for
  // the peer, and an aclrtMalloc block's device opens peer access with it.
  return api::finish(api, vmm::p2p_map(api::addr(devPtr), size, *dev));
}

}  // extern "C"
