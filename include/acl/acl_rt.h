/*
 * aclvmm - ACL runtime API: devices, contexts, streams, plain device memory,
 * virtual memory management (VMM), memory sharing between processes,
 * managed (unified) memory and version queries, plus the runtime calls that
 * clients use next to them: timed synchronisation, stream abort, IPC memory
 * by key, device id conversions, host memory registration, batch copies,
 * stream value write / wait, and kernel loading and launch.
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

/* Like ACL_DEPRECATED, with a text the compiler shows where the name is used. */
#ifndef ACL_DEPRECATED_MESSAGE
#if defined(__GNUC__)
#define ACL_DEPRECATED_MESSAGE(message) __attribute__((deprecated(message)))
#else
#define ACL_DEPRECATED_MESSAGE(message)
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

/* Export flags of the IPC-key memory sharing API (`flags` of aclrtIpcMemGetExportKey). */
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL /* any process may import the key */

/* `flags` of aclrtIpcMemImportByKey. */
#define ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS 0x1UL /* also enable peer access to the exporter's device */

/* `attr` values of aclrtIpcMemSetAttr with ACL_RT_IPC_MEM_ATTR_ACCESS_LINK. */
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_SIO 0
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS 1
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_ONE_PORT_PATH 2
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_MULTI_PORT_PATH 3

/* Memory type bits used by the memory-type check API. */
#define ACL_RT_MEM_TYPE_DEV 0x2U
#define ACL_RT_MEM_TYPE_DVPP 0x8U
#define ACL_RT_MEM_TYPE_RSVD 0x10U

/* Array sizes inside aclCANNPackageVersion. */
#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64

/* `flag` bits of aclrtHostRegisterV2. */
#define ACL_HOST_REG_MAPPED 0x2UL         /* map the range for the current device */
#define ACL_HOST_REG_IOMEMORY 0x4UL       /* reserved */
#define ACL_HOST_REG_READONLY 0x8UL       /* reserved */
#define ACL_HOST_REG_PINNED 0x10000000UL  /* keep the pages resident */

/* `flag` bits of aclrtCreateStreamWithConfig. */
#define ACL_STREAM_FAST_LAUNCH 0x00000001U
#define ACL_STREAM_FAST_SYNC 0x00000002U
#define ACL_STREAM_PERSISTENT 0x00000004U
#define ACL_STREAM_HUGE 0x00000008U
#define ACL_STREAM_CPU_SCHEDULE 0x00000010U
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020U

/* Conditions (`flag`) of aclrtValueWait on the 64-bit word at devAddr. */
#define ACL_STREAM_WAIT_VALUE_GEQ 0x00000000U /* (int64_t)(word - value) >= 0 */
#define ACL_STREAM_WAIT_VALUE_EQ 0x00000001U  /* word == value */
#define ACL_STREAM_WAIT_VALUE_AND 0x00000002U /* (word & value) != 0 */
#define ACL_STREAM_WAIT_VALUE_NOR 0x00000003U /* ~(word | value) != 0 */

/* Kernel binary magic numbers (ACL_RT_BINARY_LOAD_OPT_MAGIC; not accepted when loading from a file). */
#define ACL_RT_BINARY_MAGIC_ELF_AICORE 0x43554245U
#define ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE 0x41415246U
#define ACL_RT_BINARY_MAGIC_ELF_CUBE_CORE 0x41494343U

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

/* Opaque handle of a physical memory allocation (VMM). */
typedef void *aclrtDrvMemHandle;

/* Opaque handles of kernel loading and launch: a kernel binary, a loaded binary, a kernel in it,
   a kernel's parameter buffer and one parameter in that buffer. */
typedef void *aclrtBinary;
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;

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

/* Attribute set by aclrtIpcMemSetAttr (no tag). */
typedef enum {
    ACL_RT_IPC_MEM_ATTR_ACCESS_LINK = 0 /* value: ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_* */
} aclrtIpcMemAttrType;

