/*
 * aclvmm - ACL runtime API: devices, contexts, streams, plain device memory,
 * virtual memory management (VMM), memory sharing between processes,
 * managed (unified) memory and version queries.
 *
 * All functions return ACL_SUCCESS (0) on success or an error code from
 * acl_base_rt.h / error_codes/rt_error_codes.h.
 */
#ifndef ACLVMM_INC_ACL_ACL_RT_H
#define ACLVMM_INC_ACL_ACL_RT_H

#include <stdint.h>
#include <stddef.h>

#include "acl_base.h"

#ifndef ACL_DEPRECATED
#if defined(__GNUC__)
#define ACL_DEPRECATED __attribute__((deprecated))
#else
#define ACL_DEPRECATED
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Macros                                                                   */
/* ------------------------------------------------------------------------ */

/* Only accepted `flag` of aclrtMemAllocManaged: memory visible to every device. */
#define ACL_RT_MEM_ATTACH_GLOBAL 0x01U

/* `linkIdx` values of aclrtMemMapSelectedLink. */
#define ACL_RT_MEM_LINK_IDX_0 0U /* SIO link */
#define ACL_RT_MEM_LINK_IDX_1 1U /* HCCS link */

/* `flags` of aclrtMemExportToShareableHandle / ...V2. */
#define ACL_RT_VMM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL /* importer pid need not be whitelisted */

/* Export flags of the IPC-key memory sharing API. */
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL

/* Memory type bits used by the memory-type check API. */
#define ACL_RT_MEM_TYPE_DEV 0x2U
#define ACL_RT_MEM_TYPE_DVPP 0x8U
#define ACL_RT_MEM_TYPE_RSVD 0x10U

/* Array sizes inside aclCANNPackageVersion. */
#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

/* Opaque handle of a physical memory allocation (VMM). */
typedef void *aclrtDrvMemHandle;

/* Placement / page-size policy of aclrtMalloc. */
typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

/* Direction of a memory copy. */
typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* Memory kind / page size selector (aclrtGetMemInfo, aclrtPhysicalMemProp). */
typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11,
    ACL_MEM_NORMAL = 12,
    ACL_MEM_HUGE = 13,
    ACL_MEM_HUGE1G = 14,
    ACL_MEM_P2P_NORMAL = 15,
    ACL_MEM_P2P_HUGE = 16,
    ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

/* Page size class of device memory (no typedef, unprefixed enumerators). */
enum aclrtMemPgType {
    NORMAL_PAGE_TYPE = 0,
    HUGE_PAGE_TYPE = 1,
    HUGE1G_PAGE_TYPE = 2
};

/* Physical memory class (no typedef, unprefixed enumerators). */
enum aclrtMemType {
    HBM_TYPE = 0,
    DDR_TYPE = 1,
    P2P_HBM_TYPE = 2,
    P2P_DDR_TYPE = 3
};

/* Where a piece of memory lives. */
typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,
    ACL_MEM_LOCATION_TYPE_DEVICE = 1,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2,
    ACL_MEM_LOCATION_TYPE_MANAGED = 3,
    ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4
} aclrtMemLocationType;

/* How physical memory is allocated. */
typedef enum aclrtMemAllocationType {
    ACL_MEM_ALLOCATION_TYPE_PINNED = 0
} aclrtMemAllocationType;

/* Kind of shareable handle a physical allocation can be exported to. */
typedef enum aclrtMemHandleType {
    ACL_MEM_HANDLE_TYPE_NONE = 0,
    ACL_MEM_HANDLE_TYPE_POSIX = 2
} aclrtMemHandleType;

/* Kind of shareable handle used by the ...V2 sharing calls. */
typedef enum aclrtMemSharedHandleType {
    ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT = 1,
    ACL_MEM_SHARE_HANDLE_TYPE_FABRIC = 2
} aclrtMemSharedHandleType;

/* Which granularity aclrtMemGetAllocationGranularity reports. */
typedef enum aclrtMemGranularityOptions {
    ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1,
    ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xFFFF
} aclrtMemGranularityOptions;

