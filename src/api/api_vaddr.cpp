// Virtual address reservations, mappings, access rights and address queries.
#include <vector>

#include "api/access_desc.h"
#include "api/api_common.h"
#include "api/api_forward.h"
#include "api/handles.h"
#include "runtime/runtime.h"
#include "vmm/vmm.h"

using namespace aclvmm;

namespace {

aclError reserve(const char* api, void** virPtr, size_t size, size_t alignment, void* expectPtr,
                 uint64_t flags, bool no_uc) {
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  // Flag 1 (huge pages) is a compatibility hint that PyTorch and others pass.
  if (flags != 0 && flags != 1) return api::invalid(api, "flags must be 0 or 1");
  auto base = Runtime::get().vmm().reserve(size, alignment, api::addr(expectPtr), no_uc);
  if (!base.ok()) {
    if (base.status().code() == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      // Applications probe for the feature this way; CANN logs a warning only.
      api::note(api, base.status().message());
    }
    return api::finish(api, base.status());
  }
  *virPtr = reinterpret_cast<void*>(*base);
  return ACL_SUCCESS;
}

aclError map(const char* api, void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
             uint64_t flags, bool no_access) {
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, handle);
  if (size == 0) return api::invalid(api, "size must be greater than 0");
  if (flags != 0) return api::invalid(api, "flags must be 0");
  if (no_access && Runtime::get().quirks()) {
    return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     "not supported by the vendor driver (ACLVMM_QUIRKS=vendor)");
  }
  return api::finish(api, Runtime::get().vmm().map(api::addr(virPtr), size, offset,
                                                   api::handle_in(handle), no_access));
}

}  // namespace

extern "C" {

aclError aclrtReserveMemAddress(void** virPtr, size_t size, size_t alignment, void* expectPtr,
                                uint64_t flags) {
  ACLVMM_API_ENTER("aclrtReserveMemAddress");
  return reserve(api, virPtr, size, alignment, expectPtr, flags, false);
  ACLVMM_API_EXIT();
}

aclError aclrtReserveMemAddressNoUCMemory(void** virPtr, size_t size, size_t alignment, void* expectPtr,
                                          uint64_t flags) {
  ACLVMM_API_ENTER("aclrtReserveMemAddressNoUCMemory");
  return reserve(api, virPtr, size, alignment, expectPtr, flags, true);
  ACLVMM_API_EXIT();
}

aclError aclrtReleaseMemAddress(void* virPtr) {
  ACLVMM_API_ENTER("aclrtReleaseMemAddress");
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  return api::finish(api, Runtime::get().vmm().release(api::addr(virPtr)));
  ACLVMM_API_EXIT();
}

aclError aclrtMapMem(void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags) {
  ACLVMM_API_ENTER("aclrtMapMem");
  return map(api, virPtr, size, offset, handle, flags, false);
  ACLVMM_API_EXIT();
}

aclError aclrtMemMapNoAccess(void* virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                             uint64_t flags) {
  ACLVMM_API_ENTER("aclrtMemMapNoAccess");
  return map(api, virPtr, size, offset, handle, flags, true);
  ACLVMM_API_EXIT();
}

aclError aclrtUnmapMem(void* virPtr) {
  ACLVMM_API_ENTER("aclrtUnmapMem");
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  return api::finish(api, Runtime::get().vmm().unmap(api::addr(virPtr)));
  ACLVMM_API_EXIT();
}

aclError aclrtMemSetAccess(void* virPtr, size_t size, aclrtMemAccessDesc* desc, size_t count) {
  ACLVMM_API_ENTER("aclrtMemSetAccess");
  // No ACL-layer checks here: the vendor's runtime checks these and answers 107000.
  if (!virPtr || !desc) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "virPtr and desc must not be NULL");
  }
  if (count == 0) return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "count must be greater than 0");
  const bool quirks = Runtime::get().quirks();
  // `count` is not trusted for an allocation: the descriptors are validated one by one, and the
  // first bad one ends the call (a huge count answers exactly as a short one does).
  std::vector<AccessChange> changes;
  for (size_t i = 0; i < count; ++i) {
    const aclrtMemAccessDesc& d = desc[i];
    const int flags = api::raw(d.flags);
    if (quirks && (flags == ACL_RT_MEM_ACCESS_FLAGS_NONE || flags == ACL_RT_MEM_ACCESS_FLAGS_READ)) {
      return api::fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                       "only READWRITE access is supported by the vendor driver (ACLVMM_QUIRKS=vendor)");
    }
    if (flags != ACL_RT_MEM_ACCESS_FLAGS_NONE && flags != ACL_RT_MEM_ACCESS_FLAGS_READ &&
        flags != ACL_RT_MEM_ACCESS_FLAGS_READWRITE) {
      return api::fail(api, ACL_ERROR_RT_PARAM_INVALID,
                       "desc[" + std::to_string(i) + "].flags " + std::to_string(flags) +
                           " is not NONE, READ or READWRITE");
    }
    AccessChange c;
    Status st = api::check_location(d.location, &c);
    if (!st.ok()) return api::fail(api, st.code(), "desc[" + std::to_string(i) + "]: " + st.message());
    c.flags = flags;
    changes.push_back(c);
  }
  return api::finish(api, Runtime::get().vmm().set_access(api::addr(virPtr), size, changes));
  ACLVMM_API_EXIT();
}

