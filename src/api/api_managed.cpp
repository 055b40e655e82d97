// Managed (unified) memory: allocation, advice, attributes, prefetch.
//
// The ACL-layer and runtime argument checks (behavior.md section 10) and the product gating are
// complete; the migration model itself is issue 4 and answers 207000 until then (the UVM sample's
// "skip" signal).
#include "api/api_common.h"
#include "core/runtime.h"

using namespace aclvmm;

namespace {

aclError gate(const char* api) {
  const Product& p = Runtime::get().config().product;
  if (!p.supports(Feature::kManaged)) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "managed memory is not supported on " + p.soc);
  }
  return ACL_SUCCESS;
}

aclError not_yet(const char* api) {
  return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "managed memory is not available in this build yet");
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

}  // namespace

extern "C" {

aclError aclrtMemAllocManaged(void** ptr, uint64_t size, uint32_t flag) {
  const char* api = "aclrtMemAllocManaged";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (flag != ACL_RT_MEM_ATTACH_GLOBAL) return api::invalid(api, "flag must be ACL_RT_MEM_ATTACH_GLOBAL");
  if (size == 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "size must be greater than 0");
  if (aclError e = gate(api)) return e;
  if (aclError e = need_context(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedAdvise(const void* const ptr, uint64_t size, aclrtMemManagedAdviseType advise,
                               aclrtMemManagedLocation location) {
  const char* api = "aclrtMemManagedAdvise";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (api::raw(advise) < 0 || api::raw(advise) > ACL_MEM_ADVISE_UNSET_ACCESSED_BY) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "advise must be 0..5");
  }
  if (aclError e = check_advise_location(api, location)) return e;
  if (aclError e = need_context(api)) return e;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void* ptr, size_t size,
                                void* data, size_t dataSize) {
  const char* api = "aclrtMemManagedGetAttr";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, data);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (!attribute_valid(attribute)) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "attribute must be 1..8");
  (void)dataSize;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute* attributes, size_t numAttributes,
                                 const void* ptr, size_t size, void** data, size_t* dataSizes) {
  const char* api = "aclrtMemManagedGetAttrs";
  ACLVMM_ENTRY(api);
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
  return not_yet(api);
}

aclError aclrtMemManagedPrefetchAsync(const void* ptr, size_t size, aclrtMemManagedLocation location,
                                      uint32_t flags, aclrtStream stream) {
  const char* api = "aclrtMemManagedPrefetchAsync";
  ACLVMM_ENTRY(api);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (aclError e = check_prefetch_location(api, location)) return e;
  (void)stream;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

aclError aclrtMemManagedPrefetchBatchAsync(const void** ptrs, size_t* sizes, size_t count,
                                           aclrtMemManagedLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                           size_t numPrefetchLocs, uint64_t flags, aclrtStream stream) {
  const char* api = "aclrtMemManagedPrefetchBatchAsync";
  ACLVMM_ENTRY(api);
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
  (void)stream;
  if (aclError e = gate(api)) return e;
  return not_yet(api);
}

}  // extern "C"
