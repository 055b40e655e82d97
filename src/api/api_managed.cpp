// Managed (unified) memory: allocation, advice, attributes, prefetch (behavior.md section 10).
// The ACL-layer and runtime checks are here; the migration model is vmm/managed.cpp.
#include <vector>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "observability/log.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

aclError gate(const char* api) {
  const Product& p = Runtime::get().config().product;
  if (!p.supports(Feature::kManaged)) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "managed memory is not supported on " + p.soc);
  }
  return ACL_SUCCESS;
}

// Converts an ACL managed location to the core's: device ids become physical ids, the calling
// thread's NUMA node stands in for HOST_NUMA_CURRENT.
ManagedLocation to_core(const aclrtMemManagedLocation& loc) {
  ManagedLocation out;
  out.type = api::raw(loc.type);
  out.id = loc.id;
  if (out.type == ACL_MEM_LOCATIONTYPE_DEVICE) {
    auto phys = Runtime::get().physical_device(loc.id);
    out.id = phys.ok() ? *phys : loc.id;
  } else if (out.type == ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT) {
    out.type = ACL_MEM_LOCATIONTYPE_HOST_NUMA;
    const std::shared_ptr<dev::DeviceBackend>& device = Runtime::get().device();
    out.id = device ? device->host().current_numa_node() : 0;
  }
  return out;
}

// The range must lie in the managed window (107000); unallocated pages are the core's 507899.
aclError check_window(const char* api, const void* ptr) {
  if (!Runtime::get().managed().in_window(api::addr(ptr))) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "the address is not managed memory");
  }
  return ACL_SUCCESS;
}

Status prefetch_on(aclrtStream stream, std::vector<std::pair<uint64_t, uint64_t>> ranges,
                   ManagedLocation where) {
  ACLVMM_ASSIGN_OR_RETURN(const std::shared_ptr<Stream> s,
                          Runtime::get().resolve_stream(api::token(stream)));
  // kPrefetch commands, in stream order; the vendor only logs driver-side prefetch failures.
  for (const auto& [va, size] : ranges) s->enqueue_prefetch(va, size, ManagedMemory::driver_location(where));
  return Status::Ok();
}

aclError need_context(const char* api) {
  auto ctx = Runtime::get().current_context();
  return ctx.ok() ? ACL_SUCCESS : api::finish(api, ctx.status());
}

bool device_in_range(int32_t id) { return id >= 0 && id < Runtime::get().visible_count(); }

// Advice passes the location type through; a DEVICE id must name a device.
aclError check_advise_location(const char* api, const aclrtMemManagedLocation& loc) {
  if (api::raw(loc.type) == ACL_MEM_LOCATIONTYPE_DEVICE && !device_in_range(loc.id)) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "location id " + std::to_string(loc.id) +
                                                          " is not a device");
  }
  return ACL_SUCCESS;
}

// Prefetch converts the location: DEVICE, HOST, HOST_NUMA and HOST_NUMA_CURRENT only.
aclError check_prefetch_location(const char* api, const aclrtMemManagedLocation& loc) {
  const int type = api::raw(loc.type);
  if (type < ACL_MEM_LOCATIONTYPE_DEVICE || type > ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "location type " + std::to_string(type) + " cannot receive a prefetch");
  }
  return check_advise_location(api, loc);
}

bool attribute_valid(const aclrtMemManagedRangeAttribute& a) {
  return api::raw(a) >= ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY &&
         api::raw(a) <= ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID;
}

aclError get_attr(const char* api, aclrtMemManagedRangeAttribute attribute, const void* ptr,
                  size_t size, void* data, size_t dataSize) {
  const int attr = api::raw(attribute);
  if (aclError e = check_window(api, ptr)) return e;
  const bool list = attr == ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY;
  if (list ? (dataSize == 0 || dataSize % 4 != 0) : dataSize != 4) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                     "dataSize " + std::to_string(dataSize) +
                         (list ? " must be a multiple of 4" : " must be 4 (one int32)"));
  }
  auto values = Runtime::get().managed().attribute(attr, api::addr(ptr), size, dataSize / 4);
  if (!values.ok()) return api::finish(api, values.status());
  std::memcpy(data, values->data(), values->size() * sizeof(int32_t));
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMemAllocManaged(void** ptr, uint64_t size, uint32_t flag) {
  ACLVMM_API_ENTER("aclrtMemAllocManaged");
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (flag != ACL_RT_MEM_ATTACH_GLOBAL) return api::invalid(api, "flag must be ACL_RT_MEM_ATTACH_GLOBAL");
  if (size == 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "size must be greater than 0");
  if (aclError e = gate(api)) return e;
  if (aclError e = need_context(api)) return e;
  auto p = Runtime::get().managed().allocate(size);
  if (!p.ok()) return api::finish(api, p.status());
  *ptr = reinterpret_cast<void*>(*p);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemManagedAdvise(const void* const ptr, uint64_t size, aclrtMemManagedAdviseType advise,
                               aclrtMemManagedLocation location) {
  ACLVMM_API_ENTER("aclrtMemManagedAdvise");
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (api::raw(advise) < 0 || api::raw(advise) > ACL_MEM_ADVISE_UNSET_ACCESSED_BY) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "advise must be 0..5");
  }
  if (aclError e = check_advise_location(api, location)) return e;
  if (aclError e = need_context(api)) return e;
  if (aclError e = gate(api)) return e;
  if (aclError e = check_window(api, ptr)) return e;
  // The location type goes to the driver unconverted: HOST_NUMA_CURRENT is not valid advice.
  ManagedLocation where = to_core(location);
  if (api::raw(location.type) == ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT) where.type = 4;
  return api::finish(api, Runtime::get().managed().advise(api::addr(ptr), size, api::raw(advise), where));
  ACLVMM_API_EXIT();
}

aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void* ptr, size_t size,
                                void* data, size_t dataSize) {
  ACLVMM_API_ENTER("aclrtMemManagedGetAttr");
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, data);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (!attribute_valid(attribute)) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "attribute must be 1..8");
  if (aclError e = gate(api)) return e;
  return get_attr(api, attribute, ptr, size, data, dataSize);
  ACLVMM_API_EXIT();
}

aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute* attributes, size_t numAttributes,
                                 const void* ptr, size_t size, void** data, size_t* dataSizes) {
  ACLVMM_API_ENTER("aclrtMemManagedGetAttrs");
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, attributes);
  ACLVMM_REQUIRE_NOT_NULL(api, data);
  ACLVMM_REQUIRE_NOT_NULL(api, dataSizes);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  for (size_t i = 0; i < numAttributes; ++i) {
    if (!attribute_valid(attributes[i])) {
      return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "attributes[" + std::to_string(i) + "] must be 1..8");
    }
  }
  if (numAttributes == 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "numAttributes must be > 0");
  if (aclError e = gate(api)) return e;
  for (size_t i = 0; i < numAttributes; ++i) {
    if (!data[i]) return api::invalid(api, "data[" + std::to_string(i) + "] must not be NULL");
    if (aclError e = get_attr(api, attributes[i], ptr, size, data[i], dataSizes[i])) return e;
  }
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemManagedPrefetchAsync(const void* ptr, size_t size, aclrtMemManagedLocation location,
                                      uint32_t flags, aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtMemManagedPrefetchAsync");
  ACLVMM_FORWARD(aclrtMemManagedPrefetchAsync, ptr, size, location, flags, stream);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (aclError e = check_prefetch_location(api, location)) return e;
  if (aclError e = gate(api)) return e;
  return api::finish(api, prefetch_on(stream, {{api::addr(ptr), size}}, to_core(location)));
  ACLVMM_API_EXIT();
}

aclError aclrtMemManagedPrefetchBatchAsync(const void** ptrs, size_t* sizes, size_t count,
                                           aclrtMemManagedLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                           size_t numPrefetchLocs, uint64_t flags, aclrtStream stream) {
  ACLVMM_API_ENTER("aclrtMemManagedPrefetchBatchAsync");
  ACLVMM_FORWARD(aclrtMemManagedPrefetchBatchAsync, ptrs, sizes, count, prefetchLocs,
                 prefetchLocIdxs, numPrefetchLocs, flags, stream);
  if (!ptrs || !sizes || !prefetchLocs || !prefetchLocIdxs) {
    return api::invalid(api, "ptrs, sizes, prefetchLocs and prefetchLocIdxs must not be NULL");
  }
  if (count == 0 || numPrefetchLocs == 0) return api::invalid(api, "count and numPrefetchLocs must be > 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (count < numPrefetchLocs) return api::invalid(api, "count must be at least numPrefetchLocs");
  if (prefetchLocIdxs[0] != 0) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "prefetchLocIdxs[0] must be 0");
  }
  for (size_t i = 0; i < numPrefetchLocs; ++i) {
    if (prefetchLocIdxs[i] >= count || (i > 0 && prefetchLocIdxs[i] <= prefetchLocIdxs[i - 1])) {
      return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                       "prefetchLocIdxs must be strictly increasing and below count");
    }
    if (aclError e = check_prefetch_location(api, prefetchLocs[i])) return e;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!ptrs[i]) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "ptrs[" + std::to_string(i) + "] is NULL");
  }
  if (aclError e = gate(api)) return e;
  // prefetchLocs[k] applies to ptrs[prefetchLocIdxs[k]] up to the next index.
  for (size_t k = 0; k < numPrefetchLocs; ++k) {
    const size_t end = k + 1 < numPrefetchLocs ? prefetchLocIdxs[k + 1] : count;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (size_t i = prefetchLocIdxs[k]; i < end; ++i) ranges.emplace_back(api::addr(ptrs[i]), sizes[i]);
    Status st = prefetch_on(stream, std::move(ranges), to_core(prefetchLocs[k]));
    if (!st.ok()) return api::finish(api, st);
  }
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