aclError aclrtMemGetAccess(void* virPtr, aclrtMemLocation* location, uint64_t* flag) {
  ACLVMM_API_ENTER("aclrtMemGetAccess");
  ACLVMM_REQUIRE_NOT_NULL(api, virPtr);
  ACLVMM_REQUIRE_NOT_NULL(api, location);
  ACLVMM_REQUIRE_NOT_NULL(api, flag);
  AccessChange c;
  Status st = api::check_location(*location, &c);
  if (!st.ok()) return api::finish(api, st);
  auto flags = Runtime::get().vmm().get_access(api::addr(virPtr), c.host, c.device);
  if (!flags.ok()) return api::finish(api, flags.status());
  *flag = static_cast<uint64_t>(*flags);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtMemGetAddressRange(void* ptr, void** pbase, size_t* psize) {
  ACLVMM_API_ENTER("aclrtMemGetAddressRange");
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  if (!pbase && !psize) {
    return api::fail(api, ACL_ERROR_RT_PARAM_INVALID, "pbase and psize must not both be NULL");
  }
  auto range = Runtime::get().vmm().address_range(api::addr(ptr));
  if (!range.ok()) return api::finish(api, range.status());
  if (pbase) *pbase = reinterpret_cast<void*>(range->base);
  if (psize) *psize = range->size;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtPointerGetAttributes(const void* ptr, aclrtPtrAttributes* attributes) {
  ACLVMM_API_ENTER("aclrtPointerGetAttributes");
  ACLVMM_FORWARD(aclrtPointerGetAttributes, ptr, attributes);
  ACLVMM_REQUIRE_NOT_NULL(api, ptr);
  ACLVMM_REQUIRE_NOT_NULL(api, attributes);
  auto info = Runtime::get().vmm().pointer_info(api::addr(ptr));
  if (!info.ok()) return api::finish(api, info.status());
  switch (info->kind) {
    case PointerInfo::kDevice:
      attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
      attributes->location.id = static_cast<uint32_t>(Runtime::get().user_device(info->device));
      break;
    case PointerInfo::kHost:
      attributes->location.type = ACL_MEM_LOCATION_TYPE_HOST;
      attributes->location.id = 0;
      break;
    case PointerInfo::kManaged:
      attributes->location.type = ACL_MEM_LOCATION_TYPE_MANAGED;
      attributes->location.id = static_cast<uint32_t>(Runtime::get().user_device(info->device));
      break;
    case PointerInfo::kUnregistered:
      attributes->location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
      attributes->location.id = 0;
      break;
  }
  attributes->pageSize = info->page_size;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
