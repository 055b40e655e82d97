/*
 * A stand-in for the vendor runtime (tests/hal/coexist/README.md): the library that, beside
 * aclvmm in one process, owns devices, contexts and streams and drives the same driver library
 * (the fake libascend_hal.so, linked by its SONAME as the vendor's libruntime.so links it).
 *
 * Built twice: with its ACL functions under their own names (the vendor's libascendcl.so /
 * libacl_rt.so, next after aclvmm in the lookup order), and with -DSTANDIN_IMPL under
 * `<name>Impl` (the vendor's libruntime.so alone, when aclvmm took the forwarding library's
 * SONAME). rtSetDevice is exported by both: it is how aclvmm's hal backend recognises the
 * vendor runtime (hal.md §6).
 *
 * Its functions do what the vendor's do where aclvmm must see the effect (device open and close
 * in the driver, copies through the driver on memory aclvmm mapped) and count every call, so the
 * test can tell which library served what. The VMM functions it exports as well only count and
 * fail: aclvmm must serve those.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "drivers/hal/hal_decls.h"
#include "tests/hal/coexist/standin.h"

#ifdef STANDIN_IMPL
#define VENDOR(name) name##Impl
#else
#define VENDOR(name) name
#endif

#define STANDIN_EXPORT __attribute__((visibility("default")))

/* ---- call counts ---------------------------------------------------------------------------- */

static const char* const kNames[] = {
    "aclInit", "aclFinalize", "aclGetRecentErrMsg", "aclrtSetDevice", "aclrtResetDevice",
    "aclrtResetDeviceForce", "aclrtGetDevice", "aclrtGetDeviceCount", "aclrtSynchronizeDevice",
    "aclrtDeviceEnablePeerAccess", "aclrtCreateContext", "aclrtDestroyContext",
    "aclrtSetCurrentContext", "aclrtGetCurrentContext", "aclrtCreateStream", "aclrtDestroyStream",
    "aclrtSynchronizeStream", "aclrtMemcpyAsync", "aclrtMemsetAsync", "aclrtPointerGetAttributes",
    "aclrtFree", "aclrtHostRegister", "aclrtIpcMemGetExportKey",
    /* served by aclvmm: the stand-in only counts them */
    "aclrtMemGetAllocationGranularity", "aclrtMallocPhysical", "aclrtFreePhysical",
    "aclrtReserveMemAddress", "aclrtReleaseMemAddress", "aclrtMapMem", "aclrtUnmapMem",
    "aclrtMemSetAccess", "aclrtMemcpy", "aclrtMemset", "aclrtMalloc", "aclrtGetMemInfo",
    "aclrtMemRetainAllocationHandle", "aclrtMemGetAllocationPropertiesFromHandle", "rtSetDevice"};
#define NAME_COUNT (sizeof kNames / sizeof kNames[0])
static atomic_int g_calls[NAME_COUNT];

static void arrived(const char* name) {
    for (size_t i = 0; i < NAME_COUNT; ++i) {
        if (strcmp(kNames[i], name) == 0) {
            atomic_fetch_add(&g_calls[i], 1);
            return;
        }
    }
    fprintf(stderr, "stand-in: %s is not counted\n", name);
    abort();
}

STANDIN_EXPORT int standinCalls(const char* name) {
    for (size_t i = 0; i < NAME_COUNT; ++i) {
        if (strcmp(kNames[i], name) == 0) return atomic_load(&g_calls[i]);
    }
    return -1;
}

/* ---- errors, per thread as the vendor keeps them ------------------------------------------ */

static _Thread_local char t_message[256];

static aclError fail(aclError code, const char* format, ...) {
    va_list args;
    va_start(args, format);
    int n = snprintf(t_message, sizeof t_message, "stand-in: ");
    vsnprintf(t_message + n, sizeof t_message - (size_t)n, format, args);
    va_end(args);
    return code;
}

STANDIN_EXPORT const char* VENDOR(aclGetRecentErrMsg)(void) {
    arrived("aclGetRecentErrMsg");
    return t_message[0] != '\0' ? t_message : NULL;
}

/* ---- devices -------------------------------------------------------------------------------- */

#define MAX_DEVICES 64
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_refs[MAX_DEVICES];
static atomic_int g_open_devices;
static _Thread_local int t_device = -1;
static _Thread_local void* t_context;

struct standin_context { int device; };
static struct standin_context g_primary[MAX_DEVICES];

static int device_count(void) {
    uint32_t n = 0;
    standin_in_driver_call = 1;
    drvError_t e = drvGetDevNum(&n);
    standin_in_driver_call = 0;
    return e == DRV_ERROR_NONE ? (int)n : 0;
}

