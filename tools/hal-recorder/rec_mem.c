/*
 * rec_mem.c: the recorder's wrappers of the memory functions (hal.md 3.1-3.4, 3.6-3.8,
 * 3.10-3.12): reservations, physical handles, maps, access, queries, allocations, copies.
 * Addresses (void* and DVdeviceptr alike) and flag words are written as "0x…" strings, sizes
 * and ids as numbers.
 */
#include "hal_recorder.h"

#define NS DRV_ERROR_NOT_SUPPORT
#define OK(r) ((r) == DRV_ERROR_NONE)

REC_EXPORT drvError_t halMemAddressReserve(void** va, size_t size, size_t alignment, void* fixedVa,
                                           uint64_t flags) {
    REC_ENTER(halMemAddressReserve, NS, va, size, alignment, fixedVa, flags);
    jl_ptr(j_, "va", va);
    jl_u64(j_, "size", size);
    jl_u64(j_, "alignment", alignment);
    jl_ptr(j_, "fixedVa", fixedVa);
    jl_hex(j_, "flags", flags);
    dec_reserve_flags(j_, "flags_decoded", flags);
    drvError_t r = NS;
    REC_CALL(r, va, size, alignment, fixedVa, flags);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "va", va, sizeof *va, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemAddressFree(void* va) {
    REC_ENTER(halMemAddressFree, NS, va);
    jl_ptr(j_, "va", va);
    drvError_t r = NS;
    REC_CALL(r, va);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemCreate(drv_mem_handle_t** handle, size_t size,
                                   const struct drv_mem_prop* prop, uint64_t flags) {
    REC_ENTER(halMemCreate, NS, handle, size, prop, flags);
    jl_ptr(j_, "handle", handle);
    jl_u64(j_, "size", size);
    dec_prop(j_, "prop", prop);
    jl_hex(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, handle, size, prop, flags);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "handle", handle, sizeof *handle, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemRelease(drv_mem_handle_t* handle) {
    REC_ENTER(halMemRelease, NS, handle);
    jl_ptr(j_, "handle", handle);
    drvError_t r = NS;
    REC_CALL(r, handle);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemMap(void* va, size_t size, size_t offset, drv_mem_handle_t* handle,
                                uint64_t flags) {
    REC_ENTER(halMemMap, NS, va, size, offset, handle, flags);
    jl_ptr(j_, "va", va);
    jl_u64(j_, "size", size);
    jl_u64(j_, "offset", offset);
    jl_ptr(j_, "handle", handle);
    jl_hex(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, va, size, offset, handle, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

/* Absent from every public driver (hal.md 1.3): normally recorded with "missing":true. */
REC_EXPORT drvError_t halMemMapNoAccess(void* va, size_t size, size_t offset,
                                        drv_mem_handle_t* handle, uint64_t flags) {
    REC_ENTER(halMemMapNoAccess, NS, va, size, offset, handle, flags);
    jl_ptr(j_, "va", va);
    jl_u64(j_, "size", size);
    jl_u64(j_, "offset", offset);
    jl_ptr(j_, "handle", handle);
    jl_hex(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, va, size, offset, handle, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemUnmap(void* va) {
    REC_ENTER(halMemUnmap, NS, va);
    jl_ptr(j_, "va", va);
    drvError_t r = NS;
    REC_CALL(r, va);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemSetAccess(void* va, size_t size, struct drv_mem_access_desc* desc,
                                      size_t count) {
    REC_ENTER(halMemSetAccess, NS, va, size, desc, count);
    jl_ptr(j_, "va", va);
    jl_u64(j_, "size", size);
    jl_u64(j_, "count", count);
    dec_access_descs(j_, "desc", desc, count);
    drvError_t r = NS;
    REC_CALL(r, va, size, desc, count);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemGetAccess(void* va, struct drv_mem_location* location,
                                      uint64_t* flags) {
    REC_ENTER(halMemGetAccess, NS, va, location, flags);
    jl_ptr(j_, "va", va);
    dec_location(j_, "location", location);
    jl_ptr(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, va, location, flags);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "flags", flags, sizeof *flags, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemGetAllocationGranularity(const struct drv_mem_prop* prop,
                                                     drv_mem_granularity_options option,
                                                     size_t* granularity) {
    REC_ENTER(halMemGetAllocationGranularity, NS, prop, option, granularity);
    dec_prop(j_, "prop", prop);
    dec_enum(j_, "option", (unsigned)option, REC_NAMES(rec_granularity_names));
    jl_ptr(j_, "granularity", granularity);
    drvError_t r = NS;
    REC_CALL(r, prop, option, granularity);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "granularity", granularity, sizeof *granularity, false, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemRetainAllocationHandle(drv_mem_handle_t** handle, void* va) {
    REC_ENTER(halMemRetainAllocationHandle, NS, handle, va);
    jl_ptr(j_, "handle", handle);
    jl_ptr(j_, "va", va);
    drvError_t r = NS;
    REC_CALL(r, handle, va);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "handle", handle, sizeof *handle, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemGetAllocationPropertiesFromHandle(struct drv_mem_prop* prop,
                                                              drv_mem_handle_t* handle) {
    REC_ENTER(halMemGetAllocationPropertiesFromHandle, NS, prop, handle);
    jl_ptr(j_, "prop", prop);
    jl_ptr(j_, "handle", handle);
    drvError_t r = NS;
    REC_CALL(r, prop, handle);
    if (rec_out(&c_, OK(r)))
        dec_prop(j_, "prop", prop);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemGetAddressRange(DVdeviceptr va, DVdeviceptr* base, size_t* size) {
    REC_ENTER(halMemGetAddressRange, NS, va, base, size);
    jl_hex(j_, "va", va);
    jl_ptr(j_, "base", base);
    jl_ptr(j_, "size", size);
    drvError_t r = NS;
    REC_CALL(r, va, base, size);
    if (rec_out(&c_, OK(r))) {
        if (base != NULL) /* either output may be NULL (hal.md 3.7) */
            dec_scalar(j_, "base", base, sizeof *base, false, true);
        if (size != NULL)
            dec_scalar(j_, "size", size, sizeof *size, false, false);
    }
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemHandleSetAttribute(drv_mem_handle_t* handle, enum HandleAttrType type,
                                               struct HandleAttr value) {
    REC_ENTER(halMemHandleSetAttribute, NS, handle, type, value);
    jl_ptr(j_, "handle", handle);
    jl_u64(j_, "type", (unsigned)type);
    dec_handle_attr(j_, "value", &value);
    drvError_t r = NS;
    REC_CALL(r, handle, type, value);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemHandleGetAttribute(drv_mem_handle_t* handle, enum HandleAttrType type,
                                               struct HandleAttr* value) {
    REC_ENTER(halMemHandleGetAttribute, NS, handle, type, value);
    jl_ptr(j_, "handle", handle);
    jl_u64(j_, "type", (unsigned)type);
    jl_ptr(j_, "value", value);
    drvError_t r = NS;
    REC_CALL(r, handle, type, value);
    if (rec_out(&c_, OK(r)))
        dec_handle_attr(j_, "value", value);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemAlloc(void** ptr, unsigned long long size, unsigned long long flags) {
    REC_ENTER(halMemAlloc, NS, ptr, size, flags);
    jl_ptr(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    jl_hex(j_, "flags", flags);
    dec_alloc_flags(j_, "flags_decoded", flags);
    drvError_t r = NS;
    REC_CALL(r, ptr, size, flags);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "ptr", ptr, sizeof *ptr, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemFree(void* ptr) {
    REC_ENTER(halMemFree, NS, ptr);
    jl_ptr(j_, "ptr", ptr);
    drvError_t r = NS;
    REC_CALL(r, ptr);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult drvMemPrefetchToDevice(DVdeviceptr ptr, size_t size, DVdevice dev) {
    REC_ENTER(drvMemPrefetchToDevice, NS, ptr, size, dev);
    jl_hex(j_, "ptr", ptr);
    jl_u64(j_, "size", size);
    jl_u64(j_, "dev", dev);
    DVresult r = NS;
    REC_CALL(r, ptr, size, dev);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult drvMemGetAttribute(DVdeviceptr ptr, struct DVattribute* attr) {
    REC_ENTER(drvMemGetAttribute, NS, ptr, attr);
    jl_hex(j_, "ptr", ptr);
    jl_ptr(j_, "attr", attr);
    DVresult r = NS;
    REC_CALL(r, ptr, attr);
    if (rec_out(&c_, OK(r)))
        dec_dvattribute(j_, "attr", attr);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult halMemGetInfo(DVdevice dev, unsigned int type, struct MemInfo* info) {
    REC_ENTER(halMemGetInfo, NS, dev, type, info);
    jl_u64(j_, "dev", dev);
    dec_enum(j_, "type", type, REC_NAMES(rec_mem_info_names));
    jl_ptr(j_, "info", info);
    DVresult r = NS;
    REC_CALL(r, dev, type, info);
    if (rec_out(&c_, OK(r)))
        dec_mem_info(j_, "phy_info", info);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult drvMemcpy(DVdeviceptr dst, size_t dstMax, DVdeviceptr src, size_t count) {
    REC_ENTER(drvMemcpy, NS, dst, dstMax, src, count);
    jl_hex(j_, "dst", dst);
    jl_u64(j_, "dstMax", dstMax);
    jl_hex(j_, "src", src);
    jl_u64(j_, "count", count);
    DVresult r = NS;
    REC_CALL(r, dst, dstMax, src, count);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult drvMemsetD8(DVdeviceptr dst, size_t dstMax, UINT8 value, size_t count) {
    REC_ENTER(drvMemsetD8, NS, dst, dstMax, value, count);
    jl_hex(j_, "dst", dst);
    jl_u64(j_, "dstMax", dstMax);
    jl_u64(j_, "value", value);
    jl_u64(j_, "count", count);
    DVresult r = NS;
    REC_CALL(r, dst, dstMax, value, count);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemcpy(void* dst, size_t dstSize, void* src, size_t count,
                                struct memcpy_info* info) {
    REC_ENTER(halMemcpy, NS, dst, dstSize, src, count, info);
    jl_ptr(j_, "dst", dst);
    jl_u64(j_, "dstSize", dstSize);
    jl_ptr(j_, "src", src);
    jl_u64(j_, "count", count);
    dec_memcpy_info(j_, "info", info);
    drvError_t r = NS;
    REC_CALL(r, dst, dstSize, src, count, info);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halSdmaCopy(DVdeviceptr dst, size_t dstSize, DVdeviceptr src, size_t count) {
    REC_ENTER(halSdmaCopy, NS, dst, dstSize, src, count);
    jl_hex(j_, "dst", dst);
    jl_u64(j_, "dstSize", dstSize);
    jl_hex(j_, "src", src);
    jl_u64(j_, "count", count);
    drvError_t r = NS;
    REC_CALL(r, dst, dstSize, src, count);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}