/* Kind of registration made by aclrtHostRegister (no tag); IOMEMORY and READONLY are reserved. */
typedef enum {
    ACL_HOST_REGISTER_MAPPED = 0,
    ACL_HOST_REGISTER_IOMEMORY = 4,
    ACL_HOST_REGISTER_READONLY = 8
} aclrtHostRegisterType;

/* Option of aclrtBinaryLoadFromFile; LAZY_MAGIC is the older name of MAGIC. */
typedef enum aclrtBinaryLoadOptionType {
    ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD = 1,
    ACL_RT_BINARY_LOAD_OPT_LAZY_MAGIC = 2,
    ACL_RT_BINARY_LOAD_OPT_MAGIC = 2,
    ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE = 3
} aclrtBinaryLoadOptionType;

/* Attribute of aclrtLaunchKernelWithConfig; LOCAL_MEMORY_SIZE is the deprecated name of DYN_UBUF_SIZE. */
typedef enum aclrtLaunchKernelAttrId {
    ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE = 1,
    ACL_RT_LAUNCH_KERNEL_ATTR_LOCAL_MEMORY_SIZE ACL_DEPRECATED_MESSAGE(
        "ACL_RT_LAUNCH_KERNEL_ATTR_LOCAL_MEMORY_SIZE is deprecated, "
        "use ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE") = 2,
    ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE = 2,
    ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE = 3,
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET = 4,
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH = 5,
    ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP = 6,
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7,    /* seconds (uint16_t) */
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US = 8, /* microseconds (aclrtTimeoutUs) */
    ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING = 9
} aclrtLaunchKernelAttrId;

/* Core kind a launch attribute names (no tag). */
typedef enum {
    ACL_RT_ENGINE_TYPE_AIC = 0,
    ACL_RT_ENGINE_TYPE_AIV = 1
} aclrtEngineType;

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

/* Processes of one server allowed to import an IPC key (24 bytes; 4 padding bytes at 4; no tag). */
typedef struct {
    uint32_t sdid;
    int32_t *pid;
    size_t num;
} aclrtServerPid;

/* Locations of one group of aclrtMemcpyBatch entries; rsv must be zero (32 bytes; no tag). */
typedef struct {
    aclrtMemLocation dstLoc;
    aclrtMemLocation srcLoc;
    uint8_t rsv[16];
} aclrtMemcpyBatchAttr;

/* Value of a binary load option, read according to its type (16 bytes). */
typedef union aclrtBinaryLoadOptionValue {
    uint32_t isLazyLoad;
    uint32_t magic;
    int32_t cpuKernelMode;
    uint32_t rsv[4];
} aclrtBinaryLoadOptionValue;

/* One binary load option (20 bytes, 4-byte aligned: arrays have a 20-byte stride; no tag). */
typedef struct {
    aclrtBinaryLoadOptionType type;
    aclrtBinaryLoadOptionValue value;
} aclrtBinaryLoadOption;

/* The options of aclrtBinaryLoadFromFile: options[0..numOpt) (16 bytes). */
typedef struct aclrtBinaryLoadOptions {
    aclrtBinaryLoadOption *options;
    size_t numOpt;
} aclrtBinaryLoadOptions;

/* A 64-bit microsecond timeout split into two 32-bit halves (8 bytes, 4-byte aligned; no tag). */
typedef struct {
    uint32_t timeoutLow;
    uint32_t timeoutHigh;
} aclrtTimeoutUs;

/* Value of a launch attribute, read according to its id (16 bytes); localMemorySize is the
   deprecated name of dynUBufSize. */
typedef union aclrtLaunchKernelAttrValue {
    uint8_t schemMode;
    uint32_t localMemorySize ACL_DEPRECATED_MESSAGE("localMemorySize is deprecated, use dynUBufSize");
    uint32_t dynUBufSize;
    aclrtEngineType engineType;
    uint32_t blockDimOffset;
    uint8_t isBlockTaskPrefetch;
    uint8_t isDataDump;
    uint16_t timeout;
    aclrtTimeoutUs timeoutUs;
    uint8_t enableProfiling;
    uint32_t rsv[4];
} aclrtLaunchKernelAttrValue;