/* Access rights granted by aclrtMemSetAccess. */
typedef enum aclrtMemAccessFlags {
    ACL_RT_MEM_ACCESS_FLAGS_NONE = 0x0,
    ACL_RT_MEM_ACCESS_FLAGS_READ = 0x1,
    ACL_RT_MEM_ACCESS_FLAGS_READWRITE = 0x3
} aclrtMemAccessFlags;

/* Preferred interconnect for aclrtMemMapSetLink. */
typedef enum aclrtMemLinkType {
    ACL_RT_MEM_ACCESS_LINK_SIO = 0,
    ACL_RT_MEM_ACCESS_LINK_HCCS = 1,
    ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH = 2,
    ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH = 3
} aclrtMemLinkType;

/* Hints accepted by aclrtMemManagedAdvise. */
typedef enum aclrtMemManagedAdviseType {
    ACL_MEM_ADVISE_SET_READ_MOSTLY = 0,
    ACL_MEM_ADVISE_UNSET_READ_MOSTLY = 1,
    ACL_MEM_ADVISE_SET_PREFERRED_LOCATION = 2,
    ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 3,
    ACL_MEM_ADVISE_SET_ACCESSED_BY = 4,
    ACL_MEM_ADVISE_UNSET_ACCESSED_BY = 5
} aclrtMemManagedAdviseType;

/* Kind of location used with managed memory. */
typedef enum aclrtMemManagedLocationType {
    ACL_MEM_LOCATIONTYPE_INVALID = 0,
    ACL_MEM_LOCATIONTYPE_DEVICE = 1,
    ACL_MEM_LOCATIONTYPE_HOST = 2,
    ACL_MEM_LOCATIONTYPE_HOST_NUMA = 3,
    ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT = 4
} aclrtMemManagedLocationType;

/* Attribute queried by aclrtMemManagedGetAttr(s). */
typedef enum aclrtMemManagedRangeAttribute {
    ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION = 2,
    ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY = 3,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE = 4,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID = 5,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION = 6,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE = 7,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID = 8
} aclrtMemManagedRangeAttribute;

/* Installed package whose version aclsysGetCANNVersion reports. */
typedef enum aclCANNPackageName {
    ACL_PKG_NAME_CANN = 0,
    ACL_PKG_NAME_RUNTIME = 1,
    ACL_PKG_NAME_COMPILER = 2,
    ACL_PKG_NAME_HCCL = 3,
    ACL_PKG_NAME_TOOLKIT = 4,
    ACL_PKG_NAME_OPP = 5,
    ACL_PKG_NAME_OPP_KERNEL = 6,
    ACL_PKG_NAME_DRIVER = 7
} aclCANNPackageName;

/* Whether the application runs on the device or on a host. */
typedef enum aclrtRunMode {
    ACL_DEVICE = 0,
    ACL_HOST = 1
} aclrtRunMode;

/* A memory location: a device / NUMA id plus its kind (8 bytes). */
typedef struct aclrtMemLocation {
    uint32_t id;
    aclrtMemLocationType type;
} aclrtMemLocation;

/* Properties of a physical allocation (32 bytes; 4 padding bytes at 20). */
typedef struct aclrtPhysicalMemProp {
    aclrtMemHandleType handleType;
    aclrtMemAllocationType allocationType;
    aclrtMemAttr memAttr;
    aclrtMemLocation location;
    uint64_t reserve;
} aclrtPhysicalMemProp;

/* Result of aclrtPointerGetAttributes (28 bytes). */
typedef struct aclrtPtrAttributes {
    aclrtMemLocation location;
    uint32_t pageSize;
    uint32_t rsv[4];
} aclrtPtrAttributes;

/* One access grant of aclrtMemSetAccess (24 bytes). */
typedef struct aclrtMemAccessDesc {
    aclrtMemAccessFlags flags;
    aclrtMemLocation location;
    uint8_t rsv[12];
} aclrtMemAccessDesc;

