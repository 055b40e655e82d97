// Map routes (links) and peer mapping.
#include <algorithm>
#include <mutex>
#include <optional>
#include <vector>

#include "api/api_common.h"
#include "api/handles.h"
#include "observability/stats.h"
#include "runtime/runtime.h"
#include "vmm/vmm.h"

using namespace aclvmm;

namespace {

aclError gate(const char* api, Feature f) {
  const Product& p = Runtime::get().config().product;
  if (!p.supports(f)) return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, std::string(api) + " is not supported on " + p.soc);
  return ACL_SUCCESS;
}

// Swaps the handle's route; returns the one it had, or nullopt when the handle is gone.
std::optional<uint32_t> swap_route(uint64_t handle, uint32_t link) {
  auto& table = Runtime::get().physical();
  std::lock_guard lock(table.mutex());
  auto phys = table.find_locked(handle);
  if (!phys) return std::nullopt;
  const uint32_t before = phys->link;
  phys->link = link;
  return before;
}

// One block of aclrtMemMapSelectedLink, as the vendor runtime does it: an extra reference on the
// source block's handle, its route set to the selected link for this one mapping, then the
// route and the reference restored.
Status map_block(uint64_t dst, uint64_t size, uint64_t src, uint32_t link) {
  vmm::Vmm& vm = Runtime::get().vmm();
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t handle, vm.retain(src));
  const std::optional<uint32_t> route = swap_route(handle, link);
  Status st = vm.map(dst, size, 0, handle, false);
  if (route) (void)swap_route(handle, *route);
  (void)vm.free_physical(handle);
  return st;
}

}  // namespace

extern "C" {

aclError aclrtMemMapSetLink(aclrtDrvMemHandle handle, aclrtMemLinkType adviceLink) {
  ACLVMM_API_ENTER("aclrtMemMapSetLink");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  const uint32_t link = static_cast<uint32_t>(api::raw(adviceLink));
  if (link > 3) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "adviceLink must be 0..3");
  if (aclError e = gate(api, Feature::kSetLink)) return e;
  Runtime& rt = Runtime::get();
  auto& table = rt.physical();
  std::lock_guard lock(table.mutex());
  auto phys = table.find_locked(api::handle_in(handle));
  if (!phys) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "the handle is not a live physical memory handle");
  if (!rt.config().product.supports_link(link)) {
    return api::fail(api, ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED,
                     "link type " + std::to_string(link) + " is not offered by " + rt.config().product.soc);
  }
  phys->link = link;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemMapSelectedLink(void* virPtrDst, size_t size, void* virPtrSrc, uint32_t linkIdx) {
  ACLVMM_API_ENTER("aclrtMemMapSelectedLink");
  ACLVMM_REQUIRE_NOT_NULL(api, virPtrDst);
  ACLVMM_REQUIRE_NOT_NULL(api, virPtrSrc);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (linkIdx > 1) return api::invalid(api, "linkIdx must be ACL_RT_MEM_LINK_IDX_0 or _1");
  if (aclError e = gate(api, Feature::kSelectedLink)) return e;
  const uint64_t dst = api::addr(virPtrDst), src = api::addr(virPtrSrc);
  vmm::Vmm& vm = Runtime::get().vmm();
  auto first = vm.address_range(src);
  if (!first.ok() || first->base != src) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "virPtrSrc must be the start of a mapping");
  }
  std::vector<uint64_t> made;  // destination blocks mapped so far
  Status st;
  for (uint64_t off = 0; off < size;) {
    auto block = vm.address_range(src + off);
    if (!block.ok()) {
      st = block.status();
      break;
    }
    st = map_block(dst + off, std::min<uint64_t>(block->size, size - off), src + off, linkIdx);
    if (!st.ok()) break;
    made.push_back(dst + off);
    off += block->size;
  }
  if (!st.ok()) {
    // Nothing of a failed call stays behind: neither the mappings nor their link counts.
    for (uint64_t va : made) {
      if (vm.unmap(va).ok()) uncount_link_mapping(linkIdx);
    }
  }
  return api::finish(api, st);
  ACLVMM_API_EXIT();
}

aclError aclrtMemP2PMap(void* devPtr, size_t size, int32_t dstDevId, uint64_t flags) {
  ACLVMM_API_ENTER("aclrtMemP2PMap");
  ACLVMM_REQUIRE_NOT_NULL(api, devPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  auto dev = Runtime::get().physical_device(dstDevId);
  if (!dev.ok()) return api::finish(api, dev.status());
  if (aclError e = gate(api, Feature::kP2PMap)) return e;
  auto info = Runtime::get().vmm().pointer_info(api::addr(devPtr));
  if (!info.ok() || info->kind != PointerInfo::kDevice) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "devPtr is not device memory");
  }
  // The peer's page tables gain the range: device memory mappings there become read-write for
  // the peer, and an aclrtMalloc block's device opens peer access with it.
  return api::finish(api, Runtime::get().vmm().p2p_map(api::addr(devPtr), size, *dev));
  ACLVMM_API_EXIT();
}

}  // extern "C"
