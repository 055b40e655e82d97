#include "raw_calls.h"

#include "acl/acl.h"

int fz_malloc(void** p, size_t size, int policy) {
  return aclrtMalloc(p, size, (aclrtMemMallocPolicy)policy);
}

int fz_memcpy(void* dst, size_t dest_max, const void* src, size_t count, int kind) {
  return aclrtMemcpy(dst, dest_max, src, count, (aclrtMemcpyKind)kind);
}

int fz_export_v1(void* handle, int handle_type, uint64_t flags, uint64_t* out) {
  return aclrtMemExportToShareableHandle(handle, (aclrtMemHandleType)handle_type, flags, out);
}

int fz_export_v2(void* handle, uint64_t flags, int share_type, void* out) {
  return aclrtMemExportToShareableHandleV2(handle, flags, (aclrtMemSharedHandleType)share_type, out);
}

int fz_set_pid_v2(void* token, int share_type, int32_t* pids, size_t n) {
  return aclrtMemSetPidToShareableHandleV2(token, (aclrtMemSharedHandleType)share_type, pids, n);
}

int fz_import_v2(void* token, int share_type, uint64_t flags, void** handle) {
  return aclrtMemImportFromShareableHandleV2(token, (aclrtMemSharedHandleType)share_type, flags, handle);
}

int fz_advise(const void* p, uint64_t size, int advice, int loc_type, int loc_id) {
  aclrtMemManagedLocation loc;
  loc.type = (aclrtMemManagedLocationType)loc_type;
  loc.id = loc_id;
  return aclrtMemManagedAdvise(p, size, (aclrtMemManagedAdviseType)advice, loc);
}

int fz_prefetch(const void* p, size_t size, int loc_type, int loc_id, uint32_t flags, void* stream) {
  aclrtMemManagedLocation loc;
  loc.type = (aclrtMemManagedLocationType)loc_type;
  loc.id = loc_id;
  return aclrtMemManagedPrefetchAsync(p, size, loc, flags, stream);
}

int fz_get_attr(int attr, const void* p, size_t size, void* data, size_t data_size) {
  return aclrtMemManagedGetAttr((aclrtMemManagedRangeAttribute)attr, p, size, data, data_size);
}