/* A managed-memory location; note: type comes before id here (8 bytes). */
typedef struct aclrtMemManagedLocation {
    aclrtMemManagedLocationType type;
    int32_t id;
} aclrtMemManagedLocation;

/* Opaque fabric share handle (128 bytes). */
typedef struct aclrtMemFabricHandle {
    uint8_t data[128];
} aclrtMemFabricHandle;

/* Device UUID (16 bytes). */
typedef struct aclrtUuid {
    char bytes[16];
} aclrtUuid;

/* Version strings of an installed package (512 bytes). */
typedef struct aclCANNPackageVersion {
    char version[ACL_PKG_VERSION_MAX_SIZE];
    char majorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char minorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char releaseVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char patchVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char reserved[ACL_PKG_VERSION_MAX_SIZE];
} aclCANNPackageVersion;

/* ------------------------------------------------------------------------ */
/* Initialization, errors and versions                                      */
/* ------------------------------------------------------------------------ */

/* Initializes ACL for the process; configPath is an optional JSON config file (may be NULL). */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);

/* Tears down ACL for the process and releases everything it still holds. */
ACL_FUNC_VISIBILITY aclError aclFinalize();

/* Returns the text of the most recent error reported on the calling thread (NULL if none). */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg();

/* Reports the compile-time ACL API version (deprecated; use aclsysGetVersionStr/Num). */
ACL_DEPRECATED ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                                                            int32_t *patchVersion);

/* Copies the version string of the installed package pkgName into versionStr. */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionStr(char *pkgName, char *versionStr);

/* Stores the numeric version of the installed package pkgName in *versionNum. */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);

/* Fills *version with the version strings of package `name` (deprecated). */
ACL_DEPRECATED ACL_FUNC_VISIBILITY aclError aclsysGetCANNVersion(aclCANNPackageName name,
                                                                 aclCANNPackageVersion *version);

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

/* Makes deviceId the calling thread's current device, opening it (and its default context) if needed. */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);

/* Drops one reference to deviceId taken by aclrtSetDevice; resources are released at zero. */
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);

/* Releases deviceId and its resources immediately, regardless of outstanding references. */
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);

/* Stores the calling thread's current device id in *deviceId. */
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);

/* Stores the number of visible devices in *count. */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);

/* Waits until all work queued on the current device has finished. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);

/* Reports whether deviceId can directly access memory of peerDeviceId (*canAccessPeer = 1 / 0). */
ACL_FUNC_VISIBILITY aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId,
                                                      int32_t peerDeviceId);

/* Enables access from the current device to peerDeviceId's memory; flags must be 0. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);

/* Disables access from the current device to peerDeviceId's memory. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId);

/* Stores the host-side (bare) thread-group id of the calling process in *pid, as used for sharing whitelists. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetBareTgid(int32_t *pid);

/* Fills *uuid with the unique identifier of deviceId. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid *uuid);

/* Reports whether the application runs on the device or on a host. */
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

/* ------------------------------------------------------------------------ */
/* Contexts and streams                                                     */
/* ------------------------------------------------------------------------ */

/* Creates a new context on deviceId and makes it current for the calling thread. */
ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);

/* Destroys a context created by aclrtCreateContext. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);

/* Makes context the calling thread's current context (and its device current). */
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);

/* Stores the calling thread's current context in *context. */
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);

/* Creates a stream in the current context. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);

/* Destroys a stream after the work already queued on it completes. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);

/* Destroys a stream at once, discarding work that has not run yet. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);

/* Waits until all work queued on stream has finished. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* ------------------------------------------------------------------------ */
/* Plain device / host memory                                               */
/* ------------------------------------------------------------------------ */

/* Allocates size bytes of device memory on the current device following policy. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);

/*
 * Allocates device memory like aclrtMalloc, aligning size to 32 bytes without adding
 * padding. Exported as an interposable symbol: memory-saver tools replace it.
 */
ACL_FUNC_VISIBILITY aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy);

/* Allocates size bytes of page-locked host memory. */
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);

/* Frees device memory returned by aclrtMalloc / aclrtMallocAlign32 / aclrtMemAllocManaged. */
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);

