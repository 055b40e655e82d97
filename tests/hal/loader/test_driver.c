/*
 * Driver libraries that are not drivers, for the loader tests (hal.md §1.1, §1.3, §7.1 #6).
 * One source, built once per kind (HAL_TEST_KIND):
 *   1 STUB      the toolkit's stub: every function returns 0 and writes nothing
 *   2 NO_DEVICE a library that answers but reports 0 devices
 *   3 PARTIAL   lacks one required function (drvMemcpy)
 *   4 MINIMAL   the required functions only, 2 devices: loads, but every optional call is missing
 * The MINIMAL library is also copied under a `devlib/` directory, where it must be taken for the
 * stub whatever it answers.
 */
#include "hal_decls.h"

#define STUB 1
#define NO_DEVICE 2
#define PARTIAL 3
#define MINIMAL 4

drvError_t halGetAPIVersion(int* version) {
#if HAL_TEST_KIND != STUB
    *version = 0x072418;
#else
    (void)version;
#endif
    return DRV_ERROR_NONE;
}

drvError_t drvGetDevNum(uint32_t* count) {
#if HAL_TEST_KIND == NO_DEVICE
    *count = 0;
#elif HAL_TEST_KIND != STUB
    *count = 2;
#else
    (void)count;
#endif
    return DRV_ERROR_NONE;
}

drvError_t drvDeviceGetPhyIdByIndex(uint32_t logicId, uint32_t* phyId) {
    *phyId = logicId;
    return DRV_ERROR_NONE;
}
drvError_t drvDeviceGetIndexByPhyId(uint32_t phyId, uint32_t* logicId) {
    *logicId = phyId;
    return DRV_ERROR_NONE;
}
DVresult drvMemSmmuQuery(DVdevice dev, UINT32* ssid) {
    (void)dev;
    *ssid = 0;
    return DRV_ERROR_NONE;
}
drvError_t halGetDeviceInfo(uint32_t dev, int32_t moduleType, int32_t infoType, int64_t* value) {
    (void)dev, (void)moduleType, (void)infoType, (void)value;
    return DRV_ERROR_NOT_SUPPORT;
}
drvError_t halDeviceEnableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
    (void)dev, (void)peerPhyId, (void)flags;
    return DRV_ERROR_NONE;
}
drvError_t halDeviceDisableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
    (void)dev, (void)peerPhyId, (void)flags;
    return DRV_ERROR_NONE;
}
drvError_t halDeviceCanAccessPeer(int* canAccess, uint32_t dev, uint32_t peerPhyId) {
    (void)dev, (void)peerPhyId;
    *canAccess = 1;
    return DRV_ERROR_NONE;
}
pid_t drvDeviceGetBareTgid(void) { return -1; }
drvError_t halMemAlloc(void** ptr, unsigned long long size, unsigned long long flags) {
    (void)ptr, (void)size, (void)flags;
    return DRV_ERROR_OUT_OF_MEMORY;
}
drvError_t halMemFree(void* ptr) {
    (void)ptr;
    return DRV_ERROR_INVALID_VALUE;
}
DVresult drvMemPrefetchToDevice(DVdeviceptr ptr, size_t size, DVdevice dev) {
    (void)ptr, (void)size, (void)dev;
    return DRV_ERROR_NOT_SUPPORT;
}
DVresult drvMemGetAttribute(DVdeviceptr ptr, struct DVattribute* attr) {
    (void)ptr, (void)attr;
    return DRV_ERROR_INVALID_HANDLE;
}
DVresult halMemGetInfo(DVdevice dev, unsigned int type, struct MemInfo* info) {
    (void)dev, (void)type, (void)info;
    return DRV_ERROR_INVALID_HANDLE;
}
#if HAL_TEST_KIND != PARTIAL
DVresult drvMemcpy(DVdeviceptr dst, size_t dstMax, DVdeviceptr src, size_t count) {
    (void)dst, (void)dstMax, (void)src, (void)count;
    return DRV_ERROR_INVALID_HANDLE;
}
#endif
DVresult drvMemsetD8(DVdeviceptr dst, size_t dstMax, UINT8 value, size_t count) {
    (void)dst, (void)dstMax, (void)value, (void)count;
    return DRV_ERROR_INVALID_HANDLE;
}
