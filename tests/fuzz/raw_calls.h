// Calls whose enum arguments the fuzzer sets to any int. In C++ an int outside an enum's range must
// not be converted to the enum, so these are made from C (raw_calls.c), where an enum is an int.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int fz_malloc(void** p, size_t size, int policy);
int fz_memcpy(void* dst, size_t dest_max, const void* src, size_t count, int kind);
int fz_export_v1(void* handle, int handle_type, uint64_t flags, uint64_t* out);
int fz_export_v2(void* handle, uint64_t flags, int share_type, void* out);
int fz_set_pid_v2(void* token, int share_type, int32_t* pids, size_t n);
int fz_import_v2(void* token, int share_type, uint64_t flags, void** handle);
int fz_advise(const void* p, uint64_t size, int advice, int loc_type, int loc_id);
int fz_prefetch(const void* p, size_t size, int loc_type, int loc_id, uint32_t flags, void* stream);
int fz_get_attr(int attr, const void* p, size_t size, void* data, size_t data_size);

#ifdef __cplusplus
}
#endif
