/*
 * rec_share.c: the recorder's wrappers of the sharing functions (hal.md 3.5) and of managed
 * memory (3.9). Tokens are "0x…" strings (a V1 token packs the share id and the exporter's
 * devid); a 128-byte MemShareHandle is written as its first five u32 and its whole hex.
 */
#include "hal_recorder.h"

#define NS DRV_ERROR_NOT_SUPPORT
#define OK(r) ((r) == DRV_ERROR_NONE)

REC_EXPORT drvError_t halMemExportToShareableHandle(drv_mem_handle_t* handle,
                                                    drv_mem_handle_type type, uint64_t flags,
                                                    uint64_t* token) {
    REC_ENTER(halMemExportToShareableHandle, NS, handle, type, flags, token);
    jl_ptr(j_, "handle", handle);
    dec_enum(j_, "type", (unsigned)type, REC_NAMES(rec_handle_type_names));
    jl_hex(j_, "flags", flags);
    jl_ptr(j_, "token", token);
    drvError_t r = NS;
    REC_CALL(r, handle, type, flags, token);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "token", token, sizeof *token, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemExportToShareableHandleV2(drv_mem_handle_t* handle,
                                                      drv_mem_handle_type type, uint64_t flags,
                                                      struct MemShareHandle* token) {
    REC_ENTER(halMemExportToShareableHandleV2, NS, handle, type, flags, token);
    jl_ptr(j_, "handle", handle);
    dec_enum(j_, "type", (unsigned)type, REC_NAMES(rec_handle_type_names));
    jl_hex(j_, "flags", flags);
    jl_ptr(j_, "token", token);
    drvError_t r = NS;
    REC_CALL(r, handle, type, flags, token);
    if (rec_out(&c_, OK(r)))
        dec_share_handle(j_, "token", token);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemImportFromShareableHandle(uint64_t token, uint32_t dev,
                                                      drv_mem_handle_t** handle) {
    REC_ENTER(halMemImportFromShareableHandle, NS, token, dev, handle);
    jl_hex(j_, "token", token);
    jl_u64(j_, "dev", dev);
    jl_ptr(j_, "handle", handle);
    drvError_t r = NS;
    REC_CALL(r, token, dev, handle);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "handle", handle, sizeof *handle, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemImportFromShareableHandleV2(drv_mem_handle_type type,
                                                        struct MemShareHandle* token, uint32_t dev,
                                                        drv_mem_handle_t** handle) {
    REC_ENTER(halMemImportFromShareableHandleV2, NS, type, token, dev, handle);
    dec_enum(j_, "type", (unsigned)type, REC_NAMES(rec_handle_type_names));
    dec_share_handle(j_, "token", token);
    jl_u64(j_, "dev", dev);
    jl_ptr(j_, "handle", handle);
    drvError_t r = NS;
    REC_CALL(r, type, token, dev, handle);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "handle", handle, sizeof *handle, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemSetPidToShareableHandle(uint64_t token, int pids[], uint32_t count) {
    REC_ENTER(halMemSetPidToShareableHandle, NS, token, pids, count);
    jl_hex(j_, "token", token);
    dec_u32s(j_, "pids", pids, count, true);
    jl_u64(j_, "count", count);
    drvError_t r = NS;
    REC_CALL(r, token, pids, count);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemTransShareableHandle(drv_mem_handle_type type,
                                                 struct MemShareHandle* token, uint32_t* serverId,
                                                 uint64_t* token64) {
    REC_ENTER(halMemTransShareableHandle, NS, type, token, serverId, token64);
    dec_enum(j_, "type", (unsigned)type, REC_NAMES(rec_handle_type_names));
    dec_share_handle(j_, "token", token);
    jl_ptr(j_, "serverId", serverId);
    jl_ptr(j_, "token64", token64);
    drvError_t r = NS;
    REC_CALL(r, type, token, serverId, token64);
    if (rec_out(&c_, OK(r))) {
        dec_scalar(j_, "serverId", serverId, sizeof *serverId, false, false);
        dec_scalar(j_, "token64", token64, sizeof *token64, false, true);
    }
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemShareHandleSetAttribute(uint64_t token, enum ShareHandleAttrType type,
                                                    struct ShareHandleAttr value) {
    REC_ENTER(halMemShareHandleSetAttribute, NS, token, type, value);
    jl_hex(j_, "token", token);
    jl_u64(j_, "type", (unsigned)type);
    dec_share_attr(j_, "value", &value);
    drvError_t r = NS;
    REC_CALL(r, token, type, value);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemShareHandleGetAttribute(uint64_t token, enum ShareHandleAttrType type,
                                                    struct ShareHandleAttr* value) {
    REC_ENTER(halMemShareHandleGetAttribute, NS, token, type, value);
    jl_hex(j_, "token", token);
    jl_u64(j_, "type", (unsigned)type);
    jl_ptr(j_, "value", value);
    drvError_t r = NS;
    REC_CALL(r, token, type, value);
    if (rec_out(&c_, OK(r)))
        dec_share_attr(j_, "value", value);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemShareHandleInfoGet(uint64_t token, struct ShareHandleGetInfo* info) {
    REC_ENTER(halMemShareHandleInfoGet, NS, token, info);
    jl_hex(j_, "token", token);
    jl_ptr(j_, "info", info);
    drvError_t r = NS;
    REC_CALL(r, token, info);
    if (rec_out(&c_, OK(r)))
        dec_share_info(j_, "info", info);
    rec_end_drv(&c_, r);
    return r;
}

/* ---- managed memory ----------------------------------------------------------------------- */

REC_EXPORT drvError_t halMemAdvise(DVdeviceptr ptr, size_t size, unsigned int advice,
                                   DVdevice dev) {
    REC_ENTER(halMemAdvise, NS, ptr, size, advice, dev);
    jl_hex(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    jl_u64(j_, "advice", advice);
    jl_u64(j_, "dev", dev);
    drvError_t r = NS;
    REC_CALL(r, ptr, size, advice, dev);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemManagedAdvise(DVdeviceptr ptr, size_t size, uint32_t advice,
                                          struct drv_uvm_location location) {
    REC_ENTER(halMemManagedAdvise, NS, ptr, size, advice, location);
    jl_hex(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    dec_enum(j_, "advice", advice, REC_NAMES(rec_advise_names));
    dec_uvm_location(j_, "location", &location);
    drvError_t r = NS;
    REC_CALL(r, ptr, size, advice, location);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

/* One attribute's value as the driver wrote it: 4-byte words (hal.md 3.9: every data size is 4
 * or, for ACCESS_BY, a multiple of 4). */
static void range_values(struct jl* j, void** data, size_t* dataSizes, size_t count) {
    jl_array(j, "data");
    for (size_t i = 0; i < count && i < REC_ARRAY_MAX; i++) {
        void* d = NULL;
        size_t n = 0;
        if (!rec_read(&d, data + i, sizeof d) || !rec_read(&n, dataSizes + i, sizeof n)) {
            jl_null(j, NULL);
            continue;
        }
        struct jl_mark m = jl_element_begin(j);
        dec_u32s(j, NULL, d, n / 4, true);
        jl_element_end(j, &m);
    }
    jl_close(j);
}

REC_EXPORT drvError_t halMemManagedRangeGetAttributes(void** data, size_t* dataSizes,
                                                      uint32_t* attributes, size_t count,
                                                      DVdeviceptr ptr, size_t size) {
    REC_ENTER(halMemManagedRangeGetAttributes, NS, data, dataSizes, attributes, count, ptr, size);
    dec_u64s(j_, "data", data, count, true);
    dec_u64s(j_, "dataSizes", dataSizes, count, false);
    dec_u32s(j_, "attributes", attributes, count, false);
    jl_u64(j_, "count", count);
    jl_hex(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    drvError_t r = NS;
    REC_CALL(r, data, dataSizes, attributes, count, ptr, size);
    if (rec_out(&c_, OK(r)) && data != NULL && dataSizes != NULL)
        range_values(j_, data, dataSizes, count);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult halMemManagedPrefetch(DVdeviceptr ptr, size_t size,
                                          struct drv_uvm_location location, unsigned int flags) {
    REC_ENTER(halMemManagedPrefetch, NS, ptr, size, location, flags);
    jl_hex(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    dec_uvm_location(j_, "location", &location);
    jl_hex(j_, "flags", flags);
    DVresult r = NS;
    REC_CALL(r, ptr, size, location, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult halMemManagedPrefetchBatch(DVdeviceptr* ptrs, size_t* sizes, size_t count,
                                               struct drv_uvm_location* locations,
                                               size_t* locationStarts, size_t locationCount,
                                               unsigned long long flags) {
    REC_ENTER(halMemManagedPrefetchBatch, NS, ptrs, sizes, count, locations, locationStarts,
              locationCount, flags);
    dec_u64s(j_, "ptrs", ptrs, count, true);
    dec_u64s(j_, "sizes", sizes, count, false);
    jl_u64(j_, "count", count);
    dec_uvm_locations(j_, "locations", locations, locationCount);
    dec_u64s(j_, "locationStarts", locationStarts, locationCount, false);
    jl_u64(j_, "locationCount", locationCount);
    jl_hex(j_, "flags", flags);
    DVresult r = NS;
    REC_CALL(r, ptrs, sizes, count, locations, locationStarts, locationCount, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}