/* Frees host memory returned by aclrtMallocHost. */
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);

/* Copies count bytes from src to dst (dst holds at most destMax bytes); synchronous. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);

/* Queues a copy of count bytes from src to dst on stream. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);

/* Sets count bytes at devPtr (capacity maxCount) to the byte value; synchronous. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);

/* Queues setting count bytes at devPtr (capacity maxCount) to the byte value on stream. */
ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream);

/* Reports free and total bytes of the memory kind attr on the current device. */
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);

/* Describes where ptr lives (host, device, managed, unregistered) and its page size. */
ACL_FUNC_VISIBILITY aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes);

/* Finds the allocation containing ptr and returns its base address and size. */
ACL_FUNC_VISIBILITY aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize);

/* Maps the device memory [devPtr, devPtr+size) into the address space of device dstDevId. */
ACL_FUNC_VISIBILITY aclError aclrtMemP2PMap(void *devPtr, size_t size, int32_t dstDevId, uint64_t flags);

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                */
/* ------------------------------------------------------------------------ */

/* Allocates size bytes of physical device memory described by prop and returns its handle. */
ACL_FUNC_VISIBILITY aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size,
                                                 const aclrtPhysicalMemProp *prop, uint64_t flags);

/* Releases a physical allocation (its backing is freed once no mapping uses it). */
ACL_FUNC_VISIBILITY aclError aclrtFreePhysical(aclrtDrvMemHandle handle);

/* Reserves a range of device virtual addresses (optionally near expectPtr) without backing. */
ACL_FUNC_VISIBILITY aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr,
                                                    uint64_t flags);

/* Like aclrtReserveMemAddress, but the range is only for mapping remote memory (no UC memory). */
ACL_FUNC_VISIBILITY aclError aclrtReserveMemAddressNoUCMemory(void **virPtr, size_t size, size_t alignment,
                                                              void *expectPtr, uint64_t flags);

/* Returns a reserved virtual address range (must be fully unmapped). */
ACL_FUNC_VISIBILITY aclError aclrtReleaseMemAddress(void *virPtr);

/* Maps size bytes of the physical allocation handle, starting at offset, at virPtr. */
ACL_FUNC_VISIBILITY aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                                         uint64_t flags);

/* Like aclrtMapMem but the mapping starts with no access rights. */
ACL_FUNC_VISIBILITY aclError aclrtMemMapNoAccess(void *virPtr, size_t size, size_t offset,
                                                 aclrtDrvMemHandle handle, uint64_t flags);

/* Removes the mapping that starts at virPtr. */
ACL_FUNC_VISIBILITY aclError aclrtUnmapMem(void *virPtr);

/* Reports the minimum or recommended size granularity for allocations described by prop. */
ACL_FUNC_VISIBILITY aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop,
                                                              aclrtMemGranularityOptions option,
                                                              size_t *granularity);

/* Grants the access rights in desc[0..count) on the mapped range [virPtr, virPtr+size). */
ACL_FUNC_VISIBILITY aclError aclrtMemSetAccess(void *virPtr, size_t size, aclrtMemAccessDesc *desc,
                                               size_t count);

/* Reports the access rights that location has on the mapping containing virPtr. */
ACL_FUNC_VISIBILITY aclError aclrtMemGetAccess(void *virPtr, aclrtMemLocation *location, uint64_t *flag);

/* Returns (with an extra reference) the physical handle mapped at virPtr. */
ACL_FUNC_VISIBILITY aclError aclrtMemRetainAllocationHandle(void *virPtr, aclrtDrvMemHandle *handle);

/* Fills *prop with the properties the physical allocation handle was created with. */
ACL_FUNC_VISIBILITY aclError aclrtMemGetAllocationPropertiesFromHandle(aclrtDrvMemHandle handle,
                                                                       aclrtPhysicalMemProp *prop);