/* One launch attribute (20 bytes, 4-byte aligned: arrays have a 20-byte stride). */
typedef struct aclrtLaunchKernelAttr {
    aclrtLaunchKernelAttrId id;
    aclrtLaunchKernelAttrValue value;
} aclrtLaunchKernelAttr;

/* The launch configuration of aclrtLaunchKernelWithConfig: attrs[0..numAttrs) (16 bytes). */
typedef struct aclrtLaunchKernelCfg {
    aclrtLaunchKernelAttr *attrs;
    size_t numAttrs;
} aclrtLaunchKernelCfg;

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

/* Like aclrtSynchronizeDevice, for at most timeout ms in all (-1: no limit); on expiry returns
   ACL_ERROR_RT_STREAM_SYNC_TIMEOUT and the queued work keeps running. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);

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

/*
 * Device id conversions between the user id (aclrtSetDevice's numbering, an index into
 * ASCEND_RT_VISIBLE_DEVICES when set), the driver's logical id and the physical chip id (equal
 * to the logical id in aclvmm). None needs a context. As in the vendor stack, the two
 * "logic <-> phy" calls take / return user ids, like the "user <-> phy" pair.
 */

/* Converts the user device id userDevid to the driver's logical id. */
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t *const logicDevId);

/* Converts the driver's logical device id logicDevId to the user id. */
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t *const userDevid);

/* Converts the physical device id phyDevId; despite the name it returns the user id (as
   aclrtGetUserDevIdByPhyDevId does). */
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t *const logicDevId);

/* Converts to the physical device id; despite the name it takes a user id (as
   aclrtGetPhyDevIdByUserDevId does). */
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t *const phyDevId);

/* Converts the physical device id phyDevId to the user id. */
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t *const userDevId);

/* Converts the user device id userDevId to the physical id. */
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t *const phyDevId);

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

/* Creates a stream in the current context with ACL_STREAM_* flags (priority is reserved). aclvmm
   refuses PERSISTENT, CPU_SCHEDULE and DEVICE_USE_ONLY; the other flags behave like aclrtCreateStream. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);

/* Destroys a stream after the work already queued on it completes. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);

/* Destroys a stream at once, discarding work that has not run yet. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);

/* Waits until all work queued on stream has finished. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* Like aclrtSynchronizeStream, for at most timeout ms (-1: no limit); on expiry returns
   ACL_ERROR_RT_STREAM_SYNC_TIMEOUT and the queued work keeps running. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);

/* Discards every task of stream that has not started (in aclvmm a running one finishes); waiting
   synchronisations return ACL_ERROR_RT_STREAM_ABORT, and the stream is empty and usable again. */
ACL_FUNC_VISIBILITY aclError aclrtStreamAbort(aclrtStream stream);

/* Queues on stream a store of the 64-bit value at devAddr (device memory, 8-byte aligned); flag must be 0. */
ACL_FUNC_VISIBILITY aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);

/* Blocks stream (not the caller) until the 64-bit word at devAddr meets the ACL_STREAM_WAIT_VALUE_*
   condition flag against value; there is no timeout (aclrtStreamAbort discards the wait). */
ACL_FUNC_VISIBILITY aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);

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

/* Copies numBatches host<->device entries (sizes[i] bytes from srcs[i] to dsts[i]) whose locations
   attrs[k] gives from entry attrsIndexes[k] on; every entry is checked before anything is copied.
   When an entry's check or copy fails, *failIndex names it. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatch(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                              size_t numBatches, aclrtMemcpyBatchAttr *attrs,
                                              size_t *attrsIndexes, size_t numAttrs, size_t *failIndex);

/* Like aclrtMemcpyBatch, but queues the copies on stream in entry order. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatchAsync(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                                   size_t numBatches, aclrtMemcpyBatchAttr *attrs,
                                                   size_t *attrsIndexes, size_t numAttrs, size_t *failIndex,
                                                   aclrtStream stream);

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
/* Host memory registration                                                 */
/* ------------------------------------------------------------------------ */

