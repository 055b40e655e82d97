/*
 * test_driver.c: a tiny driver library for the recorder's tests (libaclvmm_rec_testdrv.so). A
 * few driver functions with fixed, easily checked behaviour; everything else of hal_decls.h
 * is absent, halMemMapNoAccess among them, as in every public driver. Not a model of the real
 * driver (drivers/hal/fake/ is that): only what rec_client.c and check_trace.py expect.
 *
 * The functions taking structures by value accept only the exact values rec_client.c passes,
 * so a recorder that corrupted them in forwarding would turn a NONE into INVALID_VALUE.
 */
#define _GNU_SOURCE
#include "hal_decls.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT drvError_t halGetAPIVersion(int* version) {
    if (version == NULL)
        return DRV_ERROR_INVALID_VALUE;
    *version = 0x072418;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t drvGetDevNum(uint32_t* count) {
    if (count == NULL)
        return DRV_ERROR_INVALID_VALUE;
    *count = 2;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halGetHostID(uint32_t* hostId) {
    if (hostId == NULL)
        return DRV_ERROR_INVALID_VALUE;
    *hostId = 65;
    return DRV_ERROR_NONE;
}

/* Device 7's name holds every kind of byte a JSON string must escape. */
EXPORT drvError_t halGetSocVersion(uint32_t dev, char* name, uint32_t nameLen) {
    static const char odd[] = "Ascend\"9\\10\n\x01\xff";
    const char* s = dev == 7 ? odd : "Ascend910B1";
    if (name == NULL || nameLen <= strlen(s))
        return DRV_ERROR_INVALID_VALUE;
    if (dev >= 2 && dev != 7)
        return DRV_ERROR_INVALID_DEVICE;
    memcpy(name, s, strlen(s) + 1);
    return DRV_ERROR_NONE;
}

EXPORT bool halSupportFeature(uint32_t dev, drvFeature_t feature) {
    (void)dev;
    return feature == FEATURE_SVM_GET_USER_MALLOC_ATTR;
}

EXPORT drvError_t halDeviceClose(uint32_t dev, halDevCloseIn* in) {
    if (in == NULL || dev >= 2)
        return DRV_ERROR_INVALID_VALUE;
    return in->close_type == DEV_CLOSE_HOST_DEVICE ? DRV_ERROR_NONE : DRV_ERROR_NOT_SUPPORT;
}

EXPORT drvError_t halMemCtl(int ctlType, void* in, size_t inSize, void* out, size_t* outSize) {
    if (ctlType != CTRL_TYPE_SUPPORT_FEATURE || in == NULL || inSize != 16 || out == NULL ||
        outSize == NULL || *outSize < 8)
        return DRV_ERROR_INVALID_VALUE;
    memset(out, 0x10, 8);
    *outSize = 8;
    return DRV_ERROR_NONE;
}

EXPORT int32_t halMapErrorCode(drvError_t code) {
    return (int32_t)code + 1000;
}

EXPORT pid_t drvDeviceGetBareTgid(void) {
    return getpid();
}

/* Handles are numbers, never dereferenced. halMemCreate also calls another exported function
 * through the global scope, as a driver may: the recorder must not record that inner call. */
EXPORT drvError_t halMemCreate(drv_mem_handle_t** handle, size_t size,
                               const struct drv_mem_prop* prop, uint64_t flags) {
    static unsigned long next = 0x5a000;
    if (handle == NULL || size == 0 || prop == NULL || flags != 0)
        return DRV_ERROR_INVALID_VALUE;
    drvError_t (*host_id)(uint32_t*) =
        (drvError_t(*)(uint32_t*))dlsym(RTLD_DEFAULT, "halGetHostID");
    uint32_t host = 0;
    if (host_id == NULL || host_id(&host) != DRV_ERROR_NONE || host != 65)
        return DRV_ERROR_INNER_ERR;
    *handle = (drv_mem_handle_t*)__atomic_add_fetch(&next, 0x100, __ATOMIC_RELAXED);
    return DRV_ERROR_NONE;
}

/* Leaves errno set, which the caller must see through the recorder. */
EXPORT drvError_t halMemRelease(drv_mem_handle_t* handle) {
    errno = EBADF;
    return handle == NULL ? DRV_ERROR_INVALID_VALUE : DRV_ERROR_NONE;
}

EXPORT drvError_t halMemAddressReserve(void** va, size_t size, size_t alignment, void* fixedVa,
                                       uint64_t flags) {
    if (va == NULL || size == 0 || alignment != 0 || (flags & 0xFF) >= 3)
        return DRV_ERROR_INVALID_VALUE;
    *va = fixedVa != NULL ? fixedVa : (void*)0x120000000000UL;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemSetAccess(void* va, size_t size, struct drv_mem_access_desc* desc,
                                  size_t count) {
    if (va == NULL || size == 0 || desc == NULL || count == 0)
        return DRV_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (desc[i].type != MEM_ACCESS_TYPE_READWRITE)
            return DRV_ERROR_NOT_SUPPORT;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemGetAccess(void* va, struct drv_mem_location* location, uint64_t* flags) {
    if (va == NULL || location == NULL || flags == NULL)
        return DRV_ERROR_INVALID_VALUE;
    *flags = location->side == MEM_DEV_SIDE ? MEM_ACCESS_TYPE_READWRITE : MEM_ACCESS_TYPE_NONE;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemExportToShareableHandleV2(drv_mem_handle_t* handle,
                                                  drv_mem_handle_type type, uint64_t flags,
                                                  struct MemShareHandle* token) {
    if (handle == NULL || token == NULL || flags != 0 || type != MEM_HANDLE_TYPE_FABRIC)
        return DRV_ERROR_INVALID_VALUE;
    const uint32_t fields[5] = {1, 2, 3, 4, 5};
    memcpy(token->share_info, fields, sizeof fields);
    token->share_info[MEM_SHARE_HANDLE_LEN - 1] = 0xab;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemShareHandleSetAttribute(uint64_t token, enum ShareHandleAttrType type,
                                                struct ShareHandleAttr value) {
    if (token != 0x100000001ULL || type != SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER ||
        value.enableFlag != SHR_HANDLE_NO_WLIST_ENABLE || value.rsv[0] != 0 || value.rsv[7] != 0x77)
        return DRV_ERROR_INVALID_VALUE;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemManagedAdvise(DVdeviceptr ptr, size_t size, uint32_t advice,
                                      struct drv_uvm_location location) {
    if (ptr != 0x90000000000ULL || size != 0x200000 || advice != PREFER_LOCATION ||
        location.type != DRV_UVM_LOCATION_TYPE_DEVICE || location.id != 3)
        return DRV_ERROR_INVALID_VALUE;
    return DRV_ERROR_NONE;
}

EXPORT drvError_t halMemAlloc(void** ptr, unsigned long long size, unsigned long long flags) {
    (void)flags;
    if (ptr == NULL || size == 0)
        return DRV_ERROR_INVALID_VALUE;
    *ptr = (void*)(0x100000000000UL + (unsigned long)size);
    return DRV_ERROR_NONE;
}

EXPORT DVresult drvMemGetAttribute(DVdeviceptr ptr, struct DVattribute* attr) {
    if (ptr == 0 || attr == NULL)
        return DRV_ERROR_INVALID_VALUE;
    memset(attr, 0, sizeof *attr);
    attr->memType = DV_MEM_LOCK_DEV | DV_MEM_SVM_DEVICE;
    attr->devId = 1;
    attr->pageSize = 0x200000;
    attr->resv[7] = 9;
    return DRV_ERROR_NONE;
}

EXPORT DVresult halMemGetInfo(DVdevice dev, unsigned int type, struct MemInfo* info) {
    if (info == NULL || dev >= 2)
        return DRV_ERROR_INVALID_VALUE;
    if (type != MEM_INFO_TYPE_HBM_SIZE)
        return DRV_ERROR_NOT_SUPPORT;
    struct MemPhyInfo p = {1000, 500, 64, 32, 2, 1};
    info->phy_info = p;
    return DRV_ERROR_NONE;
}
