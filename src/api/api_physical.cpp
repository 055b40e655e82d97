// Physical memory handles: allocation, release, granularity, retain, properties.
#include "api/api_common.h"
#include "api/handles.h"
#include "api/mem_attr.h"
#include "runtime/runtime.h"
#include "vmm/vmm.h"

using namespace aclvmm;

namespace {

constexpr uint64_t kMiB2 = 2ull << 20, kGiB1 = 1ull << 30;

// The ACL layer's attribute checks shared by MallocPhysical and granularity queries.
aclError check_attr(const char* api, const aclrtPhysicalMemProp* prop, api::PageAndMemory* pm) {
  const int attr = api::raw(prop->memAttr);
  const bool device = api::raw(prop->location.type) == ACL_MEM_LOCATION_TYPE_DEVICE;
  if (device && api::ddr_only(attr)) {
    return api::invalid(api, "memAttr " + std::to_string(attr) +
                                 " is host (DDR) memory and cannot be placed on a device");
  }
  if (!api::translate_attr(attr, !device, pm)) {
    return api::invalid(api, "memAttr " + std::to_string(attr) + " is not accepted");
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMallocPhysical(aclrtDrvMemHandle* handle, size_t size, const aclrtPhysicalMemProp* prop,
                             uint64_t flags) {
  ACLVMM_API_ENTER("aclrtMallocPhysical");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  ACLVMM_REQUIRE_NOT_NULL(api, prop);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (api::raw(prop->handleType) != ACL_MEM_HANDLE_TYPE_NONE) {
    return api::invalid(api, "prop->handleType must be ACL_MEM_HANDLE_TYPE_NONE");
  }
  if (api::raw(prop->allocationType) != ACL_MEM_ALLOCATION_TYPE_PINNED) {
    return api::invalid(api, "prop->allocationType must be ACL_MEM_ALLOCATION_TYPE_PINNED");
  }
  const int type = api::raw(prop->location.type);
  if (type == ACL_MEM_LOCATION_TYPE_UNREGISTERED || type == ACL_MEM_LOCATION_TYPE_MANAGED) {
    return api::invalid(api, "prop->location.type " + std::to_string(type) +
                                 " cannot hold physical memory (use DEVICE, HOST or HOST_NUMA)");
  }
  api::PageAndMemory pm;
  if (aclError e = check_attr(api, prop, &pm)) return e;

  Runtime& rt = Runtime::get();
  vmm::PhysicalSpec spec;
  spec.page_type = pm.page;
  spec.mem_type = pm.mem;
  spec.reserve = prop->reserve;
  if (type == ACL_MEM_LOCATION_TYPE_DEVICE) {
    auto dev = rt.physical_device(static_cast<int32_t>(prop->location.id));
    if (!dev.ok()) return api::finish(api, dev.status());
    if (!api::attr_supported(rt.config().product, api::raw(prop->memAttr))) {
      return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                       "memAttr " + std::to_string(api::raw(prop->memAttr)) + " is not supported on " +
                           rt.config().product.soc);
    }
    spec.side = Side::kDevice;
    spec.device = *dev;
  } else if (type == ACL_MEM_LOCATION_TYPE_HOST_NUMA) {
    auto ctx = rt.current_context();
    if (!ctx.ok()) return api::finish(api, ctx.status());
    spec.side = Side::kHostNuma;
    spec.device = static_cast<int>(prop->location.id);
  } else if (type == ACL_MEM_LOCATION_TYPE_HOST) {
    spec.side = Side::kHost;
    spec.device = static_cast<int>(prop->location.id);
  } else {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "prop->location.type " + std::to_string(type) + " is not a memory location");
  }
  auto h = Runtime::get().vmm().malloc_physical(size, spec);
  if (!h.ok()) return api::finish(api, h.status());
  *handle = api::handle_out(*h);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  ACLVMM_API_ENTER("aclrtFreePhysical");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  return api::finish(api, Runtime::get().vmm().free_physical(api::handle_in(handle)));
  ACLVMM_API_EXIT();
}

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp* prop, aclrtMemGranularityOptions option,
                                          size_t* granularity) {
  ACLVMM_API_ENTER("aclrtMemGetAllocationGranularity");
  ACLVMM_REQUIRE_NOT_NULL(api, prop);
  ACLVMM_REQUIRE_NOT_NULL(api, granularity);
  api::PageAndMemory pm;
  if (aclError e = check_attr(api, prop, &pm)) return e;
  Runtime& rt = Runtime::get();
  const int type = api::raw(prop->location.type);
  if (type == ACL_MEM_LOCATION_TYPE_DEVICE) {
    auto dev = rt.physical_device(static_cast<int32_t>(prop->location.id));
    if (!dev.ok()) return api::finish(api, dev.status());
  }
  if (api::raw(option) < 0 || api::raw(option) >= 2) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     "option " + std::to_string(api::raw(option)) +
                         " is not supported (MINIMUM or RECOMMENDED)");
  }
  if (prop->reserve != 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "prop->reserve must be 0");
  if (type != ACL_MEM_LOCATION_TYPE_DEVICE && type != ACL_MEM_LOCATION_TYPE_HOST &&
      type != ACL_MEM_LOCATION_TYPE_UNREGISTERED && type != ACL_MEM_LOCATION_TYPE_HOST_NUMA) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "prop->location.type " + std::to_string(type) + " is not a memory location");
  }
  if (type == ACL_MEM_LOCATION_TYPE_HOST && prop->location.id >= 64) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "host location id is out of range");
  }
  // Where the driver decides (hal), it is asked with the prop as the runtime builds it (hal.md
  // §3.6: DEVICE a driver id, HOST_NUMA and the UNREGISTERED type 2 the driver's side 2).
  vmm::PhysicalSpec spec;
  spec.page_type = pm.page;
  spec.mem_type = pm.mem;
  spec.side = type == ACL_MEM_LOCATION_TYPE_DEVICE ? Side::kDevice
              : type == ACL_MEM_LOCATION_TYPE_HOST ? Side::kHost
                                                   : Side::kHostNuma;
  spec.device = static_cast<int>(prop->location.id);
  if (type == ACL_MEM_LOCATION_TYPE_DEVICE) spec.device = *rt.physical_device(spec.device);
  *granularity = 0;
  if (Status asked = rt.vmm().driver_granularity(spec, api::raw(option), granularity);
      !asked.ok()) {
    return api::finish(api, asked);
  }
  if (*granularity == 0) *granularity = pm.page == kHuge1GPage ? kGiB1 : kMiB2;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemRetainAllocationHandle(void* virPtr, aclrtDrvMemHandle* handle) {
  ACLVMM_API_ENTER("aclrtMemRetainAllocationHandle");
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  auto h = Runtime::get().vmm().retain(api::addr(virPtr));
  if (!h.ok()) return api::finish(api, h.status());
  *handle = api::handle_out(*h);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemGetAllocationPropertiesFromHandle(aclrtDrvMemHandle handle, aclrtPhysicalMemProp* prop) {
  ACLVMM_API_ENTER("aclrtMemGetAllocationPropertiesFromHandle");
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  ACLVMM_REQUIRE_NOT_NULL(api, prop);
  auto spec = Runtime::get().vmm().properties(api::handle_in(handle));
  if (!spec.ok()) return api::finish(api, spec.status());
  const bool host = spec->side != Side::kDevice;
  aclrtMemAttr attr;
  if (!api::attr_from(spec->page_type, spec->mem_type, host, &attr)) {
    return api::invalid(api, "the handle's memory type has no aclrtMemAttr");
  }
  prop->handleType = ACL_MEM_HANDLE_TYPE_NONE;
  prop->allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  prop->memAttr = attr;
  prop->location.type = spec->side == Side::kDevice ? ACL_MEM_LOCATION_TYPE_DEVICE
                        : spec->side == Side::kHost ? ACL_MEM_LOCATION_TYPE_HOST
                                                    : ACL_MEM_LOCATION_TYPE_HOST_NUMA;
  prop->location.id = static_cast<uint32_t>(spec->device);  // the driver's id, as the vendor reports
  prop->reserve = spec->reserve;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