/* Registers the page-aligned host range [ptr, ptr+size) for the current device's kernels and
   stores its device address in *devPtr (in aclvmm: ptr itself); only MAPPED is supported. */
ACL_FUNC_VISIBILITY aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type,
                                               void **devPtr);

/* Registers the host range [ptr, ptr+size) with ACL_HOST_REG_* flags: MAPPED makes it reachable
   from the current device, PINNED keeps its pages resident. */
ACL_FUNC_VISIBILITY aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag);

/* Stores in *pDevice the device address of pHost inside a MAPPED registration of the current
   device (in aclvmm: pHost); flag must be 0. */
ACL_FUNC_VISIBILITY aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag);

/* Removes the registration of the current device whose base address is ptr. */
ACL_FUNC_VISIBILITY aclError aclrtHostUnregister(void *ptr);

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
/* Sharing device memory between processes by IPC key                       */
/* ------------------------------------------------------------------------ */

/* Exports the device memory [devPtr, devPtr+size) under a new key, written to key (len >= 65 bytes:
   up to 64 characters and a NUL); flags are ACL_RT_IPC_MEM_EXPORT_FLAG_*. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len,
                                                     uint64_t flags);

/* Whitelists the num processes (bare tgids) in pid[] to import the caller's export under key. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);

/* Imports the memory exported under key onto the current device and stores its address in *devPtr;
   flags are ACL_RT_IPC_MEM_IMPORT_FLAG_*. Each import needs its own aclrtIpcMemClose. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);

/* Closes one import of key held by the caller; without one, destroys the caller's export under key. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemClose(const char *key);

/* Sets an attribute of the caller's export under key (ACL_RT_IPC_MEM_ATTR_ACCESS_LINK: the link,
   ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_*, importers use; stored only). A3 only. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemSetAttr(const char *key, aclrtIpcMemAttrType type, uint64_t attr);

/* Whitelists, for each of the num entries, the serverPids[i].num processes in serverPids[i].pid[] to
   import the caller's export under key (aclvmm is one server: sdid is not checked). A3 only. */
ACL_FUNC_VISIBILITY aclError aclrtIpcMemImportPidInterServer(const char *key, aclrtServerPid *serverPids,
                                                             size_t num);

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

/* ------------------------------------------------------------------------ */
/* Kernel loading and launch                                                */
/* ------------------------------------------------------------------------ */

/* Loads the kernel binary at binPath and returns a new handle; aclvmm reads the file without
   interpreting it, and the options are checked, then ignored. No context is needed. */
ACL_FUNC_VISIBILITY aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *options,
                                                     aclrtBinHandle *binHandle);

/* Returns the kernel kernelName of the binary, loading the binary on the current device. In aclvmm
   a kernel is a function registered under that name (aclvmmRegisterKernel or ACLVMM_KERNEL_LIBS). */
ACL_FUNC_VISIBILITY aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                                    aclrtFuncHandle *funcHandle);

/* Unloads a binary: its handle and its function handles become invalid; queued launches still run. */
ACL_FUNC_VISIBILITY aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle);

/* Empties the calling thread's parameter buffer (one per thread) and binds it to funcHandle. */
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle);

/* Copies paramSize bytes from param to the next 8-byte-aligned offset of the parameter buffer
   (at most 128 parameters and 64 KiB). */
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize,
                                                   aclrtParamHandle *paramHandle);

/* Marks the parameter buffer complete; a launch needs it, and appending fails afterwards. */
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle);

/* Queues the kernel on stream with numBlocks and a copy of the finalized parameter buffer; the cfg
   attributes are checked, then ignored; reserve must be NULL. */
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                                         aclrtStream stream, aclrtLaunchKernelCfg *cfg,
                                                         aclrtArgsHandle argsHandle, void *reserve);

#ifdef __cplusplus
}
#endif

#endif /* ACLVMM_INC_ACL_ACL_RT_H */