/* Maps the memory at virPtrSrc to virPtrDst over the link selected by linkIdx (ACL_RT_MEM_LINK_IDX_*). */
ACL_FUNC_VISIBILITY aclError aclrtMemMapSelectedLink(void *virPtrDst, size_t size, void *virPtrSrc,
                                                     uint32_t linkIdx);

/* Sets the preferred interconnect used when the physical allocation handle is mapped. */
ACL_FUNC_VISIBILITY aclError aclrtMemMapSetLink(aclrtDrvMemHandle handle, aclrtMemLinkType adviceLink);

/* ------------------------------------------------------------------------ */
/* Sharing physical memory between processes                                */
/* ------------------------------------------------------------------------ */

/* Exports a physical allocation as a 64-bit shareable handle. */
ACL_FUNC_VISIBILITY aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle,
                                                             aclrtMemHandleType handleType, uint64_t flags,
                                                             uint64_t *shareableHandle);

/* Exports a physical allocation as a shareable handle of kind shareType (written to shareableHandle). */
ACL_FUNC_VISIBILITY aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags,
                                                               aclrtMemSharedHandleType shareType,
                                                               void *shareableHandle);

/* Whitelists the pidNum processes in pid[] to import shareableHandle. */
ACL_FUNC_VISIBILITY aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid,
                                                             size_t pidNum);

/* Whitelists the pidNum processes in pid[] to import the shareable handle of kind shareType. */
ACL_FUNC_VISIBILITY aclError aclrtMemSetPidToShareableHandleV2(void *shareableHandle,
                                                               aclrtMemSharedHandleType shareType, int32_t *pid,
                                                               size_t pidNum);

/* Imports a shareable handle on deviceId and returns a local physical handle for it. */
ACL_FUNC_VISIBILITY aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                                               aclrtDrvMemHandle *handle);

/* Imports a shareable handle of kind shareType and returns a local physical handle for it. */
ACL_FUNC_VISIBILITY aclError aclrtMemImportFromShareableHandleV2(void *shareableHandle,
                                                                 aclrtMemSharedHandleType shareType,
                                                                 uint64_t flags, aclrtDrvMemHandle *handle);

/* ------------------------------------------------------------------------ */
/* Managed (unified) memory                                                 */
/* ------------------------------------------------------------------------ */

/* Allocates size bytes of managed memory usable from host and devices; flag must be ACL_RT_MEM_ATTACH_GLOBAL. */
ACL_FUNC_VISIBILITY aclError aclrtMemAllocManaged(void **ptr, uint64_t size, uint32_t flag);

/* Gives a usage hint for the managed range [ptr, ptr+size) relative to location. */
ACL_FUNC_VISIBILITY aclError aclrtMemManagedAdvise(const void *const ptr, uint64_t size,
                                                   aclrtMemManagedAdviseType advise,
                                                   aclrtMemManagedLocation location);

/* Reads one attribute of the managed range [ptr, ptr+size) into data (dataSize bytes). */
ACL_FUNC_VISIBILITY aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void *ptr,
                                                    size_t size, void *data, size_t dataSize);

/* Reads numAttributes attributes of the managed range into data[i] (dataSizes[i] bytes each). */
ACL_FUNC_VISIBILITY aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute *attributes,
                                                     size_t numAttributes, const void *ptr, size_t size,
                                                     void **data, size_t *dataSizes);

/* Queues migration of the managed range [ptr, ptr+size) to location on stream. */
ACL_FUNC_VISIBILITY aclError aclrtMemManagedPrefetchAsync(const void *ptr, size_t size,
                                                          aclrtMemManagedLocation location, uint32_t flags,
                                                          aclrtStream stream);

/* Queues migration of count managed ranges; prefetchLocIdxs[i] says where range i's target list starts. */
ACL_FUNC_VISIBILITY aclError aclrtMemManagedPrefetchBatchAsync(const void **ptrs, size_t *sizes, size_t count,
                                                               aclrtMemManagedLocation *prefetchLocs,
                                                               size_t *prefetchLocIdxs, size_t numPrefetchLocs,
                                                               uint64_t flags, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLVMM_INC_ACL_ACL_RT_H */