/* The first reference opens the device in the driver as the vendor does (hal.md §2 step 1). */
static aclError take_device(int32_t d) {
    if (d < 0 || d >= device_count() || d >= MAX_DEVICES) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist", d);
    }
    pthread_mutex_lock(&g_mu);
    if (g_refs[d] == 0) {
        halDevOpenIn in;
        halDevOpenOut out;
        memset(&in, 0, sizeof in);
        memset(&out, 0, sizeof out);
        standin_in_driver_call = 1;
        drvError_t e = halDeviceOpen((uint32_t)d, &in, &out);
        standin_in_driver_call = 0;
        if (e != DRV_ERROR_NONE) {
            pthread_mutex_unlock(&g_mu);
            return fail(ACL_ERROR_RT_INTERNAL_ERROR, "halDeviceOpen(%d) failed with %d", d, (int)e);
        }
        atomic_fetch_add(&g_open_devices, 1);
    }
    ++g_refs[d];
    pthread_mutex_unlock(&g_mu);
    g_primary[d].device = d;
    t_device = d;
    t_context = &g_primary[d];
    return ACL_SUCCESS;
}

static aclError drop_device(int32_t d, int force) {
    if (d < 0 || d >= MAX_DEVICES) return fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d", d);
    pthread_mutex_lock(&g_mu);
    if (g_refs[d] > 0) {
        g_refs[d] = force ? 0 : g_refs[d] - 1;
        if (g_refs[d] == 0) {
            halDevCloseIn in;
            memset(&in, 0, sizeof in);
            standin_in_driver_call = 1;
            (void)halDeviceClose((uint32_t)d, &in);
            standin_in_driver_call = 0;
            atomic_fetch_sub(&g_open_devices, 1);
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (t_device == d) {
        t_device = -1;
        t_context = NULL;
    }
    return ACL_SUCCESS;
}

STANDIN_EXPORT int standinOpenDevices(void) { return atomic_load(&g_open_devices); }

STANDIN_EXPORT aclError rtSetDevice(int32_t device) {
    arrived("rtSetDevice");
    return take_device(device);
}

STANDIN_EXPORT aclError VENDOR(aclInit)(const char* configPath) {
    (void)configPath;
    arrived("aclInit");
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclFinalize)(void) {
    arrived("aclFinalize");
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtSetDevice)(int32_t deviceId) {
    arrived("aclrtSetDevice");
    return take_device(deviceId);
}

STANDIN_EXPORT aclError VENDOR(aclrtResetDevice)(int32_t deviceId) {
    arrived("aclrtResetDevice");
    return drop_device(deviceId, 0);
}

STANDIN_EXPORT aclError VENDOR(aclrtResetDeviceForce)(int32_t deviceId) {
    arrived("aclrtResetDeviceForce");
    return drop_device(deviceId, 1);
}

STANDIN_EXPORT aclError VENDOR(aclrtGetDevice)(int32_t* deviceId) {
    arrived("aclrtGetDevice");
    if (deviceId == NULL) return fail(ACL_ERROR_INVALID_PARAM, "deviceId is NULL");
    if (t_device < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device on this thread");
    *deviceId = t_device;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtGetDeviceCount)(uint32_t* n) {
    arrived("aclrtGetDeviceCount");
    if (n == NULL) return fail(ACL_ERROR_INVALID_PARAM, "count is NULL");
    *n = (uint32_t)device_count();
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtSynchronizeDevice)(void) {
    arrived("aclrtSynchronizeDevice");
    return ACL_SUCCESS;  /* its streams run at once */
}

STANDIN_EXPORT aclError VENDOR(aclrtDeviceEnablePeerAccess)(int32_t peerDeviceId, uint32_t flags) {
    arrived("aclrtDeviceEnablePeerAccess");
    if (flags != 0) return fail(ACL_ERROR_FEATURE_UNSUPPORTED, "flags must be 0");
    if (peerDeviceId < 0 || peerDeviceId >= device_count()) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "peer %d does not exist", peerDeviceId);
    }
    return ACL_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------------------- */

STANDIN_EXPORT aclError VENDOR(aclrtCreateContext)(aclrtContext* context, int32_t deviceId) {
    arrived("aclrtCreateContext");
    if (context == NULL) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
    aclError e = take_device(deviceId);
    if (e != ACL_SUCCESS) return e;
    struct standin_context* c = malloc(sizeof *c);
    if (c == NULL) return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory");
    c->device = deviceId;
    t_context = c;
    *context = c;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtDestroyContext)(aclrtContext context) {
    arrived("aclrtDestroyContext");
    if (context == NULL) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
    struct standin_context* c = context;
    const int d = c->device;
    if (t_context == c) t_context = NULL;
    free(c);
    return drop_device(d, 0);
}

STANDIN_EXPORT aclError VENDOR(aclrtSetCurrentContext)(aclrtContext context) {
    arrived("aclrtSetCurrentContext");
    if (context == NULL) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
    t_context = context;
    t_device = ((struct standin_context*)context)->device;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtGetCurrentContext)(aclrtContext* context) {
    arrived("aclrtGetCurrentContext");
    if (context == NULL) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
    if (t_context == NULL) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no current context");
    *context = t_context;
    return ACL_SUCCESS;
}

/* ---- streams: the work runs at once, through the driver's synchronous calls ------------------ */

struct standin_stream { unsigned magic; int device; };
#define STREAM_MAGIC 0x57a7d1u

static int is_stream(aclrtStream s) {
    return s != NULL && ((struct standin_stream*)s)->magic == STREAM_MAGIC;
}

STANDIN_EXPORT aclError VENDOR(aclrtCreateStream)(aclrtStream* stream) {
    arrived("aclrtCreateStream");
    if (stream == NULL) return fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
    if (t_device < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device on this thread");
    struct standin_stream* s = malloc(sizeof *s);
    if (s == NULL) return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "no memory");
    s->magic = STREAM_MAGIC;
    s->device = t_device;
    *stream = s;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtDestroyStream)(aclrtStream stream) {
    arrived("aclrtDestroyStream");
    if (!is_stream(stream)) return fail(ACL_ERROR_RT_PARAM_INVALID, "%p is not a stream", stream);
    ((struct standin_stream*)stream)->magic = 0;
    free(stream);
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtSynchronizeStream)(aclrtStream stream) {
    arrived("aclrtSynchronizeStream");
    if (!is_stream(stream)) return fail(ACL_ERROR_RT_PARAM_INVALID, "%p is not a stream", stream);
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtMemcpyAsync)(void* dst, size_t destMax, const void* src,
                                                 size_t n, aclrtMemcpyKind kind,
                                                 aclrtStream stream) {
    (void)kind;
    arrived("aclrtMemcpyAsync");
    if (!is_stream(stream)) return fail(ACL_ERROR_RT_PARAM_INVALID, "%p is not a stream", stream);
    standin_in_driver_call = 1;
    DVresult e = drvMemcpy((DVdeviceptr)(uintptr_t)dst, destMax, (DVdeviceptr)(uintptr_t)src, n);
    standin_in_driver_call = 0;
    return e == DRV_ERROR_NONE ? ACL_SUCCESS
                               : fail(ACL_ERROR_RT_PARAM_INVALID, "drvMemcpy failed with %d", (int)e);
}

STANDIN_EXPORT aclError VENDOR(aclrtMemsetAsync)(void* devPtr, size_t maxCount, int32_t value,
                                                 size_t n, aclrtStream stream) {
    arrived("aclrtMemsetAsync");
    if (!is_stream(stream)) return fail(ACL_ERROR_RT_PARAM_INVALID, "%p is not a stream", stream);
    standin_in_driver_call = 1;
    DVresult e = drvMemsetD8((DVdeviceptr)(uintptr_t)devPtr, maxCount, (UINT8)value, n);
    standin_in_driver_call = 0;
    return e == DRV_ERROR_NONE ? ACL_SUCCESS
                               : fail(ACL_ERROR_RT_PARAM_INVALID, "drvMemsetD8 failed with %d", (int)e);
}

/* ---- memory the vendor keeps ---------------------------------------------------------------- */

/* What the stand-in answers for any pointer: a page size no driver reports, so the test can
 * tell its answer from aclvmm's. */
#define STANDIN_PAGE_SIZE 12345u

STANDIN_EXPORT aclError VENDOR(aclrtPointerGetAttributes)(const void* ptr,
                                                          aclrtPtrAttributes* attributes) {
    arrived("aclrtPointerGetAttributes");
    if (ptr == NULL || attributes == NULL) return fail(ACL_ERROR_INVALID_PARAM, "NULL argument");
    memset(attributes, 0, sizeof *attributes);
    attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attributes->pageSize = STANDIN_PAGE_SIZE;
    return ACL_SUCCESS;
}

STANDIN_EXPORT int standinMalloc(void** ptr, size_t size) {
    /* Device 0, huge pages, module 33: what the vendor's own pools ask for. */
    const unsigned long long flags = MEM_DEV | MEM_TYPE_HBM | MEM_PAGE_HUGE |
                                     MEM_SET_ALIGN_SIZE(9) | (33ULL << MEM_MODULE_ID_BIT);
    standin_in_driver_call = 1;
    drvError_t e = halMemAlloc(ptr, size, flags);
    standin_in_driver_call = 0;
    return (int)e;
}

STANDIN_EXPORT int standinHandleDevice(void* handle) {
    struct drv_mem_prop prop;
    memset(&prop, 0, sizeof prop);
    standin_in_driver_call = 1;
    drvError_t e = halMemGetAllocationPropertiesFromHandle(&prop, (drv_mem_handle_t*)handle);
    standin_in_driver_call = 0;
    return e == DRV_ERROR_NONE ? (int)prop.devid : -(int)e;
}

STANDIN_EXPORT aclError VENDOR(aclrtFree)(void* devPtr) {
    arrived("aclrtFree");
    standin_in_driver_call = 1;
    drvError_t e = halMemFree(devPtr);
    standin_in_driver_call = 0;
    return e == DRV_ERROR_NONE ? ACL_SUCCESS
                               : fail(ACL_ERROR_RT_PARAM_INVALID, "halMemFree failed with %d", (int)e);
}

STANDIN_EXPORT aclError VENDOR(aclrtHostRegister)(void* ptr, uint64_t size,
                                                  aclrtHostRegisterType type, void** devPtr) {
    (void)size;
    (void)type;
    arrived("aclrtHostRegister");
    if (devPtr == NULL) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
    *devPtr = ptr;  /* the vendor's table would remember it; one answer is enough here */
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError VENDOR(aclrtIpcMemGetExportKey)(void* devPtr, size_t size, char* key,
                                                        size_t len, uint64_t flags) {
    (void)devPtr;
    (void)size;
    (void)flags;
    arrived("aclrtIpcMemGetExportKey");
    if (key == NULL || len == 0) return fail(ACL_ERROR_INVALID_PARAM, "key is NULL");
    snprintf(key, len, "standin-key");
    return ACL_SUCCESS;
}

/* ---- what aclvmm serves: reaching the stand-in is the failure the test looks for ------------ */

/* Their arguments are never looked at: only that the call arrived. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define SERVED_BY_ACLVMM(name, params)                                                   \
    STANDIN_EXPORT aclError VENDOR(name) params {                                          \
        arrived(#name);                                                                      \
        return fail(ACL_ERROR_RT_INTERNAL_ERROR, #name " reached the vendor runtime");    \
    }

SERVED_BY_ACLVMM(aclrtMemGetAllocationGranularity,
                 (aclrtPhysicalMemProp* prop, aclrtMemGranularityOptions option, size_t* granularity))
SERVED_BY_ACLVMM(aclrtMallocPhysical, (aclrtDrvMemHandle* handle, size_t size,
                                       const aclrtPhysicalMemProp* prop, uint64_t flags))
SERVED_BY_ACLVMM(aclrtFreePhysical, (aclrtDrvMemHandle handle))
SERVED_BY_ACLVMM(aclrtReserveMemAddress, (void** virPtr, size_t size, size_t alignment,
                                          void* expectPtr, uint64_t flags))
SERVED_BY_ACLVMM(aclrtReleaseMemAddress, (void* virPtr))
SERVED_BY_ACLVMM(aclrtMapMem, (void* virPtr, size_t size, size_t offset,
                               aclrtDrvMemHandle handle, uint64_t flags))
SERVED_BY_ACLVMM(aclrtUnmapMem, (void* virPtr))
SERVED_BY_ACLVMM(aclrtMemSetAccess, (void* virPtr, size_t size, aclrtMemAccessDesc* desc,
                                     size_t count))
SERVED_BY_ACLVMM(aclrtMemcpy, (void* dst, size_t destMax, const void* src, size_t count,
                               aclrtMemcpyKind kind))
SERVED_BY_ACLVMM(aclrtMemset, (void* devPtr, size_t maxCount, int32_t value, size_t count))
SERVED_BY_ACLVMM(aclrtMalloc, (void** devPtr, size_t size, aclrtMemMallocPolicy policy))
SERVED_BY_ACLVMM(aclrtGetMemInfo, (aclrtMemAttr attr, size_t* free, size_t* total))
SERVED_BY_ACLVMM(aclrtMemRetainAllocationHandle, (void* virPtr, aclrtDrvMemHandle* handle))
SERVED_BY_ACLVMM(aclrtMemGetAllocationPropertiesFromHandle,
                 (aclrtDrvMemHandle handle, aclrtPhysicalMemProp* prop))
